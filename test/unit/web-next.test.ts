/** Where sign-in sends you afterwards: only a path of this site (no open redirect). */
import { safeNext } from '../../src/api/web/routes';

it('keeps paths of this site and refuses anything that leaves it', () => {
  expect(safeNext('/?status=failed')).toBe('/?status=failed');
  expect(safeNext('/1/reports/3?token=abc')).toBe('/1/reports/3?token=abc');
  for (const away of [undefined, '', 'https://evil.example/', '//evil.example/', '/\\evil.example/', 'evil', '/\tx', 'javascript:alert(1)']) {
    expect(safeNext(away)).toBe('/');
  }
});

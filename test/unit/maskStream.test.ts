/**
 * Masking output that arrives in pieces (core/maskStream.ts): however a text is split, what is
 * let out shows no secret and no piece of one, and once the output ends it is all let out.
 */
import { MASK } from '../../src/core/mask';
import { MaskingStream } from '../../src/core/maskStream';

/** Everything let out when `pieces` arrive in turn and the output then ends. */
function stream(values: string[], pieces: string[], end: { cut?: boolean } = {}): { out: string[]; all: string } {
  const s = new MaskingStream(values);
  const out = pieces.map((p) => s.push(p));
  out.push(s.end(end));
  return { out, all: out.join('') };
}

describe('MaskingStream', () => {
  it('masks a secret split between two pieces, and lets out what cannot be one', () => {
    const { out, all } = stream(['hunter22'], ['password: hunt', 'er22 done\n']);
    expect(all).toBe(`password: ${MASK} done\n`);
    // The first piece lets out all but what may be the secret's start.
    expect(out[0]).toBe('password: ');
    expect(out.join('')).not.toMatch(/hunt|er22/);
  });

  it('shows no piece of a secret at any split, in every piece', () => {
    const secret = 's3cr3t-V4lue';
    const text = `a ${secret} b ${secret}${secret} c`;
    for (let i = 0; i <= text.length; i++) {
      for (const j of [i, Math.min(text.length, i + 3), Math.min(text.length, i + 11)]) {
        const { out, all } = stream([secret], [text.slice(0, i), text.slice(i, j), text.slice(j)]);
        // Two secrets side by side are one mask, or two when a piece ended between them.
        expect(all.split(`${MASK}${MASK}`).join(MASK)).toBe(`a ${MASK} b ${MASK} c`);
        // No 4 characters of the secret in a row in any piece let out.
        for (const piece of out) for (let at = 0; at + 4 <= secret.length; at++) expect(piece).not.toContain(secret.slice(at, at + 4));
      }
    }
  });

  it('masks a multi-line secret line by line across pieces', () => {
    const key = '-----BEGIN KEY-----\nAAAABBBBCCCC\n-----END KEY-----';
    const { all } = stream([key], ['line AAAABB', 'BBCCCC line\n']);
    expect(all).toBe(`line ${MASK} line\n`);
  });

  it('holds back only what may start a secret', () => {
    const s = new MaskingStream(['hunter22']);
    expect(s.push('a line\n')).toBe('a line\n');
    expect(s.push('we hunt')).toBe('we ');
    expect(s.push('ed\n')).toBe('hunted\n');
    expect(s.push('h')).toBe('');
    expect(s.end()).toBe('h');
  });

  it('lets everything out at once with no secret, and holds nothing', () => {
    const s = new MaskingStream(['abc']); // too short to be masked
    expect(s.push('abc def')).toBe('abc def');
    expect(s.end()).toBe('');
  });

  it('does not split a surrogate pair', () => {
    const { out } = stream(['secret99'], ['x😀y😀z😀']);
    for (const piece of out) expect(piece).not.toMatch(/[\ud800-\udbff]$/);
    expect(out.join('')).toBe('x😀y😀z😀');
  });

  it('at a cut end, masks the start of a secret it ends with', () => {
    expect(stream(['hunter22'], ['password: hunte'], { cut: true }).all).toBe(`password: ${MASK}`);
    expect(stream(['hunter22'], ['password: hunte']).all).toBe('password: hunte');
  });

  it('lets out output made of overlapping secrets after a while, with no piece of a secret showing', () => {
    const s = new MaskingStream(['abab']);
    let all = '';
    for (let i = 0; i < 40; i++) all += s.push('ab'.repeat(2048));
    all += s.push('ab end');
    all += s.end();
    expect(all.length).toBeLessThan(100);
    expect(all).not.toMatch(/ab/);
    expect(all.endsWith(' end')).toBe(true);
  });
});

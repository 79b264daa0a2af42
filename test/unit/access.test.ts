// Who may do what (src/core/access.ts), with no I/O: the rules every route's door applies.
import { decide, orgsWhere, strongest, type Principal, type Role } from '../../src/core/access';

const person = (roles: [number, Role][], extra: Partial<Principal> = {}): Principal => ({
  kind: 'user',
  name: 'Dev',
  userId: 7,
  email: 'dev@acme.example',
  installationAdmin: false,
  roles: new Map(roles),
  ...extra,
});

const ACME = 1;
const OTHER = 2;

it.each([
  // need, role in acme, write, allowed
  ['viewer', 'viewer', false, true],
  ['maintainer', 'viewer', true, false],
  ['maintainer', 'maintainer', true, true],
  ['admin', 'maintainer', true, false],
  ['admin', 'admin', true, true],
  ['installation', 'admin', true, false],
] as const)('needs %s, is %s (write %s): %s', (need, role, write, allowed) => {
  expect(decide(person([[ACME, role]]), need, ACME, write, 'organization acme').allowed).toBe(allowed);
});

it('says why it refuses, and asks who is there first', () => {
  expect(decide(null, 'viewer', ACME, false)).toEqual({ allowed: false, status: 401, reason: 'sign in first' });
  expect(decide(null, 'public', null, true)).toEqual({ allowed: true });
  // Outside the organization: told no more than for one that does not exist.
  expect(decide(person([[OTHER, 'admin']]), 'viewer', ACME, false, 'organization acme')).toMatchObject({ allowed: false, status: 404 });
  expect(decide(person([[ACME, 'viewer']]), 'admin', ACME, true, 'organization acme')).toEqual({
    allowed: false,
    status: 403,
    reason: 'this needs the admin role in organization acme; yours is viewer',
  });
});

it('lets an installation administrator do anything, within a token’s scope', () => {
  const root = person([], { installationAdmin: true });
  expect(decide(root, 'installation', null, true).allowed).toBe(true);
  expect(decide(root, 'admin', ACME, true).allowed).toBe(true);
  const scoped = { ...root, token: { id: 1, readOnly: false, orgId: OTHER, expiresAt: null } };
  expect(decide(scoped, 'installation', null, false).allowed).toBe(false);
  expect(decide(scoped, 'viewer', ACME, false).allowed).toBe(false);
  expect(decide(scoped, 'admin', OTHER, true).allowed).toBe(true);
  const readOnly = { ...root, token: { id: 2, readOnly: true, orgId: null, expiresAt: null } };
  expect(decide(readOnly, 'viewer', ACME, false).allowed).toBe(true);
  expect(decide(readOnly, 'viewer', ACME, true)).toMatchObject({ allowed: false, status: 403, reason: 'this token is read-only' });
});

it('lists the organizations a person may see or administer', () => {
  const dev = person([
    [ACME, 'admin'],
    [OTHER, 'viewer'],
  ]);
  expect(orgsWhere(dev, 'viewer')).toEqual([ACME, OTHER]);
  expect(orgsWhere(dev, 'admin')).toEqual([ACME]);
  expect(orgsWhere(person([], { installationAdmin: true }), 'admin')).toBeNull();
  expect(orgsWhere({ ...dev, token: { id: 1, readOnly: true, orgId: OTHER, expiresAt: null } }, 'viewer')).toEqual([OTHER]);
  expect(orgsWhere({ ...dev, token: { id: 1, readOnly: true, orgId: OTHER, expiresAt: null } }, 'admin')).toEqual([]);
  expect(strongest(['viewer', 'admin', 'maintainer'])).toBe('admin');
});

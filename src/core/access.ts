/**
 * Who may do what (issue 25), with no I/O: a request's principal (who it acts as), what its
 * route needs (api/access/rules.ts) and the organization the route's resource belongs to give
 * allowed, or refused with the status and the reason to show.
 */

/** An organization member's role, least to most. */
export const ROLES = ['viewer', 'maintainer', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/**
 * What a route needs: nothing (`public`: triggers, health, a report with its token), anyone
 * signed in (lists, filtered to what they may see), a role in the resource's organization, or
 * an installation administrator (organizations, runners, people).
 */
export type Need = 'public' | 'signed-in' | Role | 'installation';

/** A personal API token's limits: it acts as its owner, and no more than this. */
export interface TokenScope {
  id: number;
  /** GET (and HEAD) only. */
  readOnly: boolean;
  /** That organization only; null: wherever its owner may. */
  orgId: number | null;
  /** When it stops working; a token made with it lives no longer. */
  expiresAt: Date | null;
}

/** Who a request acts as. */
export interface Principal {
  /** `admin-token`: the installation's shared token (bootstrap and automation); `user`: a person. */
  kind: 'admin-token' | 'user';
  /** How they are named in the audit trail and as `stopped_by`. */
  name: string;
  userId: number | null;
  email: string | null;
  installationAdmin: boolean;
  /** Their role in each organization they are a member of, by organization id. */
  roles: ReadonlyMap<number, Role>;
  /** Set when they came with a personal API token. */
  token?: TokenScope;
}

/** How the audit trail and invitations name a principal: `Name <address>`, or the admin token (with the name typed at its sign-in). */
export function nameOf(p: Principal): string {
  if (p.email) return `${p.name} <${p.email}>`;
  return p.name === 'admin token' ? p.name : `${p.name} (admin token)`;
}

/** A person as spec §2's `stopped_by` names them: their address; the name typed at an admin-token sign-in; undefined for the bare admin token. */
export const stoppedBy = (p: Principal): string | undefined => p.email ?? (p.kind === 'admin-token' && p.name !== 'admin token' ? p.name : undefined);

/**
 * Refused: 401 (who are you?), 403 with the reason (a member whose role is not enough, a token
 * narrower than the route), or 404 for someone outside the organization, who learns no more
 * about it than about one that does not exist.
 */
export type Decision = { allowed: true } | { allowed: false; status: 401 | 403 | 404; reason: string };

const rank = (role: Role): number => ROLES.indexOf(role);

/** Whether `role` is at least `need`. */
export const atLeast = (role: Role, need: Role): boolean => rank(role) >= rank(need);

/**
 * Whether `principal` may use a route that needs `need`, on a resource of organization `orgId`
 * (null: the route names none), writing (`write`: anything but GET and HEAD) or not.
 */
export function decide(principal: Principal | null, need: Need, orgId: number | null, write: boolean, orgName = 'this organization'): Decision {
  if (need === 'public') return { allowed: true };
  if (!principal) return { allowed: false, status: 401, reason: 'sign in first' };
  const token = principal.token;
  if (token?.readOnly && write) return { allowed: false, status: 403, reason: 'this token is read-only' };
  if (token && token.orgId !== null) {
    if (need === 'installation') return { allowed: false, status: 403, reason: 'this token is limited to one organization; this needs an installation administrator’s' };
    if (orgId !== null && orgId !== token.orgId) return { allowed: false, status: 403, reason: 'this token is limited to another organization' };
  }
  if (need === 'signed-in' || principal.installationAdmin) return { allowed: true };
  if (need === 'installation') return { allowed: false, status: 403, reason: 'only an installation administrator may do this' };
  const role = orgId === null ? undefined : principal.roles.get(orgId);
  if (!role) return { allowed: false, status: 404, reason: `not a member of ${orgName}` };
  if (!atLeast(role, need)) return { allowed: false, status: 403, reason: `this needs the ${need} role in ${orgName}; yours is ${role}` };
  return { allowed: true };
}

/** The organizations where `principal` has at least `need`: all (null) or these. */
export function orgsWhere(principal: Principal, need: Role): number[] | null {
  const scoped = principal.token?.orgId ?? null;
  if (scoped !== null) return decide(principal, need, scoped, false).allowed ? [scoped] : [];
  if (principal.installationAdmin) return null;
  return [...principal.roles].filter(([, role]) => atLeast(role, need)).map(([org]) => org);
}

/** The organizations a list shows `principal`: all (null) or these. */
export const visibleOrgs = (principal: Principal): number[] | null => orgsWhere(principal, 'viewer');

/** The strongest of some roles (rules and an invitation may both make someone a member). */
export function strongest(roles: readonly Role[]): Role | undefined {
  return roles.reduce<Role | undefined>((best, r) => (best === undefined || rank(r) > rank(best) ? r : best), undefined);
}

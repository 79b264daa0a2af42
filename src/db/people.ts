/**
 * SQL of people (migration 028): users, who they are at each identity provider, their
 * memberships, invitations and the provider claims that make members.
 */
import type { Role } from '../core/access';
import type { Db } from './transaction';

export interface UserRow {
  id: number;
  name: string;
  email: string;
  email_verified: boolean;
  installation_admin: boolean;
  created_at: Date;
  last_sign_in_at: Date | null;
}

export interface MembershipRow {
  org_id: number;
  org_name: string;
  user_id: number;
  user_name: string;
  email: string;
  role: Role;
  source: 'invitation' | 'rule';
  created_at: Date;
}

export interface InvitationRow {
  id: number;
  org_id: number;
  email: string;
  role: Role;
  invited_by: string;
  created_at: Date;
}

export interface MembershipRuleRow {
  id: number;
  org_id: number;
  provider: string;
  claim: 'group' | 'domain';
  value: string;
  role: Role;
  created_at: Date;
}

const USER = 'u.id::int AS id, u.name, u.email, u.email_verified, u.installation_admin, u.created_at, u.last_sign_in_at';

export async function findUser(db: Db, id: number): Promise<UserRow | undefined> {
  const { rows } = await db.query<UserRow>(`SELECT ${USER} FROM users u WHERE u.id = $1`, [id]);
  return rows[0];
}

export async function listUsers(db: Db): Promise<UserRow[]> {
  const { rows } = await db.query<UserRow>(`SELECT ${USER} FROM users u ORDER BY u.id`);
  return rows;
}

/** The user a provider's subject is, if they signed in before. */
export async function userByIdentity(db: Db, provider: string, subject: string): Promise<UserRow | undefined> {
  const { rows } = await db.query<UserRow>(
    `SELECT ${USER} FROM user_identities i JOIN users u ON u.id = i.user_id WHERE i.provider = $1 AND i.subject = $2`,
    [provider, subject],
  );
  return rows[0];
}

/** The person whose verified address this is (an unverified one is nobody's). */
export async function userByVerifiedEmail(db: Db, email: string): Promise<UserRow | undefined> {
  const { rows } = await db.query<UserRow>(`SELECT ${USER} FROM users u WHERE u.email_verified AND lower(u.email) = lower($1)`, [email]);
  return rows[0];
}

/**
 * Whether nobody has signed in yet: the next person becomes the first installation
 * administrator. The table is locked until the transaction ends, so two first sign-ins at once
 * cannot both be first.
 */
export async function noUsersYet(db: Db): Promise<boolean> {
  await db.query('LOCK TABLE users IN SHARE ROW EXCLUSIVE MODE');
  const { rows } = await db.query<{ none: boolean }>('SELECT NOT EXISTS (SELECT 1 FROM users) AS none');
  return rows[0]!.none;
}

export async function insertUser(db: Db, u: { name: string; email: string; emailVerified: boolean; installationAdmin: boolean }): Promise<UserRow> {
  const { rows } = await db.query<UserRow>(
    `INSERT INTO users AS u (name, email, email_verified, installation_admin, last_sign_in_at) VALUES ($1, $2, $3, $4, now()) RETURNING ${USER}`,
    [u.name, u.email, u.emailVerified, u.installationAdmin],
  );
  return rows[0]!;
}

export async function linkIdentity(db: Db, provider: string, subject: string, userId: number): Promise<void> {
  await db.query('INSERT INTO user_identities (provider, subject, user_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [provider, subject, userId]);
}

/** A sign-in: the name and address the provider gives now replace the old ones. */
export async function touchUser(db: Db, id: number, u: { name: string; email: string; emailVerified: boolean }): Promise<UserRow> {
  const { rows } = await db.query<UserRow>(
    `UPDATE users u SET name = $2, email = $3, email_verified = $4, last_sign_in_at = now() WHERE u.id = $1 RETURNING ${USER}`,
    [id, u.name, u.email, u.emailVerified],
  );
  return rows[0]!;
}

/**
 * Makes someone an installation administrator or not; `last` when that would leave none (the
 * next stranger to sign in would become one), undefined when there is no such user.
 */
export async function setInstallationAdmin(db: Db, id: number, admin: boolean): Promise<UserRow | 'last' | undefined> {
  const { rows } = await db.query<UserRow>(
    `UPDATE users u SET installation_admin = $2 WHERE u.id = $1
        AND ($2 OR EXISTS (SELECT 1 FROM users o WHERE o.installation_admin AND o.id <> $1)) RETURNING ${USER}`,
    [id, admin],
  );
  if (rows[0]) return rows[0];
  return (await findUser(db, id)) ? 'last' : undefined;
}

/**
 * Removes a person: their memberships, tokens and signed-in browsers go with them (foreign
 * keys). `last` for the last installation administrator, who stays.
 */
export async function deleteUser(db: Db, id: number): Promise<boolean | 'last'> {
  const { rowCount } = await db.query(
    `DELETE FROM users u WHERE u.id = $1 AND (NOT u.installation_admin OR EXISTS (SELECT 1 FROM users o WHERE o.installation_admin AND o.id <> $1))`,
    [id],
  );
  if ((rowCount ?? 0) > 0) return true;
  return (await findUser(db, id)) ? 'last' : false;
}

/** A user's role in each organization they are a member of. */
export async function rolesOf(db: Db, userId: number): Promise<Map<number, Role>> {
  const { rows } = await db.query<{ org_id: number; role: Role }>('SELECT org_id::int AS org_id, role FROM memberships WHERE user_id = $1', [userId]);
  return new Map(rows.map((r) => [r.org_id, r.role]));
}

const MEMBER = `m.org_id::int AS org_id, o.name AS org_name, m.user_id::int AS user_id, u.name AS user_name, u.email, m.role, m.source, m.created_at`;

export async function listMembers(db: Db, orgId: number): Promise<MembershipRow[]> {
  const { rows } = await db.query<MembershipRow>(
    `SELECT ${MEMBER} FROM memberships m JOIN users u ON u.id = m.user_id JOIN orgs o ON o.id = m.org_id WHERE m.org_id = $1 ORDER BY lower(u.name), u.id`,
    [orgId],
  );
  return rows;
}

export async function findMember(db: Db, orgId: number, userId: number): Promise<MembershipRow | undefined> {
  const { rows } = await db.query<MembershipRow>(
    `SELECT ${MEMBER} FROM memberships m JOIN users u ON u.id = m.user_id JOIN orgs o ON o.id = m.org_id WHERE m.org_id = $1 AND m.user_id = $2`,
    [orgId, userId],
  );
  return rows[0];
}

/**
 * Makes someone a member, or changes their role: `invitation` is an admin's choice, a provider
 * id is that provider's rule. An admin's choice outlasts a rule's.
 */
export async function setMember(db: Db, orgId: number, userId: number, role: Role, by: 'invitation' | { ruleOf: string }): Promise<void> {
  const rule = by === 'invitation' ? null : by.ruleOf;
  await db.query(
    `INSERT INTO memberships (org_id, user_id, role, source, rule_provider) VALUES ($1, $2, $3, CASE WHEN $4::text IS NULL THEN 'invitation' ELSE 'rule' END, $4)
     ON CONFLICT (org_id, user_id) DO UPDATE SET role = EXCLUDED.role, source = EXCLUDED.source, rule_provider = EXCLUDED.rule_provider
      WHERE memberships.source = 'rule' OR EXCLUDED.source = 'invitation'`,
    [orgId, userId, role, rule],
  );
}

export async function removeMember(db: Db, orgId: number, userId: number): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM memberships WHERE org_id = $1 AND user_id = $2', [orgId, userId]);
  return (rowCount ?? 0) > 0;
}

/** A provider's rule-made memberships of a user in organizations its rules no longer give them (another provider's stay). */
export async function dropRuleMemberships(db: Db, userId: number, provider: string, keepOrgIds: number[]): Promise<void> {
  await db.query(`DELETE FROM memberships WHERE user_id = $1 AND source = 'rule' AND rule_provider = $2 AND NOT (org_id = ANY($3::bigint[]))`, [
    userId,
    provider,
    keepOrgIds,
  ]);
}

const INVITATION = 'id::int AS id, org_id::int AS org_id, email, role, invited_by, created_at';

export async function insertInvitation(db: Db, i: { orgId: number; email: string; role: Role; invitedBy: string }): Promise<InvitationRow> {
  const { rows } = await db.query<InvitationRow>(
    `INSERT INTO invitations (org_id, email, role, invited_by) VALUES ($1, $2, $3, $4)
     ON CONFLICT (org_id, lower(email)) DO UPDATE SET role = EXCLUDED.role, invited_by = EXCLUDED.invited_by
     RETURNING ${INVITATION}`,
    [i.orgId, i.email, i.role, i.invitedBy],
  );
  return rows[0]!;
}

export async function listInvitations(db: Db, orgId: number): Promise<InvitationRow[]> {
  const { rows } = await db.query<InvitationRow>(`SELECT ${INVITATION} FROM invitations WHERE org_id = $1 ORDER BY id`, [orgId]);
  return rows;
}

export async function deleteInvitation(db: Db, orgId: number, id: number): Promise<InvitationRow | undefined> {
  const { rows } = await db.query<InvitationRow>(`DELETE FROM invitations WHERE org_id = $1 AND id = $2 RETURNING ${INVITATION}`, [orgId, id]);
  return rows[0];
}

/** The invitations of a verified address, taken: each becomes a membership once. */
export async function takeInvitations(db: Db, email: string): Promise<InvitationRow[]> {
  const { rows } = await db.query<InvitationRow>(`DELETE FROM invitations WHERE lower(email) = lower($1) RETURNING ${INVITATION}`, [email]);
  return rows;
}

const RULE = 'id::int AS id, org_id::int AS org_id, provider, claim, value, role, created_at';

export async function insertMembershipRule(db: Db, r: { orgId: number; provider: string; claim: 'group' | 'domain'; value: string; role: Role }): Promise<MembershipRuleRow> {
  const { rows } = await db.query<MembershipRuleRow>(
    `INSERT INTO membership_rules (org_id, provider, claim, value, role) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (org_id, provider, claim, value) DO UPDATE SET role = EXCLUDED.role RETURNING ${RULE}`,
    [r.orgId, r.provider, r.claim, r.value, r.role],
  );
  return rows[0]!;
}

export async function listMembershipRules(db: Db, orgId: number | null): Promise<MembershipRuleRow[]> {
  const { rows } = await db.query<MembershipRuleRow>(
    `SELECT ${RULE} FROM membership_rules WHERE $1::bigint IS NULL OR org_id = $1 ORDER BY id`,
    [orgId],
  );
  return rows;
}

export async function deleteMembershipRule(db: Db, orgId: number, id: number): Promise<MembershipRuleRow | undefined> {
  const { rows } = await db.query<MembershipRuleRow>(`DELETE FROM membership_rules WHERE org_id = $1 AND id = $2 RETURNING ${RULE}`, [orgId, id]);
  return rows[0];
}

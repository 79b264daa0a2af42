/**
 * People (issue 25), as the JSON API and the web pages both decide about them: the
 * installation's users (who is an installation administrator, removing someone), an
 * organization's members and their roles, its invitations by e-mail address and the provider
 * claims that make members. The last installation administrator always stays: without one, the
 * next stranger to sign in would become one. (Who may do each is the door's, api/access/rules.ts.)
 */
import { z } from 'zod';
import { decide, nameOf, ROLES, type Principal } from '../core/access';
import {
  deleteInvitation,
  deleteMembershipRule,
  deleteUser,
  findMember,
  findUser,
  insertInvitation,
  insertMembershipRule,
  listInvitations,
  listMembers,
  listMembershipRules,
  listUsers,
  removeMember,
  setInstallationAdmin,
  setMember,
  userByVerifiedEmail,
  type InvitationRow,
  type MembershipRow,
  type MembershipRuleRow,
  type UserRow,
} from '../db/people';
import type { Db } from '../db/transaction';
import { AppError, conflict, notFound, parseId, validate } from './errors';

export const Role = z.enum(ROLES);

export const SetMember = z.strictObject({ role: Role }).meta({ examples: [{ role: 'maintainer' }] });
export const Invite = z.strictObject({ email: z.email().max(254), role: Role }).meta({ examples: [{ email: 'dev@acme.example', role: 'viewer' }] });
export const CreateRule = z
  .strictObject({
    provider: z.string().regex(/^[a-z0-9][a-z0-9-]{0,39}$/, 'a provider id of SLUICE_SIGN_IN_PROVIDERS'),
    claim: z.enum(['group', 'domain']),
    value: z.string().trim().min(1).max(200),
    role: Role,
  })
  .meta({ examples: [{ provider: 'keycloak', claim: 'group', value: 'ci-maintainers', role: 'maintainer' }] });
export const UpdateUser = z.strictObject({ installation_admin: z.boolean() }).meta({ examples: [{ installation_admin: true }] });

/** Only people own tokens and memberships: the admin token is nobody. */
export function requirePerson(p: Principal): number {
  if (p.userId === null) throw new AppError('forbidden', 'the admin token is nobody: sign in as a person (or use a person’s API token) for this');
  return p.userId;
}

/** The last installation administrator stays: without one, the next stranger to sign in would become one. */
const lastAdmin = () => conflict('user', 'this is the last installation administrator: make someone else one first');

/** Everyone who has signed in. */
export const listPeople = (db: Db): Promise<UserRow[]> => listUsers(db);

/** Makes someone an installation administrator, or not (`PATCH /users/:user`). */
export async function updatePerson(db: Db, userRef: string, input: unknown): Promise<UserRow> {
  const body = validate(UpdateUser, input);
  const user = await setInstallationAdmin(db, parseId(userRef, 'user'), body.installation_admin);
  if (user === 'last') throw lastAdmin();
  if (!user) throw notFound('user');
  return user;
}

/** Removes a person: their memberships, API tokens and signed-in browsers end at once. */
export async function removePerson(db: Db, userId: number): Promise<void> {
  const deleted = await deleteUser(db, userId);
  if (deleted === 'last') throw lastAdmin();
  if (!deleted) throw notFound('user');
}

/** An organization's members and their roles. */
export const membersOf = (db: Db, orgId: number): Promise<MembershipRow[]> => listMembers(db, orgId);

/** Invitations not yet taken. */
export const invitationsOf = (db: Db, orgId: number): Promise<InvitationRow[]> => listInvitations(db, orgId);

/** The provider claims that make members. */
export const membershipRulesOf = (db: Db, orgId: number): Promise<MembershipRuleRow[]> => listMembershipRules(db, orgId);

/**
 * An organization's people as `principal` may see them: the members for anyone who may see the
 * organization; its invitations and membership rules only for its admins, who change them.
 */
export async function orgPeople(
  db: Db,
  principal: Principal,
  orgId: number,
): Promise<{ isAdmin: boolean; members: MembershipRow[]; invitations: InvitationRow[]; rules: MembershipRuleRow[] }> {
  const isAdmin = decide(principal, 'admin', orgId, true).allowed;
  const [members, invitations, rules] = await Promise.all([membersOf(db, orgId), isAdmin ? invitationsOf(db, orgId) : [], isAdmin ? membershipRulesOf(db, orgId) : []]);
  return { isAdmin, members, invitations, rules };
}

/** Makes someone a member or changes their role (`PUT /orgs/:org/members/:user`). */
export async function setMemberRole(db: Db, orgId: number, userRef: string, input: unknown): Promise<MembershipRow> {
  const { role } = validate(SetMember, input);
  const user = await findUser(db, parseId(userRef, 'user'));
  if (!user) throw notFound('user');
  await setMember(db, orgId, user.id, role, 'invitation');
  return (await findMember(db, orgId, user.id))!;
}

/**
 * Invites an address (`POST /orgs/:org/invitations`): who signs in with it (verified) becomes a
 * member. A person already known by it (verified) is made a member at once.
 */
export async function invite(db: Db, orgId: number, input: unknown, by: Principal): Promise<{ member: MembershipRow } | { invitation: InvitationRow }> {
  const body = validate(Invite, input);
  // Only a verified address is someone's: an unverified one could be anybody's claim.
  const known = await userByVerifiedEmail(db, body.email);
  if (known) {
    await setMember(db, orgId, known.id, body.role, 'invitation');
    return { member: (await findMember(db, orgId, known.id))! };
  }
  return { invitation: await insertInvitation(db, { orgId, email: body.email, role: body.role, invitedBy: nameOf(by) }) };
}

export async function addMembershipRule(db: Db, orgId: number, input: unknown): Promise<MembershipRuleRow> {
  const body = validate(CreateRule, input);
  return insertMembershipRule(db, { orgId, ...body });
}

/** Removes a member (`DELETE /orgs/:org/members/:user`): not found when they are none. */
export async function removeMemberOf(db: Db, orgId: number, userId: number): Promise<void> {
  if (!(await removeMember(db, orgId, userId))) throw notFound('member');
}

/** Takes an invitation back: not found when there is none. */
export async function takeBackInvitation(db: Db, orgId: number, id: number): Promise<void> {
  if (!(await deleteInvitation(db, orgId, id))) throw notFound('invitation');
}

export async function removeMembershipRule(db: Db, orgId: number, id: number): Promise<void> {
  if (!(await deleteMembershipRule(db, orgId, id))) throw notFound('membership rule');
}

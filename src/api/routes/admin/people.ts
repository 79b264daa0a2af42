/**
 * People (issue 25): `GET /api/v1/me` (who this token is, and their roles); the installation's
 * users (`GET /users`, `PATCH /users/:user {installation_admin}`, `DELETE /users/:user`, which
 * ends their sessions and tokens at once); an organization's members (`GET /orgs/:org/members`,
 * `PUT /orgs/:org/members/:user {role}`, `DELETE`), its invitations by e-mail address and the
 * provider claims that make members (`/orgs/:org/invitations`, `/orgs/:org/membership-rules`).
 * What each decides is the application's (app/people.ts): here only HTTP, and the answers' shapes.
 */
import { parseId } from '../../../app/errors';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Principal } from '../../../core/access';
import type { InvitationRow, MembershipRow, MembershipRuleRow, UserRow } from '../../../db/people';
import {
  addMembershipRule,
  CreateRule,
  invitationsOf,
  invite,
  Invite,
  listPeople,
  membersOf,
  membershipRulesOf,
  removeMemberOf,
  removeMembershipRule,
  removePerson,
  Role,
  SetMember,
  setMemberRole,
  takeBackInvitation,
  UpdateUser,
  updatePerson,
} from '../../../app/people';
import type { ApiDeps } from '../../deps';
import { documented, errors, IdParams, NoBody, OrgParams } from '../../openapi/shapes';

const UserParams = z.object({ user: z.string().regex(/^[1-9][0-9]*$/).describe('the user’s id') });

export const User = z.object({ id: z.number().int(), name: z.string(), email: z.string(), email_verified: z.boolean(), installation_admin: z.boolean(), created_at: z.date(), last_sign_in_at: z.date().nullable() });
const Member = z.object({ user: z.number().int(), name: z.string(), email: z.string(), role: Role, source: z.enum(['invitation', 'rule']), since: z.date() });
const Invitation = z.object({ id: z.number().int(), email: z.string(), role: Role, invited_by: z.string(), created_at: z.date() });
const MembershipRule = z.object({ id: z.number().int(), provider: z.string(), claim: z.enum(['group', 'domain']), value: z.string(), role: Role, created_at: z.date() });
const Me = z.object({
  kind: z.enum(['admin-token', 'user']),
  name: z.string(),
  email: z.string().nullable(),
  installation_admin: z.boolean(),
  roles: z.array(z.object({ org: z.number().int(), role: Role })),
  token: z.object({ id: z.number().int(), read_only: z.boolean(), org: z.number().int().nullable() }).nullable(),
});

export const userView = (u: UserRow): z.output<typeof User> => ({ ...u });
const memberView = (m: MembershipRow): z.output<typeof Member> => ({ user: m.user_id, name: m.user_name, email: m.email, role: m.role, source: m.source, since: m.created_at });
const invitationView = (i: InvitationRow): z.output<typeof Invitation> => ({ id: i.id, email: i.email, role: i.role, invited_by: i.invited_by, created_at: i.created_at });
const ruleView = (r: MembershipRuleRow): z.output<typeof MembershipRule> => ({ id: r.id, provider: r.provider, claim: r.claim, value: r.value, role: r.role, created_at: r.created_at });

export const meView = (p: Principal): z.output<typeof Me> => ({
  kind: p.kind,
  name: p.name,
  email: p.email,
  installation_admin: p.installationAdmin,
  roles: [...p.roles].map(([org, role]) => ({ org, role })),
  token: p.token ? { id: p.token.id, read_only: p.token.readOnly, org: p.token.orgId } : null,
});

export function registerPeopleRoutes(app: FastifyInstance, { pool }: ApiDeps): void {
  app.get('/me', documented({ tag: 'people', summary: 'Who this credential is, and their roles', response: { 200: Me } }), async (request) => meView(request.principal!));

  app.get('/users', documented({ tag: 'people', summary: 'List people who have signed in', response: { 200: z.array(User) } }), async () => (await listPeople(pool)).map(userView));

  app.patch<{ Params: { user: string } }>('/users/:user', documented({ tag: 'people', summary: 'Make someone an installation administrator, or not', params: UserParams, body: UpdateUser, response: { 200: User, ...errors(400, 404, 409) } }), async (request) => userView(await updatePerson(pool, request.params.user, request.body ?? {})));

  app.delete<{ Params: { user: string } }>('/users/:user', documented({ tag: 'people', summary: 'Remove a person', description: 'Their memberships, API tokens and signed-in browsers end at once.', params: UserParams, response: { 204: NoBody, ...errors(404, 409) } }), async (request, reply) => {
    await removePerson(pool, parseId(request.params.user, 'user'));
    return reply.code(204).send();
  });

  app.get<{ Params: { org: string } }>('/orgs/:org/members', documented({ tag: 'people', summary: 'An organization’s members and their roles', params: OrgParams, response: { 200: z.array(Member), ...errors(404) } }), async (request) => (await membersOf(pool, request.accessOrg!.id)).map(memberView));

  app.put<{ Params: { org: string; user: string } }>('/orgs/:org/members/:user', documented({ tag: 'people', summary: 'Make someone a member, or change their role', params: OrgParams.extend(UserParams.shape), body: SetMember, response: { 200: Member, ...errors(400, 404) } }), async (request) => memberView(await setMemberRole(pool, request.accessOrg!.id, request.params.user, request.body ?? {})));

  app.delete<{ Params: { org: string; user: string } }>('/orgs/:org/members/:user', documented({ tag: 'people', summary: 'Remove a member', description: 'Their next request in this organization is refused.', params: OrgParams.extend(UserParams.shape), response: { 204: NoBody, ...errors(404) } }), async (request, reply) => {
    await removeMemberOf(pool, request.accessOrg!.id, parseId(request.params.user, 'user'));
    return reply.code(204).send();
  });

  app.get<{ Params: { org: string } }>('/orgs/:org/invitations', documented({ tag: 'people', summary: 'Invitations not yet taken', params: OrgParams, response: { 200: z.array(Invitation), ...errors(404) } }), async (request) => (await invitationsOf(pool, request.accessOrg!.id)).map(invitationView));

  app.post<{ Params: { org: string } }>('/orgs/:org/invitations', documented({ tag: 'people', summary: 'Invite an e-mail address', description: 'Who signs in with it (verified by their provider) becomes a member; someone known by it already is made one at once (201 with `member`).', params: OrgParams, body: Invite, response: { 201: z.union([z.object({ member: Member }), z.object({ invitation: Invitation })]), ...errors(400, 404) } }), async (request, reply) => {
    const done = await invite(pool, request.accessOrg!.id, request.body ?? {}, request.principal!);
    return reply.code(201).send('member' in done ? { member: memberView(done.member) } : { invitation: invitationView(done.invitation) });
  });

  app.delete<{ Params: { org: string; id: string } }>('/orgs/:org/invitations/:id', documented({ tag: 'people', summary: 'Take an invitation back', params: OrgParams.extend(IdParams('invitation').shape), response: { 204: NoBody, ...errors(404) } }), async (request, reply) => {
    await takeBackInvitation(pool, request.accessOrg!.id, parseId(request.params.id, 'invitation'));
    return reply.code(204).send();
  });

  app.get<{ Params: { org: string } }>('/orgs/:org/membership-rules', documented({ tag: 'people', summary: 'Provider claims that make members', params: OrgParams, response: { 200: z.array(MembershipRule), ...errors(404) } }), async (request) => (await membershipRulesOf(pool, request.accessOrg!.id)).map(ruleView));

  app.post<{ Params: { org: string } }>('/orgs/:org/membership-rules', documented({ tag: 'people', summary: 'Make members from a provider claim', description: 'Everyone the provider says is in `group` (its `groups` claim), or whose verified address is at `domain`, is a member with `role`, looked at again at each sign-in.', params: OrgParams, body: CreateRule, response: { 201: MembershipRule, ...errors(400, 404) } }), async (request, reply) => reply.code(201).send(ruleView(await addMembershipRule(pool, request.accessOrg!.id, request.body ?? {}))));

  app.delete<{ Params: { org: string; id: string } }>('/orgs/:org/membership-rules/:id', documented({ tag: 'people', summary: 'Remove a membership rule', description: 'Members it made stay until their next sign-in.', params: OrgParams.extend(IdParams('rule').shape), response: { 204: NoBody, ...errors(404) } }), async (request, reply) => {
    await removeMembershipRule(pool, request.accessOrg!.id, parseId(request.params.id, 'rule'));
    return reply.code(204).send();
  });
}

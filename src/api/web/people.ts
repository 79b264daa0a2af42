/**
 * People on the web pages (issue 25): an organization's Members page (`/orgs/:org/members`:
 * members and their roles, invitations, the provider claims that make members; admins change
 * them here), the API tokens page (`/tokens`: a person's own tokens, made (shown once) and
 * revoked) and an organization's Audit page (`/orgs/:org/audit`). Forms act through the
 * application's operations (app/people.ts, tokens.ts, audit.ts), as the JSON API does; the door
 * (api/access) already checked the role.
 */
import { parseId } from '../../app/errors';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ROLES } from '../../core/access';
import { auditPage, orgAuditTrail } from '../../app/audit';
import { addMembershipRule, invite, orgPeople, removeMemberOf, removeMembershipRule, setMemberRole, takeBackInvitation } from '../../app/people';
import { orgsVisibleTo } from '../../app/orgs';
import { createApiToken, DEFAULT_TOKEN_DAYS, MAX_TOKEN_DAYS, ownTokens, revokeOwnToken } from '../../app/tokens';
import { signInChoices } from '../identity/providers';
import { checked, formFields, formatTime, given, page, tryAction, type FailedForm, type WebScope } from './pages';
import type { SignedIn } from './signIn';

export function registerPeoplePages(web: FastifyInstance, { deps, csrf, requireUser }: WebScope): void {
  const { pool, config } = deps;
  const providers = signInChoices(config);

  const membersPage = async (request: FastifyRequest, reply: FastifyReply, user: SignedIn, failed: FailedForm | null = null, status = 200) => {
    const org = request.accessOrg!;
    const { isAdmin, members, invitations, rules } = await orgPeople(pool, user, org.id);
    return page(reply, 'members', { title: `${org.name}: members`, section: 'orgs', user, org, isAdmin, members, invitations, rules, roles: ROLES, providers, failed }, status);
  };

  /** An admin's form about members: its action, then the page again (or the form, with what was wrong). */
  const memberForm =
    <P extends Record<string, string>>(form: (p: P) => string, act: (request: FastifyRequest<{ Params: P }>, user: SignedIn, values: Record<string, string>) => Promise<unknown>) =>
    async (request: FastifyRequest<{ Params: P }>, reply: FastifyReply) => {
      const user = requireUser(request, reply);
      if (!user) return reply;
      const values = formFields(request);
      const done = await tryAction(() => act(request, user, values));
      if (!done.ok) return membersPage(request, reply, user, { form: form(request.params as P), error: done.error, values }, done.status);
      return reply.code(303).header('location', `/orgs/${request.accessOrg!.name}/members`).send();
    };

  web.get<{ Params: { org: string } }>('/orgs/:org/members', async (request, reply) => {
    const user = requireUser(request, reply);
    return user ? membersPage(request, reply, user) : reply;
  });
  web.post<{ Params: { org: string } }>('/orgs/:org/members', csrf, memberForm(() => 'invite', (request, user, v) => invite(pool, request.accessOrg!.id, { email: given(v.email) ?? '', role: v.role }, user)));
  web.post<{ Params: { org: string; user: string } }>('/orgs/:org/members/:user', csrf, memberForm((p) => `member:${p.user}`, (request, _user, v) => setMemberRole(pool, request.accessOrg!.id, request.params.user, { role: v.role })));
  web.post<{ Params: { org: string; user: string } }>('/orgs/:org/members/:user/remove', csrf, memberForm((p) => `member:${p.user}`, (request) => removeMemberOf(pool, request.accessOrg!.id, parseId(request.params.user, 'user'))));
  web.post<{ Params: { org: string; id: string } }>('/orgs/:org/invitations/:id/delete', csrf, memberForm((p) => `invitation:${p.id}`, (request) => takeBackInvitation(pool, request.accessOrg!.id, parseId(request.params.id, 'invitation'))));
  web.post<{ Params: { org: string } }>('/orgs/:org/membership-rules', csrf, memberForm(() => 'rule', (request, _user, v) => addMembershipRule(pool, request.accessOrg!.id, { provider: v.provider, claim: v.claim, value: given(v.value) ?? '', role: v.role })));
  web.post<{ Params: { org: string; id: string } }>('/orgs/:org/membership-rules/:id/delete', csrf, memberForm((p) => `rule:${p.id}`, (request) => removeMembershipRule(pool, request.accessOrg!.id, parseId(request.params.id, 'rule'))));

  web.get<{ Params: { org: string }; Querystring: Record<string, string> }>('/orgs/:org/audit', async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const query = auditPage(request.query);
    const entries = (await orgAuditTrail(pool, request.accessOrg!.id, query)).map((a) => ({ ...a, when: formatTime(a.at) }));
    const older = entries.length === query.limit ? `?before=${entries.at(-1)!.id}` : null;
    return page(reply, 'audit', { title: `${request.accessOrg!.name}: audit trail`, section: 'orgs', user, org: request.accessOrg, entries, older });
  });

  const tokensPage = async (reply: FastifyReply, user: SignedIn, shown: { made?: { name: string; token: string }; failed?: FailedForm } = {}, status = 200) => {
    const tokens = await ownTokens(pool, user);
    const orgs = await orgsVisibleTo(pool, user);
    return page(reply, 'tokens', { title: 'API tokens', section: 'tokens', user, tokens, orgs, apiUrl: config.baseUrl, defaultDays: DEFAULT_TOKEN_DAYS, maxDays: MAX_TOKEN_DAYS, ...shown }, status);
  };

  web.get('/tokens', async (request, reply) => {
    const user = requireUser(request, reply);
    return user ? tokensPage(reply, user) : reply;
  });

  web.post('/tokens', csrf, async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const values = formFields(request);
    const made = await tryAction(() =>
      createApiToken(pool, user, {
        name: given(values.name) ?? '',
        read_only: checked(values.read_only),
        ...(given(values.org) ? { org: values.org } : {}),
        ...(given(values.expires_in_days) ? { expires_in_days: Number(values.expires_in_days) } : {}),
      }),
    );
    if (!made.ok) return tokensPage(reply, user, { failed: { form: 'token', error: made.error, values } }, made.status);
    return tokensPage(reply, user, { made: { name: made.value.row.name, token: made.value.token } });
  });

  web.post<{ Params: { id: string } }>('/tokens/:id/revoke', csrf, async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const done = await tryAction(() => revokeOwnToken(pool, user, request.params.id));
    if (!done.ok) return tokensPage(reply, user, { failed: { form: `token:${request.params.id}`, error: done.error, values: {} } }, done.status);
    return reply.code(303).header('location', '/tokens').send();
  });
}

/**
 * Hosting-site connections on the web (issue 38): an organization's Hosting sites page
 * (`/orgs/:org/connections`: its connections, a form to connect one with a token), a
 * connection's page (`/orgs/:org/connections/:connection`: the site's repositories, each with
 * Activate, or a link to the repository activated from it); Repair and Deactivate are forms of a
 * repository's CI Setup page (repos.ts). Everything acts through app/connections.ts, as
 * the JSON API does; a token typed into a form is never shown again, not even after a refusal.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { activateRepo, connectionsOf, createConnection, loadConnection, removeConnection, replaceToken, siteReposOf } from '../../app/connections';
import { gitHubAppsOf } from '../../app/githubApps';
import { loadOrg } from '../../app/orgs';
import { registerGitHubAppPages } from './githubApps';
import { nameOf } from '../../core/access';
import type { OrgRow } from '../../db/orgs';
import { SITES } from '../../sites/types';
import { formatTime, formFields, given, notFoundPage, page, tryAction, type FailedForm, type WebScope } from './pages';
import type { SignedIn } from './signIn';

const SITE_LABELS: Record<(typeof SITES)[number], string> = { github: 'GitHub', gitlab: 'GitLab', gitea: 'Gitea or Forgejo', bitbucket: 'Bitbucket Cloud', stash: 'Bitbucket Server' };

/** What each site's API root looks like, for the form's hint. */
const API_EXAMPLES: Record<(typeof SITES)[number], string> = {
  github: '`https://api.github.com` (Enterprise Server: `https://ghe.example.com/api/v3`)',
  gitlab: '`https://gitlab.com/api/v4`, or your server’s',
  gitea: '`https://codeberg.org/api/v1`, or your server’s',
  bitbucket: '`https://api.bitbucket.org/2.0`',
  stash: 'your server’s own address, `https://bitbucket.example.com`',
};

export function registerConnectionPages(web: FastifyInstance, scope: WebScope): void {
  const { deps, csrf, requireUser } = scope;
  const { pool } = deps;

  const findOrg = async (ref: string): Promise<OrgRow | undefined> => {
    const found = await tryAction(() => loadOrg(pool, ref));
    return found.ok ? found.value : undefined;
  };

  const listPage = async (reply: FastifyReply, user: SignedIn, org: OrgRow, failed: FailedForm | null, status = 200, notice: string | null = null) => {
    const connections = (await connectionsOf(pool, org)).map((c) => ({ ...c, label: SITE_LABELS[c.site], created: formatTime(c.created_at) }));
    const sites = SITES.map((name) => ({ name, label: SITE_LABELS[name], example: API_EXAMPLES[name] }));
    const apps = (await gitHubAppsOf(deps, org)).map((a) => ({ ...a, created: formatTime(a.created_at) }));
    return page(reply, 'connections', { title: `Hosting sites of ${org.name}`, section: 'orgs', user, org: { id: org.id, name: org.name }, connections, sites, apps, failed, notice }, status);
  };
  registerGitHubAppPages(web, scope, listPage);

  web.get<{ Params: { org: string }; Querystring: { deleted?: string; token?: string; 'deleted-app'?: string } }>('/orgs/:org/connections', async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const org = await findOrg(request.params.org);
    if (!org) return notFoundPage(reply, user, `organization ${request.params.org}`);
    const notice =
      request.query.deleted !== undefined
        ? 'Connection deleted. Its repositories, and their webhooks and deploy keys at the site, are still there.'
        : request.query.token !== undefined
          ? 'Token replaced: the connection and the commit statuses of its repositories use the new one.'
          : request.query['deleted-app'] !== undefined
            ? 'GitHub App forgotten: its repositories no longer build through it. Delete it at GitHub too.'
            : null;
    return listPage(reply, user, org, null, 200, notice);
  });

  web.post<{ Params: { org: string } }>('/orgs/:org/connections', csrf, async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const org = await findOrg(request.params.org);
    if (!org) return notFoundPage(reply, user, `organization ${request.params.org}`);
    const v = formFields(request);
    const made = await tryAction(() => createConnection(deps, org, { site: v.site, api_url: given(v.api_url) ?? '', token: given(v.token) ?? '' }, nameOf(user)));
    // The token is not typed back into the page.
    if (!made.ok) return listPage(reply, user, org, { form: 'connect', error: made.error, values: { site: v.site ?? '', api_url: v.api_url ?? '' } }, made.status);
    return reply.code(303).header('location', `/orgs/${org.name}/connections/${made.value.id}`).send();
  });

  web.post<{ Params: { org: string; connection: string } }>('/orgs/:org/connections/:connection/delete', csrf, async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const org = await findOrg(request.params.org);
    if (!org) return notFoundPage(reply, user, `organization ${request.params.org}`);
    const done = await tryAction(() => removeConnection(pool, org, request.params.connection));
    if (!done.ok) return listPage(reply, user, org, { form: `delete:${request.params.connection}`, error: done.error, values: {} }, done.status);
    return reply.code(303).header('location', `/orgs/${org.name}/connections?deleted`).send();
  });

  web.post<{ Params: { org: string; connection: string } }>('/orgs/:org/connections/:connection/token', csrf, async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const org = await findOrg(request.params.org);
    if (!org) return notFoundPage(reply, user, `organization ${request.params.org}`);
    const v = formFields(request);
    const done = await tryAction(async () => replaceToken(deps, await loadConnection(pool, org, request.params.connection), { token: given(v.token) ?? '' }));
    if (!done.ok) return listPage(reply, user, org, { form: `token:${request.params.connection}`, error: done.error, values: {} }, done.status);
    return reply.code(303).header('location', `/orgs/${org.name}/connections?token`).send();
  });

  const reposPage = async (reply: FastifyReply, user: SignedIn, org: OrgRow, connectionId: string, failed: FailedForm | null, status = 200) => {
    const c = await tryAction(() => loadConnection(pool, org, connectionId));
    if (!c.ok) return notFoundPage(reply, user, `connection ${connectionId} of ${org.name}`);
    // The site may refuse or be away: the page says so instead of failing.
    const listed = await tryAction(() => siteReposOf(deps, c.value));
    const connection = { id: c.value.id, site: c.value.site, label: SITE_LABELS[c.value.site], api_url: c.value.api_url, account: c.value.account };
    return page(
      reply,
      'connection',
      {
        title: `${connection.label} repositories of ${org.name}`,
        section: 'orgs',
        user,
        org: { id: org.id, name: org.name },
        connection,
        repos: listed.ok ? listed.value : [],
        siteError: listed.ok ? null : listed.error.message,
        failed,
      },
      status,
    );
  };

  web.get<{ Params: { org: string; connection: string } }>('/orgs/:org/connections/:connection', async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const org = await findOrg(request.params.org);
    if (!org) return notFoundPage(reply, user, `organization ${request.params.org}`);
    return reposPage(reply, user, org, request.params.connection, null);
  });

  web.post<{ Params: { org: string; connection: string } }>('/orgs/:org/connections/:connection/repos', csrf, async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const org = await findOrg(request.params.org);
    if (!org) return notFoundPage(reply, user, `organization ${request.params.org}`);
    const v = formFields(request);
    const done = await tryAction(async () => activateRepo(deps, org, await loadConnection(pool, org, request.params.connection), { site_repo_id: v.site_repo_id ?? '', name: given(v.name) }));
    if (!done.ok) return reposPage(reply, user, org, request.params.connection, { form: `activate:${v.site_repo_id ?? ''}`, error: done.error, values: v }, done.status);
    // Its CI Setup page: suites come next.
    return reply.code(303).header('location', `/repos/${done.value.id}?saved=activated#site`).send();
  });
}

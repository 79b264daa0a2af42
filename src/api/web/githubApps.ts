/**
 * GitHub Apps on the web (issue 38): the Hosting sites page lists the organization's apps and
 * makes one (`POST /orgs/:org/github-apps/new` renders the manifest as a form the browser posts
 * to GitHub; GitHub sends it back to `GET /orgs/:org/github-apps/created?code&state`), and an
 * app's page (`/orgs/:org/github-apps/:app`) lists its installations' repositories, each with
 * Activate. Everything acts through app/githubApps.ts, as the JSON API does.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { activateAppRepo, finishManifest, gitHubAppDetail, loadGitHubApp, removeGitHubApp, startManifest } from '../../app/githubApps';
import { loadOrg } from '../../app/orgs';
import { nameOf } from '../../core/access';
import type { OrgRow } from '../../db/orgs';
import { formatTime, formFields, given, notFoundPage, page, tryAction, type FailedForm, type WebScope } from './pages';
import type { SignedIn } from './signIn';

export function registerGitHubAppPages(web: FastifyInstance, { deps, csrf, requireUser }: WebScope, connectionsPage: (reply: FastifyReply, user: SignedIn, org: OrgRow, failed: FailedForm | null, status?: number) => Promise<FastifyReply>): void {
  const { pool } = deps;

  const findOrg = async (ref: string): Promise<OrgRow | undefined> => {
    const found = await tryAction(() => loadOrg(pool, ref));
    return found.ok ? found.value : undefined;
  };

  // The manifest, as a form for the browser to post to GitHub.
  web.post<{ Params: { org: string } }>('/orgs/:org/github-apps/new', csrf, async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const org = await findOrg(request.params.org);
    if (!org) return notFoundPage(reply, user, `organization ${request.params.org}`);
    const v = formFields(request);
    const started = await tryAction(async () => startManifest(deps, org, { web_url: given(v.web_url), owner: given(v.owner) }));
    if (!started.ok) return connectionsPage(reply, user, org, { form: 'github-app', error: started.error, values: v }, started.status);
    const form = started.value;
    return page(reply, 'githubAppManifest', {
      title: `A GitHub App for ${org.name}`,
      section: 'orgs',
      user,
      org: { id: org.id, name: org.name },
      form,
      manifestJson: JSON.stringify(form.manifest),
      formTo: form.form_url,
    });
  });

  // GitHub's redirect back, with the code to trade for the app.
  web.get<{ Params: { org: string }; Querystring: { code?: string; state?: string } }>('/orgs/:org/github-apps/created', async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const org = await findOrg(request.params.org);
    if (!org) return notFoundPage(reply, user, `organization ${request.params.org}`);
    const made = await tryAction(() => finishManifest(deps, org, { code: request.query.code ?? '', state: request.query.state ?? '' }, nameOf(user)));
    if (!made.ok) return connectionsPage(reply, user, org, { form: 'github-app', error: made.error, values: {} }, made.status);
    return reply.code(303).header('location', `/orgs/${org.name}/github-apps/${made.value.id}?created`).send();
  });

  const appPage = async (reply: FastifyReply, user: SignedIn, org: OrgRow, appRef: string, failed: FailedForm | null, status = 200, notice: string | null = null) => {
    const app = await tryAction(() => loadGitHubApp(deps, org, appRef));
    if (!app.ok) return notFoundPage(reply, user, `GitHub App ${appRef} of ${org.name}`);
    const detail = await gitHubAppDetail(deps, app.value);
    return page(
      reply,
      'githubApp',
      {
        title: `GitHub App ${detail.name}`,
        section: 'orgs',
        user,
        org: { id: org.id, name: org.name },
        app: { ...detail, created: formatTime(detail.created_at) },
        installations: detail.installations.map((i) => ({ ...i, updated: formatTime(i.updated_at) })),
        delivery: detail.site_last_delivery ? { ...detail.site_last_delivery, at: formatTime(detail.site_last_delivery.at) } : null,
        failed,
        notice,
      },
      status,
    );
  };

  web.get<{ Params: { org: string; app: string }; Querystring: { created?: string } }>('/orgs/:org/github-apps/:app', async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const org = await findOrg(request.params.org);
    if (!org) return notFoundPage(reply, user, `organization ${request.params.org}`);
    const notice = request.query.created !== undefined ? 'GitHub made the app. Install it on the accounts whose repositories Sluice should build; they appear here.' : null;
    return appPage(reply, user, org, request.params.app, null, 200, notice);
  });

  web.post<{ Params: { org: string; app: string } }>('/orgs/:org/github-apps/:app/repos', csrf, async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const org = await findOrg(request.params.org);
    if (!org) return notFoundPage(reply, user, `organization ${request.params.org}`);
    const v = formFields(request);
    const done = await tryAction(async () => activateAppRepo(deps, org, await loadGitHubApp(deps, org, request.params.app), { site_repo_id: v.site_repo_id ?? '' }));
    if (!done.ok) return appPage(reply, user, org, request.params.app, { form: `activate:${v.site_repo_id ?? ''}`, error: done.error, values: v }, done.status);
    return reply.code(303).header('location', `/repos/${done.value.id}?saved=app-activated`).send();
  });

  web.post<{ Params: { org: string; app: string } }>('/orgs/:org/github-apps/:app/delete', csrf, async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const org = await findOrg(request.params.org);
    if (!org) return notFoundPage(reply, user, `organization ${request.params.org}`);
    const done = await tryAction(() => removeGitHubApp(deps, org, request.params.app));
    if (!done.ok) return appPage(reply, user, org, request.params.app, { form: 'delete', error: done.error, values: {} }, done.status);
    return reply.code(303).header('location', `/orgs/${org.name}/connections?deleted-app`).send();
  });
}

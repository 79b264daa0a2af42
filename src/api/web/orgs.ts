/**
 * Organizations and their repositories: the page that lists them (`/orgs`, one click from every
 * page) with a form for a new organization and, under each, one for a new repository. Each
 * repository links its CI Setup and Branches pages, each organization its Web Hooks page, so
 * all of them are two clicks from the builds list. Each can be deleted from here, after a
 * second click (no JavaScript): its builds under way are stopped first (app/remove.ts).
 */
import { parseId } from '../../app/errors';
import { decide, stoppedBy } from '../../core/access';
import type { FastifyInstance } from 'fastify';
import { createOrg, loadOrg, orgsVisibleTo, removeOrg } from '../../app/orgs';
import { createRepo, loadRepo, removeRepo, reposOf } from '../../app/repos';
import { formFields, given, page, tryAction, type FailedForm, type WebScope } from './pages';
import type { SignedIn } from './signIn';

export function registerOrgPages(web: FastifyInstance, { deps, csrf, requireUser }: WebScope): void {
  const { pool } = deps;

  const orgsPage = async (reply: Parameters<typeof page>[0], user: SignedIn, failed: FailedForm | null, status = 200, notice: string | null = null) => {
    const orgs = await orgsVisibleTo(pool, user);
    const repos = await Promise.all(orgs.map((o) => reposOf(pool, o)));
    const list = orgs.map((o, i) => ({
      ...o,
      // Its admin's controls (new repository, deletes, web hooks, audit trail) for those who may use them.
      admin: decide(user, 'admin', o.id, true).allowed,
      repos: repos[i]!.map((r) => ({ id: r.id, name: r.name, scm: r.scm, pull_url: r.pull_url })),
    }));
    return page(reply, 'orgs', { title: 'Organizations', section: 'orgs', user, orgs: list, failed, notice }, status);
  };

  web.get<{ Querystring: { deleted?: string } }>('/orgs', async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    // `?deleted=<what>` after a delete's redirect: only names as Sluice makes them are shown.
    const deleted = request.query.deleted;
    const notice = deleted !== undefined && /^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)?$/.test(deleted) ? `${deleted} deleted.` : null;
    return orgsPage(reply, user, null, 200, notice);
  });

  // Forms of deletes: `delete-org:<id>`, `delete-repo:<id>`; the user's name stops the builds under way.
  web.post<{ Params: { org: string } }>('/orgs/:org/delete', csrf, async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const done = await tryAction(async () => {
      const org = await loadOrg(pool, request.params.org);
      await removeOrg(deps, String(org.id), { stoppedBy: stoppedBy(user) ?? user.name });
      return org;
    });
    if (!done.ok) return orgsPage(reply, user, { form: `delete-org:${request.params.org}`, error: done.error, values: {} }, done.status);
    return reply.code(303).header('location', `/orgs?deleted=${encodeURIComponent(done.value.name)}`).send();
  });

  web.post<{ Params: { id: string } }>('/repos/:id/delete', csrf, async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const done = await tryAction(async () => {
      const repo = await loadRepo(pool, String(parseId(request.params.id, 'repository')));
      await removeRepo(deps, repo, { stoppedBy: stoppedBy(user) ?? user.name });
      return repo;
    });
    if (!done.ok) return orgsPage(reply, user, { form: `delete-repo:${request.params.id}`, error: done.error, values: {} }, done.status);
    const name = `${done.value.org_name}/${done.value.name}`;
    return reply.code(303).header('location', `/orgs?deleted=${encodeURIComponent(name)}#org-${done.value.org_name}`).send();
  });

  web.post('/orgs', csrf, async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const values = formFields(request);
    const made = await tryAction(() => createOrg(pool, { name: given(values.name) ?? '', email: given(values.email) ?? '' }));
    // Forms here: `org`, or `repo:<org id>` for a repository under that organization.
    if (!made.ok) return orgsPage(reply, user, { form: 'org', error: made.error, values }, made.status);
    return reply.code(303).header('location', `/orgs#org-${made.value.name}`).send();
  });

  web.post<{ Params: { org: string } }>('/orgs/:org/repos', csrf, async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const values = formFields(request);
    const made = await tryAction(async () => {
      const org = await loadOrg(pool, request.params.org);
      return createRepo(deps, org, { name: given(values.name) ?? '', scm: values.scm, pull_url: given(values.pull_url) ?? '' });
    });
    if (!made.ok) return orgsPage(reply, user, { form: `repo:${request.params.org}`, error: made.error, values }, made.status);
    // Its CI Setup page: the webhook URL and the SSH key to hand to the git server come next.
    return reply.code(303).header('location', `/repos/${made.value.id}`).send();
  });
}

/**
 * Bitbucket Server / Data Center's REST API as Atlassian's OpenAPI document (9.2) defines it, for
 * the parts Sluice's connections use: `/rest/capabilities`, the repositories a user may read or
 * administer, a repository's default branch, webhooks and their latest invocation, SSH access
 * keys (`/rest/keys/1.0`), build statuses. Every request or field the document does not define
 * is kept in `problems`; every authenticated answer names its user in `X-AUSERNAME`; pages are
 * `{values, isLastPage, nextPageStart}`; a permission the token lacks is 401, as the document
 * says; errors are `{errors: [{context, message, exceptionName}]}`. Hooks are delivered for real:
 * `push()` POSTs `repo:refs_changed` with `X-Event-Key` and `X-Hub-Signature: sha256=<HMAC>`.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { checkFields, checkQuery, deliverHook, startSiteServer, type SiteReply } from './fakeSite';

export interface ServerRepo {
  id: number;
  project: string;
  slug: string;
  defaultBranch: string;
  sshUrl: string;
  access: Record<string, 'REPO_ADMIN' | 'REPO_WRITE' | 'REPO_READ'>;
}

interface Hook {
  id: number;
  name: string;
  url: string;
  active: boolean;
  events: string[];
  secret?: string;
  latest?: { start: number; finish: number; outcome: 'SUCCESS' | 'FAILURE' | 'ERROR'; description: string };
}

export interface FakeBitbucketServer {
  url: string;
  problems: string[];
  requests: string[];
  hooksOf(repoId: number): Hook[];
  keysOf(repoId: number): { id: number; text: string; label?: string; permission: string }[];
  statuses: { sha: string; state: string; key: string }[];
  rename(repoId: number, project: string, slug: string, sshUrl: string): void;
  push(repoId: number, push: { branch: string; before: string; after: string }, opts?: { secret?: string; via?: (hookUrl: string) => string }): Promise<(number | null)[]>;
  close(): Promise<void>;
}

const REFS_CHANGED = JSON.parse(readFileSync(path.join(__dirname, '../fixtures/providers/stash/repo-refs-changed.json'), 'utf8')) as Record<string, unknown>;
const EVENTS = ['repo:refs_changed', 'repo:modified', 'repo:forked', 'repo:comment:added', 'repo:comment:edited', 'repo:comment:deleted', 'pr:opened', 'pr:from_ref_updated', 'pr:to_ref_updated', 'pr:modified', 'pr:reviewer:updated', 'pr:reviewer:approved', 'pr:reviewer:unapproved', 'pr:reviewer:needs_work', 'pr:merged', 'pr:declined', 'pr:deleted', 'pr:comment:added', 'pr:comment:edited', 'pr:comment:deleted', 'mirror:repo_synchronized'];
const RANK = { REPO_READ: 1, REPO_WRITE: 2, REPO_ADMIN: 3 } as const;

/** `tokens`: an HTTP access token → its user. */
export async function startFakeBitbucketServer(opts: { tokens: Record<string, string>; repos: ServerRepo[] }): Promise<FakeBitbucketServer> {
  const hooks = new Map<number, Hook[]>();
  const keys = new Map<number, { id: number; text: string; label?: string; permission: string }[]>();
  const statuses: FakeBitbucketServer['statuses'] = [];
  let nextId = 400;
  const error = (status: number, message: string, exceptionName = 'com.atlassian.bitbucket.AuthorisationException'): SiteReply => ({ status, body: { errors: [{ context: null, message, exceptionName }] } });

  const view = (r: ServerRepo) => ({
    id: r.id,
    slug: r.slug,
    name: r.slug,
    scmId: 'git',
    state: 'AVAILABLE',
    forkable: true,
    public: false,
    archived: false,
    project: { id: 1, key: r.project, name: r.project, public: false, type: 'NORMAL' },
    links: { clone: [{ href: `https://bitbucket.test/scm/${r.project.toLowerCase()}/${r.slug}.git`, name: 'http' }, { href: r.sshUrl, name: 'ssh' }], self: [{ href: `https://bitbucket.test/projects/${r.project}/repos/${r.slug}/browse` }] },
  });

  const server = await startSiteServer((req, expect) => {
    const { method, url } = req;
    const user = opts.tokens[/^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1] ?? ''];
    if (!user) return error(401, 'Authentication failed. Please check your credentials and try again.', 'com.atlassian.bitbucket.auth.IncorrectPasswordAuthenticationException');
    const who = { 'x-ausername': user };
    const reply = (r: SiteReply): SiteReply => ({ ...r, headers: { ...r.headers, ...who } });
    const start = Number(url.searchParams.get('start') ?? 0);
    const limit = Number(url.searchParams.get('limit') ?? 25);
    expect(`${url.pathname}: limit 1..1000`, limit >= 1 && limit <= 1000);
    const pageOf = <T>(items: T[]): SiteReply => {
      const values = items.slice(start, start + limit);
      const isLastPage = start + limit >= items.length;
      return { status: 200, body: { size: values.length, limit, start, isLastPage, values, ...(isLastPage ? {} : { nextPageStart: start + limit }) } };
    };
    const p = url.pathname;

    if (method === 'GET' && p === '/rest/capabilities') return reply({ status: 200, body: { application: 'stash', capabilities: { webhooks: 'http://bitbucket.test/rest/webhooks/1.0/capabilities' } } });
    if (method === 'GET' && p === '/rest/api/1.0/repos') {
      checkQuery(expect, 'GET /repos', url, ['name', 'projectname', 'projectkey', 'permission', 'state', 'visibility', 'archived', 'start', 'limit']);
      const need = url.searchParams.get('permission') as keyof typeof RANK | null;
      expect('GET /repos: permission', need === null || need in RANK);
      return reply(pageOf(opts.repos.filter((r) => r.access[user] && RANK[r.access[user]] >= RANK[need ?? 'REPO_READ']).map(view)));
    }
    const m = /^\/rest\/(api|keys)\/(?:1\.0|latest)\/projects\/([^/]+)\/repos\/([^/]+)(\/.*)?$/.exec(p);
    if (!m) return reply(error(404, 'Not found', 'com.atlassian.bitbucket.NoSuchEntityException'));
    const repo = opts.repos.find((r) => r.project === decodeURIComponent(m[2]!) && r.slug === decodeURIComponent(m[3]!) && r.access[user]);
    if (!repo) return reply(error(404, `Repository ${m[2]}/${m[3]} does not exist.`, 'com.atlassian.bitbucket.repository.NoSuchRepositoryException'));
    const rest = m[4] ?? '';
    const admin = repo.access[user] === 'REPO_ADMIN';
    const denied = error(401, 'You are not permitted to access this resource');

    if (m[1] === 'api' && method === 'GET' && rest === '/default-branch') return reply({ status: 200, body: { id: `refs/heads/${repo.defaultBranch}`, displayId: repo.defaultBranch, type: 'BRANCH' } });

    const hm = m[1] === 'api' ? /^\/webhooks(?:\/([0-9]+))?(\/latest)?$/.exec(rest) : null;
    if (hm) {
      if (!admin) return reply(denied);
      const all = hooks.get(repo.id) ?? [];
      const hook = hm[1] ? all.find((h) => h.id === Number(hm[1])) : undefined;
      if (hm[1] && !hook) return reply(error(404, 'Webhook not found', 'com.atlassian.webhooks.NoSuchWebhookException'));
      const shown = (h: Hook) => ({ id: h.id, name: h.name, createdDate: 1, updatedDate: 1, events: h.events, configuration: {}, url: h.url, active: h.active, scopeType: 'repository', sslVerificationRequired: true });
      if (hm[2]) {
        checkQuery(expect, 'GET webhooks/latest', url, ['event', 'outcome']);
        if (!hook!.latest) return reply({ status: 204 });
        const l = hook!.latest;
        return reply({ status: 200, body: { id: 1, event: 'repo:refs_changed', duration: l.finish - l.start, start: l.start, finish: l.finish, request: { url: hook!.url, method: 'POST' }, result: { outcome: l.outcome, description: l.description } } });
      }
      if (method === 'GET' && !hm[1]) {
        checkQuery(expect, 'GET webhooks', url, ['event', 'statistics', 'start', 'limit']);
        return reply(pageOf(all.map(shown)));
      }
      if (method === 'GET') return reply({ status: 200, body: shown(hook!) });
      if (method === 'DELETE' && hook) {
        hooks.set(repo.id, all.filter((h) => h !== hook));
        return reply({ status: 204 });
      }
      if (method === 'POST' && !hm[1]) {
        const b = checkFields(expect, 'POST webhooks', req.body, ['name', 'url', 'active', 'events', 'configuration', 'credentials', 'sslVerificationRequired', 'scopeType']);
        const events = (b.events as string[] | undefined) ?? [];
        for (const e of events) expect(`POST webhooks: event ${e}`, EVENTS.includes(e));
        const config = (b.configuration ?? {}) as Record<string, unknown>;
        for (const k of Object.keys(config)) expect(`POST webhooks: configuration.${k}`, k === 'secret');
        const h: Hook = { id: nextId++, name: String(b.name ?? ''), url: String(b.url), active: b.active !== false, events, secret: config.secret as string | undefined };
        hooks.set(repo.id, [...all, h]);
        return reply({ status: 200, body: shown(h) });
      }
      return reply(error(405, 'Method not allowed'));
    }

    const km = m[1] === 'keys' ? /^\/ssh(?:\/([0-9]+))?$/.exec(rest) : null;
    if (km) {
      if (!admin) return reply(denied);
      const all = keys.get(repo.id) ?? [];
      if (method === 'GET' && !km[1]) {
        checkQuery(expect, 'GET ssh', url, ['filter', 'effective', 'minimumPermission', 'permission', 'start', 'limit']);
        return reply(pageOf(all.map((k) => ({ key: { id: k.id, text: k.text, label: k.label }, permission: k.permission }))));
      }
      // "deleted (or none was found matching the given id)"
      if (method === 'DELETE' && km[1]) {
        keys.set(repo.id, all.filter((k) => k.id !== Number(km[1])));
        return reply({ status: 204 });
      }
      if (method === 'POST' && !km[1]) {
        const b = checkFields(expect, 'POST ssh', req.body, ['key', 'permission'], ['key', 'permission']);
        const key = checkFields(expect, 'POST ssh: key', b.key, ['text', 'label', 'expiryDays'], ['text']);
        expect('POST ssh: permission', ['REPO_READ', 'REPO_WRITE', 'REPO_ADMIN'].includes(String(b.permission)));
        const k = { id: nextId++, text: String(key.text), label: key.label as string | undefined, permission: String(b.permission) };
        keys.set(repo.id, [...all, k]);
        return reply({ status: 201, body: { key: { id: k.id, text: k.text, label: k.label }, repository: view(repo), permission: k.permission } });
      }
      return reply(error(405, 'Method not allowed'));
    }

    const sm = m[1] === 'api' ? /^\/commits\/([0-9a-f]{40})\/builds$/.exec(rest) : null;
    if (sm && method === 'POST') {
      const b = checkFields(expect, 'POST builds', req.body, ['key', 'state', 'url', 'name', 'description', 'ref', 'parent', 'buildNumber', 'duration', 'testResults'], ['key', 'state', 'url']);
      statuses.push({ sha: sm[1]!, state: String(b.state), key: String(b.key) });
      return reply({ status: 204 });
    }
    return reply(error(404, 'Not found', 'com.atlassian.bitbucket.NoSuchEntityException'));
  });

  return {
    url: server.base,
    problems: server.problems,
    requests: server.requests,
    hooksOf: (id) => hooks.get(id) ?? [],
    keysOf: (id) => keys.get(id) ?? [],
    statuses,
    rename(repoId, project, slug, sshUrl) {
      const r = opts.repos.find((x) => x.id === repoId)!;
      Object.assign(r, { project, slug, sshUrl });
    },
    async push(repoId, push, o = {}) {
      const r = opts.repos.find((x) => x.id === repoId)!;
      const body = JSON.stringify({
        ...REFS_CHANGED,
        repository: { ...(REFS_CHANGED.repository as object), ...view(r) },
        changes: [{ ref: { id: `refs/heads/${push.branch}`, displayId: push.branch, type: 'BRANCH' }, refId: `refs/heads/${push.branch}`, fromHash: push.before, toHash: push.after, type: 'UPDATE' }],
      });
      const answered: (number | null)[] = [];
      for (const h of (hooks.get(repoId) ?? []).filter((x) => x.active && x.events.includes('repo:refs_changed'))) {
        const secret = o.secret ?? h.secret;
        const headers: Record<string, string> = { 'x-event-key': 'repo:refs_changed', 'x-request-id': randomUUID() };
        if (secret) headers['x-hub-signature'] = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
        const startedAt = Date.now();
        const status = await deliverHook(o.via ? o.via(h.url) : h.url, headers, body);
        h.latest = { start: startedAt, finish: Date.now(), outcome: status !== null && status < 300 ? 'SUCCESS' : status === null ? 'ERROR' : 'FAILURE', description: status === null ? 'connection refused' : String(status) };
        answered.push(status);
      }
      return answered;
    },
    close: () => server.close(),
  };
}

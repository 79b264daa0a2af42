/**
 * GitHub's REST API (2022-11-28) as docs.github.com/rest describes it, for the parts Sluice's
 * connections use: the authenticated user and their repositories, a repository's webhooks and
 * their deliveries, deploy keys, commit statuses. Every request or field the documentation does
 * not define is kept in `problems` (for the test to assert empty), and answered as GitHub
 * answers: without a User-Agent 403, a bad token 401, hooks and keys without admin 404 (GitHub
 * hides what you may not administer). Hooks are delivered for real: `push()` POSTs GitHub's push
 * payload (@octokit/webhooks-examples) with `X-GitHub-Event` and `X-Hub-Signature-256`, and logs
 * each delivery as the deliveries API lists them.
 */
import { createHmac, randomUUID } from 'node:crypto';
import examples from '@octokit/webhooks-examples';
import { checkFields, checkQuery, deliverHook, paged, startSiteServer, type SiteReply } from './fakeSite';

export interface GitHubRepo {
  id: number;
  fullName: string;
  sshUrl: string;
  defaultBranch: string;
  access: Record<string, 'admin' | 'write' | 'read'>;
}

interface Hook {
  id: number;
  active: boolean;
  events: string[];
  config: { url: string; content_type?: string; secret?: string; insecure_ssl?: string };
  deliveries: { id: number; guid: string; delivered_at: string; status_code: number; status: string; event: string }[];
}

export interface FakeGitHubSite {
  apiUrl: string;
  problems: string[];
  requests: string[];
  hooksOf(repoId: number): Hook[];
  keysOf(repoId: number): { id: number; key: string; title: string; read_only: boolean }[];
  statuses: { repo: string; sha: string; state: string; context?: string }[];
  rename(repoId: number, fullName: string, sshUrl: string): void;
  push(repoId: number, push: { ref: string; before: string; after: string }, opts?: { secret?: string; via?: (hookUrl: string) => string }): Promise<(number | null)[]>;
  close(): Promise<void>;
}

/** A push to a branch, as GitHub's own webhook documentation shows one (its examples' only branch pushes create the branch: `created` is set per push below). */
const PUSH = (examples.find((d) => d.name === 'push')!.examples as unknown as Record<string, unknown>[]).find((e) => String(e.ref).startsWith('refs/heads/') && Array.isArray(e.commits) && e.commits.length > 0)!;
const EVENTS = ['*', 'push', 'create', 'delete', 'pull_request', 'pull_request_review', 'issues', 'issue_comment', 'release', 'status', 'check_run', 'check_suite', 'workflow_run', 'repository', 'fork', 'star', 'watch'];

/** `tokens`: a token → its login. */
export async function startFakeGitHubSite(opts: { tokens: Record<string, string>; repos: GitHubRepo[] }): Promise<FakeGitHubSite> {
  const hooks = new Map<number, Hook[]>();
  const keys = new Map<number, { id: number; key: string; title: string; read_only: boolean; verified: boolean; created_at: string }[]>();
  const statuses: FakeGitHubSite['statuses'] = [];
  let nextId = 500;
  const notFound: SiteReply = { status: 404, body: { message: 'Not Found', documentation_url: 'https://docs.github.com/rest' } };

  const view = (r: GitHubRepo, login: string) => ({
    id: r.id,
    node_id: `R_${r.id}`,
    name: r.fullName.split('/')[1],
    full_name: r.fullName,
    private: true,
    owner: { login: r.fullName.split('/')[0], id: 1, type: 'Organization' },
    html_url: `https://github.test/${r.fullName}`,
    ssh_url: r.sshUrl,
    clone_url: `https://github.test/${r.fullName}.git`,
    default_branch: r.defaultBranch,
    permissions: { admin: r.access[login] === 'admin', maintain: r.access[login] === 'admin', push: r.access[login] !== 'read', triage: true, pull: true },
  });

  const server = await startSiteServer((req, expect) => {
    const { method, url } = req;
    // https://docs.github.com/rest/using-the-rest-api/getting-started-with-the-rest-api
    expect(`${url.pathname}: Accept: application/vnd.github+json`, req.headers.accept === 'application/vnd.github+json');
    expect(`${url.pathname}: X-GitHub-Api-Version`, req.headers['x-github-api-version'] === '2022-11-28');
    if (!req.headers['user-agent']) return { status: 403, body: { message: 'Request forbidden by administrative rules.' } };
    const login = opts.tokens[/^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1] ?? ''];
    if (!login) return { status: 401, body: { message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest' } };
    const perPage = Number(url.searchParams.get('per_page') ?? 30);
    expect(`${url.pathname}: per_page 1..100`, perPage >= 1 && perPage <= 100);
    const page = Number(url.searchParams.get('page') ?? 1);
    const p = url.pathname;

    if (method === 'GET' && p === '/user') return { status: 200, body: { login, id: 42, type: 'User' } };
    if (method === 'GET' && p === '/user/repos') {
      checkQuery(expect, 'GET /user/repos', url, ['visibility', 'affiliation', 'type', 'sort', 'direction', 'per_page', 'page', 'since', 'before']);
      return paged(url, opts.repos.filter((r) => r.access[login]).map((r) => view(r, login)), perPage, page, server.base);
    }
    const m = /^\/repos\/([^/]+)\/([^/]+)(\/.*)?$/.exec(p);
    if (!m) return notFound;
    const repo = opts.repos.find((r) => r.fullName === `${decodeURIComponent(m[1]!)}/${decodeURIComponent(m[2]!)}` && r.access[login]);
    if (!repo) return notFound;
    const rest = m[3] ?? '';
    const admin = repo.access[login] === 'admin';

    const hm = /^\/hooks(?:\/([0-9]+))?(\/deliveries)?$/.exec(rest);
    if (hm) {
      if (!admin) return notFound;
      const all = hooks.get(repo.id) ?? [];
      const hook = hm[1] ? all.find((h) => h.id === Number(hm[1])) : undefined;
      if (hm[1] && !hook) return notFound;
      const shown = (h: Hook) => ({ type: 'Repository', id: h.id, name: 'web', active: h.active, events: h.events, config: { url: h.config.url, content_type: h.config.content_type ?? 'form', insecure_ssl: h.config.insecure_ssl ?? '0', ...(h.config.secret ? { secret: '********' } : {}) } });
      if (hm[2]) {
        checkQuery(expect, 'GET hook deliveries', url, ['per_page', 'cursor', 'status']);
        return { status: 200, body: [...hook!.deliveries].reverse().slice(0, perPage) };
      }
      if (method === 'GET' && !hm[1]) {
        checkQuery(expect, 'GET hooks', url, ['per_page', 'page']);
        return paged(url, all.map(shown), perPage, page, server.base);
      }
      if (method === 'GET') return { status: 200, body: shown(hook!) };
      if (method === 'DELETE' && hook) {
        hooks.set(repo.id, all.filter((h) => h !== hook));
        return { status: 204 };
      }
      if (method === 'POST' && !hm[1]) {
        const b = checkFields(expect, 'POST hooks', req.body, ['name', 'config', 'events', 'active'], ['config']);
        const config = checkFields(expect, 'POST hooks: config', b.config, ['url', 'content_type', 'secret', 'insecure_ssl'], ['url']);
        expect('POST hooks: name is web', b.name === undefined || b.name === 'web');
        for (const e of (b.events as string[] | undefined) ?? []) expect(`POST hooks: event ${e}`, EVENTS.includes(e));
        expect('POST hooks: content_type', config.content_type === undefined || ['json', 'form'].includes(String(config.content_type)));
        expect('POST hooks: insecure_ssl a string', config.insecure_ssl === undefined || typeof config.insecure_ssl === 'string');
        const h: Hook = { id: nextId++, active: b.active !== false, events: (b.events as string[] | undefined) ?? ['push'], config: config as Hook['config'], deliveries: [] };
        hooks.set(repo.id, [...all, h]);
        return { status: 201, body: shown(h) };
      }
      return { status: 405, body: { message: 'Method Not Allowed' } };
    }

    const km = /^\/keys(?:\/([0-9]+))?$/.exec(rest);
    if (km) {
      if (!admin) return notFound;
      const all = keys.get(repo.id) ?? [];
      const key = km[1] ? all.find((k) => k.id === Number(km[1])) : undefined;
      if (km[1] && !key) return notFound;
      if (method === 'GET' && !km[1]) {
        checkQuery(expect, 'GET keys', url, ['per_page', 'page']);
        return paged(url, all, perPage, page, server.base);
      }
      if (method === 'DELETE' && key) {
        keys.set(repo.id, all.filter((k) => k !== key));
        return { status: 204 };
      }
      if (method === 'POST' && !km[1]) {
        const b = checkFields(expect, 'POST keys', req.body, ['title', 'key', 'read_only'], ['key']);
        const body = String(b.key ?? '').split(' ').slice(0, 2).join(' ');
        if (all.some((k) => k.key === body)) return { status: 422, body: { message: 'Validation Failed', errors: [{ resource: 'PublicKey', code: 'custom', field: 'key', message: 'key is already in use' }] } };
        const k = { id: nextId++, key: body, title: String(b.title ?? ''), read_only: b.read_only === true, verified: true, created_at: new Date().toISOString() };
        keys.set(repo.id, [...all, k]);
        return { status: 201, body: k };
      }
      return { status: 405, body: { message: 'Method Not Allowed' } };
    }

    const sm = /^\/statuses\/([0-9a-f]{40})$/.exec(rest);
    if (sm && method === 'POST') {
      if (repo.access[login] === 'read') return notFound;
      const b = checkFields(expect, 'POST statuses', req.body, ['state', 'target_url', 'description', 'context'], ['state']);
      statuses.push({ repo: repo.fullName, sha: sm[1]!, state: String(b.state), context: b.context as string | undefined });
      return { status: 201, body: { id: nextId++, state: b.state, context: b.context } };
    }
    return notFound;
  });

  return {
    apiUrl: server.base,
    problems: server.problems,
    requests: server.requests,
    hooksOf: (id) => hooks.get(id) ?? [],
    keysOf: (id) => keys.get(id) ?? [],
    statuses,
    rename(repoId, fullName, sshUrl) {
      Object.assign(opts.repos.find((r) => r.id === repoId)!, { fullName, sshUrl });
    },
    async push(repoId, push, o = {}) {
      const r = opts.repos.find((x) => x.id === repoId)!;
      const body = JSON.stringify({
        ...PUSH,
        ref: push.ref,
        before: push.before,
        after: push.after,
        created: false,
        commits: [{ ...(PUSH.commits as object[])[0], id: push.after, message: 'a change' }],
        head_commit: { ...((PUSH.head_commit as object | null) ?? {}), id: push.after, message: 'a change' },
        repository: { ...(PUSH.repository as object), id: r.id, full_name: r.fullName, ssh_url: r.sshUrl },
      });
      const answered: (number | null)[] = [];
      for (const h of (hooks.get(repoId) ?? []).filter((x) => x.active && (x.events.includes('push') || x.events.includes('*')))) {
        const secret = o.secret ?? h.config.secret;
        const guid = randomUUID();
        const headers: Record<string, string> = { 'x-github-event': 'push', 'x-github-delivery': guid, 'x-github-hook-id': String(h.id) };
        if (secret) headers['x-hub-signature-256'] = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
        const status = await deliverHook(o.via ? o.via(h.config.url) : h.config.url, headers, body);
        h.deliveries.push({ id: nextId++, guid, delivered_at: new Date().toISOString(), status_code: status ?? 0, status: status === null ? 'failed to connect' : status < 300 ? 'OK' : 'Invalid HTTP Response', event: 'push' });
        answered.push(status);
      }
      return answered;
    },
    close: () => server.close(),
  };
}

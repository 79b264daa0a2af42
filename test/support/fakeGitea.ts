/**
 * Gitea's (and Forgejo's) REST API v1 as its sources define it (routers/api/v1: user/repo.go,
 * repo/repo.go GetByID, repo/hook.go, repo/key.go, repo/status.go; modules/structs), for the
 * parts Sluice's connections use. Every request or field they do not define is kept in
 * `problems` for the test to assert empty, and answered as Gitea answers: a bad token 401, a
 * repository's hooks and keys without its admin right 403, `limit` capped at 50, a hook not
 * `active` unless asked. Hooks are delivered for real: `push()` POSTs Gitea's push payload with
 * `X-Gitea-Event` and `X-Gitea-Signature` (the hex HMAC-SHA256 of the body with the secret).
 */
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { checkFields, checkQuery, deliverHook, paged, startSiteServer, type SiteReply } from './fakeSite';

export interface GiteaRepo {
  id: number;
  /** `owner/name` */
  fullName: string;
  sshUrl: string;
  defaultBranch: string;
  /** Rights by login. */
  access: Record<string, 'admin' | 'write' | 'read'>;
}

interface Hook {
  id: number;
  type: string;
  config: { url: string; content_type: string; secret?: string };
  events: string[];
  active: boolean;
}

export interface FakeGitea {
  apiUrl: string;
  problems: string[];
  requests: string[];
  hooksOf(repoId: number): Hook[];
  keysOf(repoId: number): { id: number; title: string; key: string; read_only: boolean }[];
  statuses: { repo: string; sha: string; state: string; context?: string }[];
  dropHook(repoId: number, hookId: number): void;
  rename(repoId: number, fullName: string, sshUrl: string): void;
  push(repoId: number, push: { ref: string; before: string; after: string; message?: string }, opts?: { secret?: string; via?: (hookUrl: string) => string }): Promise<(number | null)[]>;
  onKeys?: (keys: string[]) => void;
  close(): Promise<void>;
}

const PUSH = JSON.parse(readFileSync(path.join(__dirname, '../fixtures/providers/gitea/push.json'), 'utf8')) as Record<string, unknown>;
const LIMIT = 50;
const HOOK_EVENTS = ['create', 'delete', 'fork', 'push', 'issues', 'issues_only', 'issue_assign', 'issue_label', 'issue_milestone', 'issue_comment', 'pull_request', 'pull_request_only', 'pull_request_assign', 'pull_request_label', 'pull_request_milestone', 'pull_request_comment', 'pull_request_review', 'pull_request_review_request', 'pull_request_sync', 'wiki', 'repository', 'release'];

export async function startFakeGitea(opts: { tokens: Record<string, string>; repos: GiteaRepo[] }): Promise<FakeGitea> {
  const hooks = new Map<number, Hook[]>();
  const keys = new Map<number, { id: number; key_id: number; title: string; key: string; read_only: boolean; fingerprint: string; created_at: string }[]>();
  const statuses: FakeGitea['statuses'] = [];
  let nextId = 200;

  const view = (r: GiteaRepo, login: string) => ({
    id: r.id,
    owner: { id: 1, login: r.fullName.split('/')[0] },
    name: r.fullName.split('/')[1],
    full_name: r.fullName,
    private: true,
    ssh_url: r.sshUrl,
    clone_url: `https://gitea.test/${r.fullName}.git`,
    html_url: `https://gitea.test/${r.fullName}`,
    default_branch: r.defaultBranch,
    permissions: { admin: r.access[login] === 'admin', push: r.access[login] !== 'read', pull: true },
  });
  const notFound: SiteReply = { status: 404, body: { message: 'The target couldn\'t be found.', url: 'https://gitea.test/api/swagger', errors: [] } };
  const emitKeys = () => fake.onKeys?.([...keys.values()].flat().map((k) => k.key));

  const server = await startSiteServer((req, expect) => {
    const { method, url } = req;
    if (!url.pathname.startsWith('/api/v1/')) return notFound;
    const route = url.pathname.slice('/api/v1'.length);
    // services/auth/oauth2.go: `Authorization: token <t>` (or Bearer).
    const token = /^(?:token|[Bb]earer) (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    const login = token ? opts.tokens[token] : undefined;
    if (!login) return { status: 401, body: { message: 'token is required', url: 'https://gitea.test/api/swagger' } };
    const limit = Math.min(Number(url.searchParams.get('limit') ?? 30) || 30, LIMIT);
    const page = Number(url.searchParams.get('page') ?? 1) || 1;

    if (method === 'GET' && route === '/user') return { status: 200, body: { id: 1, login, full_name: login, email: `${login}@gitea.test` } };
    if (method === 'GET' && route === '/user/repos') {
      checkQuery(expect, 'GET /user/repos', url, ['page', 'limit']);
      const mine = opts.repos.filter((r) => r.access[login]);
      return paged(url, mine.map((r) => view(r, login)), limit, page, server.base);
    }
    const byId = /^\/repositories\/([0-9]+)$/.exec(route);
    if (byId && method === 'GET') {
      const r = opts.repos.find((x) => x.id === Number(byId[1]) && x.access[login]);
      return r ? { status: 200, body: view(r, login) } : notFound;
    }
    const m = /^\/repos\/([^/]+)\/([^/]+)(\/.*)$/.exec(route);
    if (!m) return notFound;
    const repo = opts.repos.find((r) => r.fullName === `${decodeURIComponent(m[1]!)}/${decodeURIComponent(m[2]!)}` && r.access[login]);
    if (!repo) return notFound;
    const rest = m[3]!;
    const admin = repo.access[login] === 'admin';
    const forbidden: SiteReply = { status: 403, body: { message: 'user should be an owner or a collaborator with admin write of a repository', url: 'https://gitea.test/api/swagger' } };
    // Lists are not paged by Link here: X-Total-Count only.
    const list = <T>(items: T[]): SiteReply => {
      checkQuery(expect, `GET ${rest}`, url, ['page', 'limit']);
      const r = paged(url, items, limit, page, server.base);
      delete r.headers!.link;
      return r;
    };

    const hm = /^\/hooks(?:\/([0-9]+))?$/.exec(rest);
    if (hm) {
      if (!admin) return forbidden;
      const all = hooks.get(repo.id) ?? [];
      const hook = hm[1] ? all.find((h) => h.id === Number(hm[1])) : undefined;
      if (hm[1] && !hook) return notFound;
      const shown = (h: Hook) => ({ id: h.id, type: h.type, branch_filter: '', config: { url: h.config.url, content_type: h.config.content_type }, events: h.events, authorization_header: '', active: h.active, created_at: '2026-01-01T00:00:00Z', updated_at: '2026-01-01T00:00:00Z' });
      if (method === 'GET' && !hm[1]) return list(all.map(shown));
      if (method === 'GET') return { status: 200, body: shown(hook!) };
      if (method === 'DELETE' && hook) {
        hooks.set(repo.id, all.filter((h) => h !== hook));
        return { status: 204 };
      }
      if (method === 'POST' && !hm[1]) {
        const b = checkFields(expect, 'POST /repos/:owner/:repo/hooks', req.body, ['type', 'config', 'events', 'branch_filter', 'authorization_header', 'active'], ['type', 'config']);
        expect('POST hooks: type', ['gitea', 'forgejo', 'gogs', 'slack', 'discord', 'dingtalk', 'telegram', 'msteams', 'feishu', 'matrix', 'wechatwork', 'packagist'].includes(String(b.type)));
        const config = (b.config ?? {}) as Record<string, unknown>;
        for (const k of Object.keys(config)) expect(`POST hooks: config.${k}`, ['url', 'content_type', 'secret', 'http_method', 'is_system_webhook'].includes(k) && typeof config[k] === 'string');
        if (typeof config.url !== 'string') return { status: 422, body: { message: 'Missing config option: url' } };
        if (config.content_type !== 'json' && config.content_type !== 'form') return { status: 422, body: { message: 'Invalid content type' } };
        const events = (b.events as string[] | undefined) ?? [];
        for (const e of events) expect(`POST hooks: event ${e}`, HOOK_EVENTS.includes(e));
        const h: Hook = { id: nextId++, type: String(b.type), config: { url: config.url, content_type: config.content_type, secret: config.secret as string | undefined }, events: events.length ? events : ['push'], active: b.active === true };
        hooks.set(repo.id, [...all, h]);
        return { status: 201, body: shown(h) };
      }
      return { status: 405, body: { message: 'Method Not Allowed' } };
    }

    const km = /^\/keys(?:\/([0-9]+))?$/.exec(rest);
    if (km) {
      if (!admin) return forbidden;
      const all = keys.get(repo.id) ?? [];
      const key = km[1] ? all.find((k) => k.id === Number(km[1])) : undefined;
      if (method === 'GET' && !km[1]) return list(all);
      if (method === 'GET') return key ? { status: 200, body: key } : notFound;
      // services/asymkey/deploy_key.go: deleting a key that is not there is no error.
      if (method === 'DELETE' && km[1]) {
        keys.set(repo.id, all.filter((k) => k !== key));
        emitKeys();
        return { status: 204 };
      }
      if (method === 'POST' && !km[1]) {
        const b = checkFields(expect, 'POST /repos/:owner/:repo/keys', req.body, ['title', 'key', 'read_only'], ['title', 'key']);
        if (typeof b.key !== 'string' || !/^ssh-(ed25519|rsa) [A-Za-z0-9+/=]+/.test(b.key)) return { status: 422, body: { message: 'Invalid key content' } };
        const body = b.key.split(' ').slice(0, 2).join(' ');
        if (all.some((k) => k.key === body)) return { status: 422, body: { message: 'This key has already been added to this repository' } };
        const k = { id: nextId++, key_id: nextId++, title: String(b.title), key: body, read_only: b.read_only === true, fingerprint: 'SHA256:x', created_at: new Date().toISOString() };
        keys.set(repo.id, [...all, k]);
        emitKeys();
        return { status: 201, body: k };
      }
      return { status: 405, body: { message: 'Method Not Allowed' } };
    }

    const sm = /^\/statuses\/([0-9a-f]{40})$/.exec(rest);
    if (sm && method === 'POST') {
      if (repo.access[login] === 'read') return forbidden;
      const b = checkFields(expect, 'POST /repos/:owner/:repo/statuses/:sha', req.body, ['state', 'target_url', 'description', 'context'], ['state']);
      expect('POST statuses: state', ['pending', 'success', 'error', 'failure', 'warning'].includes(String(b.state)));
      statuses.push({ repo: repo.fullName, sha: sm[1]!, state: String(b.state), context: b.context as string | undefined });
      return { status: 201, body: { id: nextId++, status: b.state, context: b.context } };
    }
    return notFound;
  });

  const fake: FakeGitea = {
    apiUrl: `${server.base}/api/v1`,
    problems: server.problems,
    requests: server.requests,
    hooksOf: (id) => hooks.get(id) ?? [],
    keysOf: (id) => keys.get(id) ?? [],
    statuses,
    dropHook(repoId, hookId) {
      hooks.set(repoId, (hooks.get(repoId) ?? []).filter((h) => h.id !== hookId));
    },
    rename(repoId, fullName, sshUrl) {
      const r = opts.repos.find((x) => x.id === repoId)!;
      r.fullName = fullName;
      r.sshUrl = sshUrl;
    },
    async push(repoId, push, o = {}) {
      const r = opts.repos.find((x) => x.id === repoId)!;
      const body = JSON.stringify({
        ...PUSH,
        ref: push.ref,
        before: push.before,
        after: push.after,
        commits: [{ ...(PUSH.commits as object[])[0], id: push.after, message: push.message ?? 'a change' }],
        head_commit: { ...(PUSH.head_commit as object), id: push.after, message: push.message ?? 'a change' },
        total_commits: 1,
        repository: { ...(PUSH.repository as object), id: r.id, full_name: r.fullName, ssh_url: r.sshUrl, default_branch: r.defaultBranch },
      });
      const answered: (number | null)[] = [];
      for (const h of (hooks.get(repoId) ?? []).filter((x) => x.active && x.events.includes('push'))) {
        // services/webhook/deliver.go: the hex HMAC-SHA256 of the body, keyed with the secret.
        const secret = o.secret ?? h.config.secret ?? '';
        const signature = createHmac('sha256', secret).update(body).digest('hex');
        answered.push(await deliverHook(o.via ? o.via(h.config.url) : h.config.url, { 'x-gitea-event': 'push', 'x-gitea-event-type': 'push', 'x-gitea-signature': signature, 'x-hub-signature-256': `sha256=${signature}` }, body));
      }
      return answered;
    },
    close: () => server.close(),
  };
  return fake;
}

/**
 * GitLab's REST API v4 as its documentation describes it (docs.gitlab.com/api: projects.md,
 * project_webhooks.md, deploy_keys.md, users.md, commits.md's statuses, rest/_index.md's
 * pagination and errors), for the parts Sluice's connections use. It cannot be the real GitLab
 * (no internet here), so every request or field the documentation does not define is kept in
 * `problems`, for the test to assert empty, and answered as GitLab answers it: a bad token 401,
 * a role below Maintainer 403, a `read_api` token writing 403, an unknown project or hook 404.
 * Its hooks are delivered for real: `push()` POSTs GitLab's push payload, with `X-Gitlab-Token`,
 * to every hook of the project and logs each delivery as the hook events API shows it.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { checkFields, checkQuery, deliverHook, paged, startSiteServer, type SiteReply } from './fakeSite';

export interface GitLabProject {
  id: number;
  /** `group/name` */
  path: string;
  sshUrl: string;
  defaultBranch: string;
  /** Access levels by username (40 Maintainer, 30 Developer, ...). */
  members: Record<string, number>;
}

interface Hook {
  id: number;
  url: string;
  token?: string;
  push_events: boolean;
  tag_push_events: boolean;
  merge_requests_events: boolean;
  enable_ssl_verification: boolean;
  created_at: string;
}

interface Event {
  id: number;
  url: string;
  trigger: string;
  response_status: string;
  created_at: string;
}

export interface FakeGitLab {
  apiUrl: string;
  problems: string[];
  requests: string[];
  projects: GitLabProject[];
  hooksOf(projectId: number): Hook[];
  keysOf(projectId: number): { id: number; title: string; key: string; can_push: boolean }[];
  /** Commit statuses posted, in order. */
  statuses: { projectId: number; sha: string; state: string; name?: string; target_url?: string }[];
  /** Someone deletes a hook at GitLab (to test repair). */
  dropHook(projectId: number, hookId: number): void;
  /** The project is renamed or moved: its path (and SSH URL) change, its id stays. */
  rename(projectId: number, newPath: string, newSshUrl: string): void;
  /** Delivers a push of `after` on `ref` to every hook of the project, as GitLab does; the status each hook answered. */
  push(
    projectId: number,
    push: { ref: string; before: string; after: string; message?: string },
    opts?: { token?: string; via?: (hookUrl: string) => string },
  ): Promise<(number | null)[]>;
  /** Called with every deploy key of every project whenever they change (the SSH server authorizes them). */
  onKeys?: (keys: string[]) => void;
  close(): Promise<void>;
}

const PUSH = JSON.parse(readFileSync(path.join(__dirname, '../fixtures/providers/gitlab/push.json'), 'utf8')) as Record<string, unknown>;

export async function startFakeGitLab(opts: { tokens: Record<string, { username: string; scopes: ('api' | 'read_api')[] }>; projects: GitLabProject[] }): Promise<FakeGitLab> {
  const hooks = new Map<number, Hook[]>();
  const keys = new Map<number, { id: number; title: string; key: string; can_push: boolean; created_at: string }[]>();
  const events = new Map<number, Event[]>();
  const statuses: FakeGitLab['statuses'] = [];
  let nextId = 100;

  const projectOf = (ref: string) => opts.projects.find((p) => String(p.id) === ref || p.path === decodeURIComponent(ref));
  const view = (p: GitLabProject, user: string) => ({
    id: p.id,
    description: null,
    name: p.path.split('/').at(-1),
    path: p.path.split('/').at(-1),
    path_with_namespace: p.path,
    default_branch: p.defaultBranch,
    ssh_url_to_repo: p.sshUrl,
    http_url_to_repo: `https://gitlab.test/${p.path}.git`,
    web_url: `https://gitlab.test/${p.path}`,
    namespace: { id: 1, name: p.path.split('/')[0], path: p.path.split('/')[0], kind: 'group', full_path: p.path.split('/').slice(0, -1).join('/') },
    permissions: { project_access: p.members[user] ? { access_level: p.members[user], notification_level: 3 } : null, group_access: null },
  });
  const notFound = (what: string): SiteReply => ({ status: 404, body: { message: `404 ${what} Not Found` } });
  const forbidden: SiteReply = { status: 403, body: { message: '403 Forbidden' } };
  const emitKeys = () => fake.onKeys?.([...keys.values()].flat().map((k) => k.key));

  const server = await startSiteServer((req, expect) => {
    const { method, url } = req;
    if (!url.pathname.startsWith('/api/v4/')) return { status: 404, body: { message: '404 Not Found' } };
    const route = url.pathname.slice('/api/v4'.length);
    // docs/api/rest/authentication.md: PRIVATE-TOKEN, or a Bearer token.
    const token = (req.headers['private-token'] as string | undefined) ?? /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    const who = token ? opts.tokens[token] : undefined;
    if (!who) return { status: 401, body: { message: '401 Unauthorized' } };
    // A read_api token may only read (rest/authentication.md, personal_access_tokens.md).
    if (method !== 'GET' && !who.scopes.includes('api')) {
      return { status: 403, body: { error: 'insufficient_scope', error_description: 'The request requires higher privileges than provided by the access token.', scope: 'api' } };
    }
    const perPage = Number(url.searchParams.get('per_page') ?? 20);
    const page = Number(url.searchParams.get('page') ?? 1);
    expect(`${route}: per_page 1..100`, perPage >= 1 && perPage <= 100);

    if (method === 'GET' && route === '/user') {
      checkQuery(expect, 'GET /user', url, []);
      return { status: 200, body: { id: 1, username: who.username, name: who.username, state: 'active', web_url: `https://gitlab.test/${who.username}`, bot: false } };
    }
    if (method === 'GET' && route === '/projects') {
      checkQuery(expect, 'GET /projects', url, ['min_access_level', 'membership', 'simple', 'order_by', 'sort', 'per_page', 'page', 'archived', 'search']);
      const min = Number(url.searchParams.get('min_access_level') ?? 0);
      expect('GET /projects: min_access_level is a documented level', [0, 5, 10, 15, 20, 30, 40, 50].includes(min));
      // Without a filter GitLab lists every visible project; these are all private.
      const mine = opts.projects.filter((p) => (p.members[who.username] ?? 0) >= Math.max(min, 1)).sort((a, b) => a.id - b.id);
      return paged(url, mine.map((p) => view(p, who.username)), perPage, page, server.base);
    }
    const m = /^\/projects\/([^/]+)(\/.*)?$/.exec(route);
    if (!m) return { status: 404, body: { message: '404 Not Found' } };
    const project = projectOf(m[1]!);
    const level = project?.members[who.username] ?? 0;
    if (!project || level === 0) return notFound('Project');
    const rest = m[2] ?? '';
    const pid = project.id;

    if (method === 'GET' && rest === '') return { status: 200, body: view(project, who.username) };

    // project_webhooks.md: Maintainer or administrator.
    if (rest.startsWith('/hooks')) {
      if (level < 40) return forbidden;
      const list = hooks.get(pid) ?? [];
      const hm = /^\/hooks(?:\/([0-9]+))?(\/events)?$/.exec(rest);
      if (!hm) return { status: 404, body: { message: '404 Not Found' } };
      const hook = hm[1] ? list.find((h) => h.id === Number(hm[1])) : undefined;
      if (hm[1] && !hook) return { status: 404, body: { message: '404 Not found' } };
      const shown = (h: Hook) => ({ id: h.id, url: h.url, project_id: pid, push_events: h.push_events, tag_push_events: h.tag_push_events, merge_requests_events: h.merge_requests_events, enable_ssl_verification: h.enable_ssl_verification, created_at: h.created_at, alert_status: 'executable', disabled_until: null });
      if (hm[2]) {
        // GitLab 17.3: the hook's deliveries of the last 7 days, newest first; per_page at most 20.
        checkQuery(expect, 'GET hook events', url, ['status', 'per_page', 'page']);
        expect('GET hook events: per_page 1..20', perPage >= 1 && perPage <= 20);
        if (method !== 'GET') return { status: 405, body: { message: '405 Method Not Allowed' } };
        return paged(url, [...(events.get(hook!.id) ?? [])].reverse(), perPage, page, server.base);
      }
      if (method === 'GET' && !hm[1]) return paged(url, list.map(shown), perPage, page, server.base);
      if (method === 'GET') return { status: 200, body: shown(hook!) };
      if (method === 'DELETE' && hook) {
        hooks.set(pid, list.filter((h) => h !== hook));
        return { status: 204 };
      }
      if (method === 'POST' && !hm[1]) {
        const b = checkFields(
          expect,
          'POST /projects/:id/hooks',
          req.body,
          ['url', 'token', 'name', 'description', 'push_events', 'push_events_branch_filter', 'branch_filter_strategy', 'issues_events', 'confidential_issues_events', 'merge_requests_events', 'tag_push_events', 'note_events', 'confidential_note_events', 'job_events', 'pipeline_events', 'wiki_page_events', 'deployment_events', 'releases_events', 'enable_ssl_verification', 'custom_headers', 'custom_webhook_template'],
          ['url'],
        );
        for (const f of ['push_events', 'tag_push_events', 'merge_requests_events', 'enable_ssl_verification']) expect(`POST hooks: ${f} is a boolean`, b[f] === undefined || typeof b[f] === 'boolean');
        if (typeof b.url !== 'string' || !/^https?:\/\//.test(b.url)) return { status: 422, body: { message: { url: ['is blocked: Only allowed schemes are http, https'] } } };
        const h: Hook = {
          id: nextId++,
          url: b.url,
          token: b.token as string | undefined,
          push_events: (b.push_events as boolean | undefined) ?? true,
          tag_push_events: (b.tag_push_events as boolean | undefined) ?? false,
          merge_requests_events: (b.merge_requests_events as boolean | undefined) ?? false,
          enable_ssl_verification: (b.enable_ssl_verification as boolean | undefined) ?? true,
          created_at: new Date().toISOString(),
        };
        hooks.set(pid, [...list, h]);
        return { status: 201, body: shown(h) };
      }
      return { status: 405, body: { message: '405 Method Not Allowed' } };
    }

    // deploy_keys.md: Maintainer.
    if (rest.startsWith('/deploy_keys')) {
      if (level < 40) return forbidden;
      const list = keys.get(pid) ?? [];
      const km = /^\/deploy_keys(?:\/([0-9]+))?$/.exec(rest);
      if (!km) return { status: 404, body: { message: '404 Not Found' } };
      const key = km[1] ? list.find((k) => k.id === Number(km[1])) : undefined;
      if (km[1] && !key) return notFound('Deploy key');
      if (method === 'GET' && !km[1]) return paged(url, list, perPage, page, server.base);
      if (method === 'GET') return { status: 200, body: key };
      if (method === 'DELETE' && key) {
        keys.set(pid, list.filter((k) => k !== key));
        emitKeys();
        return { status: 204 };
      }
      if (method === 'POST' && !km[1]) {
        const b = checkFields(expect, 'POST /projects/:id/deploy_keys', req.body, ['key', 'title', 'can_push', 'expires_at'], ['key', 'title']);
        if (typeof b.key !== 'string' || !/^ssh-(ed25519|rsa) [A-Za-z0-9+/=]+/.test(b.key)) return { status: 400, body: { message: { key: ['is invalid'] } } };
        const same = list.find((k) => k.key.split(' ').slice(0, 2).join(' ') === (b.key as string).split(' ').slice(0, 2).join(' '));
        if (same) return { status: 201, body: same };
        const k = { id: nextId++, title: String(b.title), key: b.key, can_push: b.can_push === true, created_at: new Date().toISOString() };
        keys.set(pid, [...list, k]);
        emitKeys();
        return { status: 201, body: k };
      }
      return { status: 405, body: { message: '405 Method Not Allowed' } };
    }

    // commits.md "Set the pipeline status of a commit": Developer.
    const sm = /^\/statuses\/([0-9a-f]{40})$/.exec(rest);
    if (sm && method === 'POST') {
      if (level < 30) return forbidden;
      const b = checkFields(expect, 'POST /projects/:id/statuses/:sha', req.body, ['state', 'ref', 'name', 'context', 'target_url', 'description', 'coverage', 'pipeline_id'], ['state']);
      expect('POST statuses: state', ['pending', 'running', 'success', 'failed', 'canceled', 'skipped'].includes(String(b.state)));
      statuses.push({ projectId: pid, sha: sm[1]!, state: String(b.state), name: b.name as string | undefined, target_url: b.target_url as string | undefined });
      return { status: 201, body: { id: nextId++, sha: sm[1], status: b.state, name: b.name ?? 'default' } };
    }
    return { status: 404, body: { message: '404 Not Found' } };
  });

  const fake: FakeGitLab = {
    apiUrl: `${server.base}/api/v4`,
    problems: server.problems,
    requests: server.requests,
    projects: opts.projects,
    hooksOf: (id) => hooks.get(id) ?? [],
    keysOf: (id) => keys.get(id) ?? [],
    statuses,
    dropHook(projectId, hookId) {
      hooks.set(projectId, (hooks.get(projectId) ?? []).filter((h) => h.id !== hookId));
    },
    rename(projectId, newPath, newSshUrl) {
      const p = opts.projects.find((x) => x.id === projectId)!;
      p.path = newPath;
      p.sshUrl = newSshUrl;
    },
    async push(projectId, push, o = {}) {
      const p = opts.projects.find((x) => x.id === projectId)!;
      const body = JSON.stringify({
        ...PUSH,
        before: push.before,
        after: push.after,
        ref: push.ref,
        checkout_sha: push.after,
        project_id: p.id,
        project: { ...(PUSH.project as object), id: p.id, path_with_namespace: p.path, default_branch: p.defaultBranch, git_ssh_url: p.sshUrl },
        commits: [{ ...(PUSH.commits as object[])[0], id: push.after, message: push.message ?? 'a change', title: push.message ?? 'a change' }],
        total_commits_count: 1,
      });
      const answered: (number | null)[] = [];
      for (const h of (hooks.get(projectId) ?? []).filter((x) => x.push_events)) {
        // project_webhooks: the secret token goes as X-Gitlab-Token, as set (or as a forger sends it).
        const status = await deliverHook(o.via ? o.via(h.url) : h.url, { 'x-gitlab-event': 'Push Hook', ...((o.token ?? h.token) ? { 'x-gitlab-token': (o.token ?? h.token)! } : {}) }, body);
        const list = events.get(h.id) ?? [];
        list.push({ id: nextId++, url: h.url, trigger: 'push_hooks', response_status: status === null ? 'internal error' : String(status), created_at: new Date().toISOString() });
        events.set(h.id, list);
        answered.push(status);
      }
      return answered;
    },
    close: () => server.close(),
  };
  return fake;
}

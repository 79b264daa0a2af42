/**
 * Bitbucket Cloud's REST API 2.0 as Atlassian's OpenAPI document (swagger.v3.json) defines it,
 * for the parts Sluice's connections use: /user, /user/workspaces, a workspace's repositories
 * (`role=admin`, `q`), a repository by its UUIDs, its hooks and deploy keys, commit build
 * statuses. Every request or field the document does not define is kept in `problems` for the
 * test to assert empty; pages are `{values, next}` with `pagelen` 10..100; UUIDs in a path are
 * percent-encoded curly braces; errors are `{type: "error", error: {message}}`. Hooks are
 * delivered for real: `push()` POSTs Bitbucket's `repo:push` payload with `X-Event-Key` and
 * `X-Hub-Signature: sha256=<HMAC>` when the hook has a secret.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { checkFields, checkQuery, deliverHook, startSiteServer, type SiteReply } from './fakeSite';

export interface BitbucketRepo {
  uuid: string;
  workspace: { uuid: string; slug: string };
  slug: string;
  mainbranch: string;
  sshUrl: string;
  /** Rights by account nickname. */
  access: Record<string, 'admin' | 'write' | 'read'>;
}

interface Hook {
  uuid: string;
  url: string;
  description?: string;
  active: boolean;
  events: string[];
  secret?: string;
}

export interface FakeBitbucket {
  apiUrl: string;
  problems: string[];
  requests: string[];
  hooksOf(repoUuid: string): Hook[];
  keysOf(repoUuid: string): { id: number; key: string; label: string }[];
  statuses: { repo: string; sha: string; state: string; key: string }[];
  push(repoUuid: string, push: { branch: string; before: string; after: string; message?: string }, opts?: { secret?: string; via?: (hookUrl: string) => string }): Promise<(number | null)[]>;
  onKeys?: (keys: string[]) => void;
  close(): Promise<void>;
}

const PUSH = JSON.parse(readFileSync(path.join(__dirname, '../fixtures/providers/bitbucket/repo-push.json'), 'utf8')) as { push: { changes: Record<string, unknown>[] }; repository: Record<string, unknown> };
const HOOK_EVENTS = ['repo:push', 'repo:fork', 'repo:updated', 'repo:commit_comment_created', 'repo:commit_status_created', 'repo:commit_status_updated', 'pullrequest:created', 'pullrequest:updated', 'pullrequest:approved', 'pullrequest:unapproved', 'pullrequest:fulfilled', 'pullrequest:rejected', 'pullrequest:changes_request_created', 'pullrequest:changes_request_removed', 'pullrequest:comment_created', 'pullrequest:comment_updated', 'pullrequest:comment_deleted', 'pullrequest:push'];

/** `{user → {email, token}}`: Basic `email:token` (an API token), or a Bearer token. */
export async function startFakeBitbucket(opts: { users: Record<string, { email: string; token: string }>; repos: BitbucketRepo[] }): Promise<FakeBitbucket> {
  const hooks = new Map<string, Hook[]>();
  const keys = new Map<string, { id: number; key: string; label: string; comment: string; type: string; created_on: string }[]>();
  const statuses: FakeBitbucket['statuses'] = [];
  let nextId = 300;
  const error = (status: number, message: string): SiteReply => ({ status, body: { type: 'error', error: { message } } });

  const fullName = (r: BitbucketRepo) => `${r.workspace.slug}/${r.slug}`;
  const view = (r: BitbucketRepo) => ({
    type: 'repository',
    uuid: r.uuid,
    full_name: fullName(r),
    name: r.slug,
    is_private: true,
    scm: 'git',
    mainbranch: { type: 'branch', name: r.mainbranch },
    links: { html: { href: `https://bitbucket.test/${fullName(r)}` }, clone: [{ name: 'https', href: `https://bitbucket.test/${fullName(r)}.git` }, { name: 'ssh', href: r.sshUrl }] },
  });

  const server = await startSiteServer((req, expect) => {
    const { method, url } = req;
    if (!url.pathname.startsWith('/2.0/')) return error(404, 'Resource not found');
    const route = url.pathname.slice('/2.0'.length);
    const auth = req.headers.authorization ?? '';
    let who: string | undefined;
    if (auth.startsWith('Basic ')) {
      const [email, token] = Buffer.from(auth.slice(6), 'base64').toString('utf8').split(':');
      who = Object.entries(opts.users).find(([, u]) => u.email === email && u.token === token)?.[0];
    } else if (auth.startsWith('Bearer ')) {
      who = Object.entries(opts.users).find(([, u]) => u.token === auth.slice(7))?.[0];
    }
    if (!who) return error(401, 'Token is invalid, expired, or not supported for this endpoint.');
    const pagelen = Number(url.searchParams.get('pagelen') ?? 10);
    expect(`${route}: pagelen 10..100`, pagelen >= 10 && pagelen <= 100);
    const page = Number(url.searchParams.get('page') ?? 1);
    const pageOf = <T>(items: T[]): SiteReply => {
      const body: Record<string, unknown> = { size: items.length, page, pagelen, values: items.slice((page - 1) * pagelen, page * pagelen) };
      if (page * pagelen < items.length) {
        const next = new URL(`${server.base}${url.pathname}${url.search}`);
        next.searchParams.set('page', String(page + 1));
        body.next = next.href;
      }
      return { status: 200, body };
    };

    if (method === 'GET' && route === '/user') return { status: 200, body: { type: 'user', uuid: `{${who.length}0000000-0000-4000-8000-000000000000}`, nickname: who, display_name: who, account_id: `acc-${who}` } };
    if (method === 'GET' && route === '/user/workspaces') {
      checkQuery(expect, 'GET /user/workspaces', url, ['pagelen', 'page', 'q', 'sort', 'administrator']);
      const mine = new Map(opts.repos.filter((r) => r.access[who!]).map((r) => [r.workspace.uuid, r.workspace]));
      return pageOf([...mine.values()].map((w) => ({ type: 'workspace_access', administrator: false, workspace: { type: 'workspace', ...w } })));
    }
    // Paths name workspaces and repositories by slug or by {UUID}.
    const matches = (r: BitbucketRepo, ws: string, repo?: string) =>
      (ws === r.workspace.uuid || ws === r.workspace.slug) && (repo === undefined || repo === r.uuid || repo === r.slug);
    const wm = /^\/repositories\/([^/]+)$/.exec(route);
    if (wm && method === 'GET') {
      checkQuery(expect, 'GET /repositories/{workspace}', url, ['role', 'q', 'sort', 'pagelen', 'page']);
      const ws = decodeURIComponent(wm[1]!);
      const role = url.searchParams.get('role');
      expect('GET /repositories/{workspace}: role', role === null || ['member', 'contributor', 'admin', 'owner'].includes(role));
      const q = url.searchParams.get('q');
      const uuid = q ? /^uuid="(\{[0-9a-f-]{36}\})"$/.exec(q)?.[1] : undefined;
      expect(`GET /repositories/{workspace}: q ${q}`, q === null || uuid !== undefined);
      const listed = opts.repos.filter((r) => matches(r, ws) && r.access[who!] && (role !== 'admin' || r.access[who!] === 'admin') && (uuid === undefined || r.uuid === uuid));
      return pageOf(listed.map(view));
    }
    const rm = /^\/repositories\/([^/]+)\/([^/]+)(\/.*)?$/.exec(route);
    if (!rm) return error(404, 'Resource not found');
    const repo = opts.repos.find((r) => matches(r, decodeURIComponent(rm[1]!), decodeURIComponent(rm[2]!)) && r.access[who!]);
    if (!repo) return error(404, 'You may not have access to this repository or it no longer exists in this workspace.');
    const rest = rm[3] ?? '';
    if (method === 'GET' && rest === '') return { status: 200, body: view(repo) };
    const admin = repo.access[who] === 'admin';
    const forbidden = error(403, 'Your credentials lack one or more required privilege scopes.');

    const hm = /^\/hooks(?:\/([^/]+))?$/.exec(rest);
    if (hm) {
      if (!admin) return forbidden;
      const all = hooks.get(repo.uuid) ?? [];
      const uid = hm[1] ? decodeURIComponent(hm[1]) : undefined;
      const hook = uid ? all.find((h) => h.uuid === uid) : undefined;
      const shown = (h: Hook) => ({ type: 'webhook_subscription', uuid: h.uuid, url: h.url, description: h.description, subject_type: 'repository', active: h.active, events: h.events, secret_set: Boolean(h.secret), created_at: '2026-01-01T00:00:00Z' });
      if (uid && !hook) return error(404, 'Resource not found');
      if (method === 'GET' && !uid) return pageOf(all.map(shown));
      if (method === 'GET') return { status: 200, body: shown(hook!) };
      if (method === 'DELETE' && hook) {
        hooks.set(repo.uuid, all.filter((h) => h !== hook));
        return { status: 204 };
      }
      if (method === 'POST' && !uid) {
        const b = checkFields(expect, 'POST hooks', req.body, ['description', 'url', 'active', 'events', 'secret'], ['url', 'events']);
        const events = (b.events as string[] | undefined) ?? [];
        expect('POST hooks: events', events.length > 0 && events.every((e) => HOOK_EVENTS.includes(e)));
        expect('POST hooks: secret at most 128 characters', b.secret === undefined || (typeof b.secret === 'string' && b.secret.length <= 128));
        const h: Hook = { uuid: `{${randomUUID()}}`, url: String(b.url), description: b.description as string | undefined, active: b.active !== false, events, secret: (b.secret as string | undefined) || undefined };
        hooks.set(repo.uuid, [...all, h]);
        return { status: 201, body: shown(h), headers: { location: `${server.base}/2.0/repositories/${repo.workspace.slug}/${repo.slug}/hooks/${encodeURIComponent(h.uuid)}` } };
      }
      return error(405, 'Method not allowed');
    }

    const km = /^\/deploy-keys(?:\/([0-9]+))?$/.exec(rest);
    if (km) {
      if (!admin) return forbidden;
      const all = keys.get(repo.uuid) ?? [];
      const key = km[1] ? all.find((k) => k.id === Number(km[1])) : undefined;
      if (km[1] && !key) return error(404, 'Resource not found');
      if (method === 'GET' && !km[1]) return pageOf(all);
      if (method === 'GET') return { status: 200, body: key };
      if (method === 'DELETE' && key) {
        keys.set(repo.uuid, all.filter((k) => k !== key));
        fake.onKeys?.([...keys.values()].flat().map((k) => k.key));
        return { status: 204 };
      }
      if (method === 'POST' && !km[1]) {
        const b = checkFields(expect, 'POST deploy-keys', req.body, ['key', 'label'], ['key']);
        const parts = String(b.key ?? '').split(' ');
        if (!/^ssh-(ed25519|rsa)$/.test(parts[0] ?? '') || !parts[1]) return error(400, 'Invalid deploy key inputs');
        // Bitbucket keeps the key without its comment, the comment apart.
        const k = { id: nextId++, key: `${parts[0]} ${parts[1]}`, comment: parts.slice(2).join(' '), label: String(b.label ?? ''), type: 'deploy_key', created_on: new Date().toISOString() };
        keys.set(repo.uuid, [...all, k]);
        fake.onKeys?.([...keys.values()].flat().map((x) => x.key));
        return { status: 200, body: k };
      }
      return error(405, 'Method not allowed');
    }

    const sm = /^\/commit\/([0-9a-f]{40})\/statuses\/build$/.exec(rest);
    if (sm && method === 'POST') {
      if (repo.access[who] === 'read') return forbidden;
      const b = checkFields(expect, 'POST statuses/build', req.body, ['key', 'state', 'name', 'url', 'description', 'refname', 'type'], ['key', 'state', 'url']);
      statuses.push({ repo: fullName(repo), sha: sm[1]!, state: String(b.state), key: String(b.key) });
      return { status: 201, body: { type: 'build', key: b.key, state: b.state } };
    }
    return error(404, 'Resource not found');
  });

  const fake: FakeBitbucket = {
    apiUrl: `${server.base}/2.0`,
    problems: server.problems,
    requests: server.requests,
    hooksOf: (uuid) => hooks.get(uuid) ?? [],
    keysOf: (uuid) => keys.get(uuid) ?? [],
    statuses,
    async push(repoUuid, push, o = {}) {
      const r = opts.repos.find((x) => x.uuid === repoUuid)!;
      const change = PUSH.push.changes[0]!;
      const target = (hash: string, message: string) => ({ ...((change.new as { target: object }).target), hash, message });
      const body = JSON.stringify({
        ...PUSH,
        push: {
          changes: [
            {
              ...change,
              old: { ...(change.old as object), name: push.branch, target: target(push.before, 'before') },
              new: { ...(change.new as object), name: push.branch, target: target(push.after, push.message ?? 'a change') },
              commits: [target(push.after, push.message ?? 'a change')],
            },
          ],
        },
        repository: { ...PUSH.repository, uuid: r.uuid, full_name: fullName(r), name: r.slug },
      });
      const answered: (number | null)[] = [];
      for (const h of (hooks.get(repoUuid) ?? []).filter((x) => x.active && x.events.includes('repo:push'))) {
        const secret = o.secret ?? h.secret;
        const headers: Record<string, string> = { 'x-event-key': 'repo:push', 'x-request-uuid': randomUUID(), 'x-hook-uuid': h.uuid };
        if (secret) headers['x-hub-signature'] = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
        answered.push(await deliverHook(o.via ? o.via(h.url) : h.url, headers, body));
      }
      return answered;
    },
    close: () => server.close(),
  };
  return fake;
}

/**
 * GitHub as a GitHub App sees it, held to docs.github.com (REST 2022-11-28): the manifest flow
 * ("Registering a GitHub App from a manifest": the browser POSTs `manifest` to
 * `/settings/apps/new` or `/organizations/:org/settings/apps/new`, GitHub redirects to its
 * `redirect_url` with `code` and `state`; `POST /app-manifests/{code}/conversions`, once),
 * installing it (`/apps/:slug/installations/new`: the `installation` event, then the `setup_url`),
 * JWTs checked as GitHub checks them (RS256 with the app's key, `iat`/`exp` at most 10 minutes
 * apart, `iss` the app), `POST /app/installations/{id}/access_tokens` scoped to repositories and
 * permissions, `GET /repos/{owner}/{repo}`, check runs (`POST`, `PATCH`, at most 50 annotations a
 * request), and clones over smart HTTP (`git http-backend`) for installation tokens that may read
 * the repository's contents. The API is under `/api/v3`, as on GitHub Enterprise Server.
 * Anything the documentation does not define goes to `problems`.
 */
import { spawn } from 'node:child_process';
import { createHmac, createPublicKey, createVerify, generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { checkFields } from './fakeSite';

export interface AppRepo {
  id: number;
  fullName: string;
  defaultBranch: string;
  /** The bare repository clones are served from (none: the repository cannot be cloned). */
  bare?: string;
}

export interface CheckRun {
  id: number;
  repo: string;
  name: string;
  head_sha: string;
  status: string;
  conclusion?: string;
  details_url?: string;
  external_id?: string;
  output?: { title?: string; summary?: string };
  annotations: { path: string; start_line: number; end_line: number; annotation_level: string; message: string; title?: string }[];
  /** Every body sent for it, in order. */
  requests: Record<string, unknown>[];
}

interface Token {
  installationId: number;
  repositoryIds: number[];
  permissions: Record<string, string>;
  expires: number;
}

interface App {
  id: number;
  slug: string;
  clientId: string;
  webhookSecret: string;
  publicKeyPem: string;
  pem: string;
  manifest: Record<string, unknown>;
}

export interface FakeGitHubApp {
  /** GitHub's web address (an Enterprise Server's: the API is at `<webUrl>/api/v3`). */
  webUrl: string;
  problems: string[];
  requests: string[];
  app(): App | undefined;
  checkRuns: CheckRun[];
  /** Tokens minted, and the clones each made. */
  tokens: Map<string, Token>;
  clones: { token: string; repo: string }[];
  /** Installs the app on `account` with these repositories: the `installation` event (its status, Sluice's answer). */
  install(account: string, repoIds: number[]): Promise<{ installationId: number; status: number | null }>;
  /** Adds repositories to an installation: `installation_repositories` `added`. */
  addRepos(installationId: number, repoIds: number[]): Promise<number | null>;
  /** A push delivered to the app's webhook, signed with `secret` (default the app's). */
  push(repoId: number, push: { ref: string; before: string; after: string }, o?: { secret?: string }): Promise<number | null>;
  /** Where deliveries go (Sluice's baseUrl may not be where it listens). */
  via: (url: string) => string;
  close(): Promise<void>;
}

const MANIFEST_FIELDS = ['name', 'url', 'hook_attributes', 'redirect_url', 'callback_urls', 'setup_url', 'description', 'public', 'default_events', 'default_permissions', 'request_oauth_on_install', 'setup_on_update'];
const APP_EVENTS = ['check_run', 'check_suite', 'create', 'delete', 'deployment', 'fork', 'issues', 'issue_comment', 'pull_request', 'pull_request_review', 'push', 'release', 'repository', 'status', 'workflow_run'];
const PERMISSIONS = ['actions', 'administration', 'checks', 'contents', 'deployments', 'issues', 'metadata', 'pull_requests', 'statuses', 'workflows'];
const CHECK_RUN_FIELDS = ['name', 'head_sha', 'details_url', 'external_id', 'status', 'started_at', 'conclusion', 'completed_at', 'output', 'actions'];
const CONCLUSIONS = ['action_required', 'cancelled', 'failure', 'neutral', 'success', 'skipped', 'stale', 'timed_out'];

export async function startFakeGitHubApp(opts: { repos: AppRepo[]; via?: (url: string) => string }): Promise<FakeGitHubApp> {
  const problems: string[] = [];
  const requests: string[] = [];
  const expect = (what: string, ok: boolean) => {
    if (!ok) problems.push(what);
    return ok;
  };
  let app: App | undefined;
  const codes = new Map<string, Record<string, unknown>>();
  const installations = new Map<number, { account: string; repoIds: number[] }>();
  const tokens = new Map<string, Token>();
  const checkRuns: CheckRun[] = [];
  const clones: { token: string; repo: string }[] = [];
  const deliveries: Record<string, unknown>[] = [];
  let nextId = 7000;
  const via = opts.via ?? ((u: string) => u);
  let base = '';

  const repoById = (id: number) => opts.repos.find((r) => r.id === id);
  const repoJson = (r: AppRepo) => ({
    id: r.id,
    node_id: `R_${r.id}`,
    name: r.fullName.split('/')[1],
    full_name: r.fullName,
    private: true,
    owner: { login: r.fullName.split('/')[0], id: 1, type: 'Organization' },
    html_url: `${base}/${r.fullName}`,
    clone_url: `${base}/${r.fullName}.git`,
    default_branch: r.defaultBranch,
  });

  /** The app a JWT proves, or why not. */
  const jwtApp = (authorization: string | undefined): string | null => {
    const jwt = /^Bearer (.+)$/.exec(authorization ?? '')?.[1];
    if (!jwt || !app) return 'no JWT';
    const [head, body, sig] = jwt.split('.');
    if (!head || !body || !sig) return 'not a JWT';
    const header = JSON.parse(Buffer.from(head, 'base64url').toString()) as { alg?: string };
    if (header.alg !== 'RS256') return 'alg must be RS256';
    if (!createVerify('RSA-SHA256').update(`${head}.${body}`).verify(createPublicKey(app.publicKeyPem), Buffer.from(sig, 'base64url'))) return 'signature';
    const claims = JSON.parse(Buffer.from(body, 'base64url').toString()) as { iat?: number; exp?: number; iss?: unknown };
    const now = Date.now() / 1000;
    if (typeof claims.iat !== 'number' || typeof claims.exp !== 'number') return 'iat and exp are required';
    if (claims.exp - claims.iat > 600) return 'exp more than 10 minutes after iat';
    if (claims.exp < now || claims.iat > now + 60) return 'expired or not yet valid';
    if (String(claims.iss) !== String(app.id) && claims.iss !== app.clientId) return 'iss is not the app';
    return null;
  };

  const tokenOf = (authorization: string | undefined): [string, Token] | null => {
    const t = /^(?:Bearer|token) (.+)$/.exec(authorization ?? '')?.[1] ?? '';
    const found = tokens.get(t);
    return found && found.expires > Date.now() ? [t, found] : null;
  };

  const deliver = async (event: string, payload: unknown, secret?: string): Promise<number | null> => {
    if (!app) throw new Error('no app yet');
    const body = JSON.stringify(payload);
    const hookUrl = (app.manifest.hook_attributes as { url: string }).url;
    const headers = {
      'content-type': 'application/json',
      'x-github-event': event,
      'x-github-delivery': randomUUID(),
      'x-github-hook-installation-target-type': 'integration',
      'x-github-hook-installation-target-id': String(app.id),
      'x-hub-signature-256': `sha256=${createHmac('sha256', secret ?? app.webhookSecret).update(body).digest('hex')}`,
    };
    let status: number | null;
    try {
      const res = await fetch(via(hookUrl), { method: 'POST', headers, body });
      await res.arrayBuffer();
      status = res.status;
    } catch {
      status = null;
    }
    const p = payload as { action?: string; installation?: { id?: number } };
    deliveries.push({ id: nextId++, guid: headers['x-github-delivery'], delivered_at: new Date().toISOString(), redelivery: false, duration: 0.01, status: status === null ? 'failed to connect' : status < 300 ? 'OK' : 'Invalid HTTP Response', status_code: status ?? 0, event, action: p.action ?? null, installation_id: p.installation?.id ?? null, repository_id: null });
    return status;
  };

  type Reply = { status: number; body?: unknown; headers?: Record<string, string> };
  const json = (status: number, body?: unknown): Reply => ({ status, body });
  const notFound = json(404, { message: 'Not Found', documentation_url: 'https://docs.github.com/rest' });

  const api = (method: string, p: string, url: URL, headers: http.IncomingHttpHeaders, raw: string): Reply => {
    expect(`${p}: Accept: application/vnd.github+json`, headers.accept === 'application/vnd.github+json');
    expect(`${p}: X-GitHub-Api-Version`, headers['x-github-api-version'] === '2022-11-28');
    if (!headers['user-agent']) return json(403, { message: 'Request forbidden by administrative rules.' });
    let body: Record<string, unknown> = {};
    if (raw !== '') {
      expect(`${method} ${p}: content-type application/json`, (headers['content-type'] ?? '').startsWith('application/json'));
      body = JSON.parse(raw) as Record<string, unknown>;
    }
    let m: RegExpExecArray | null;
    if (method === 'POST' && (m = /^\/app-manifests\/([^/]+)\/conversions$/.exec(p))) {
      expect('conversions: no body', raw === '');
      const manifest = codes.get(m[1]!);
      if (!manifest) return notFound;
      codes.delete(m[1]!);
      const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const slug = String(manifest.name).toLowerCase().replace(/[^a-z0-9]+/g, '-');
      app = {
        id: 4242,
        slug,
        clientId: 'Iv1.fakeclient0001',
        webhookSecret: randomBytes(20).toString('hex'),
        publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
        pem: privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(),
        manifest,
      };
      return json(201, {
        id: app.id,
        slug,
        node_id: 'A_1',
        owner: { login: 'acme', id: 1, type: 'Organization' },
        name: manifest.name,
        description: manifest.description,
        external_url: manifest.url,
        html_url: `${base}/apps/${slug}`,
        created_at: new Date().toISOString(),
        updated_at: new Date().toISOString(),
        permissions: manifest.default_permissions,
        events: manifest.default_events,
        client_id: app.clientId,
        client_secret: randomBytes(20).toString('hex'),
        webhook_secret: app.webhookSecret,
        pem: app.pem,
      });
    }
    if (method === 'POST' && (m = /^\/app\/installations\/([0-9]+)\/access_tokens$/.exec(p))) {
      const why = jwtApp(headers.authorization);
      if (why) {
        problems.push(`access_tokens: a JWT GitHub refuses (${why})`);
        return json(401, { message: 'A JSON web token could not be decoded' });
      }
      const installation = installations.get(Number(m[1]));
      if (!installation) return notFound;
      checkFields(expect, 'POST access_tokens', body, ['repositories', 'repository_ids', 'permissions']);
      const ids = (body.repository_ids as number[] | undefined) ?? installation.repoIds;
      if (ids.some((id) => !installation.repoIds.includes(id))) return json(422, { message: 'There is at least one repository that does not exist or is not accessible to the parent installation.' });
      const granted = (app!.manifest.default_permissions ?? {}) as Record<string, string>;
      const asked = (body.permissions as Record<string, string> | undefined) ?? granted;
      for (const [k, v] of Object.entries(asked)) {
        expect(`access_tokens: permission ${k}`, PERMISSIONS.includes(k));
        if (!granted[k] || (v === 'write' && granted[k] !== 'write')) return json(422, { message: `The permissions requested are not granted to this installation.` });
      }
      const token = `ghs_${randomBytes(18).toString('hex')}`;
      const expires = Date.now() + 3600_000;
      tokens.set(token, { installationId: Number(m[1]), repositoryIds: ids, permissions: asked, expires });
      return json(201, { token, expires_at: new Date(expires).toISOString(), permissions: asked, repository_selection: 'selected', repositories: ids.map((id) => repoJson(repoById(id)!)) });
    }
    if (method === 'GET' && p === '/app/hook/deliveries') {
      const why = jwtApp(headers.authorization);
      if (why) {
        problems.push(`hook deliveries: a JWT GitHub refuses (${why})`);
        return json(401, { message: 'A JSON web token could not be decoded' });
      }
      for (const key of url.searchParams.keys()) expect(`hook deliveries: query ${key}`, ['per_page', 'cursor', 'status'].includes(key));
      const perPage = Number(url.searchParams.get('per_page') ?? 30);
      return json(200, [...deliveries].reverse().slice(0, perPage));
    }
    const rm = /^\/repos\/([^/]+)\/([^/]+)(\/.*)?$/.exec(p);
    if (rm) {
      const found = tokenOf(headers.authorization);
      if (!found) return json(401, { message: 'Bad credentials' });
      const [, token] = found;
      const repo = opts.repos.find((r) => r.fullName === `${rm[1]}/${rm[2]}` && token.repositoryIds.includes(r.id));
      if (!repo) return notFound;
      const rest = rm[3] ?? '';
      if (method === 'GET' && rest === '') return json(200, repoJson(repo));
      const cm = /^\/check-runs(?:\/([0-9]+))?$/.exec(rest);
      if (cm) {
        if (token.permissions.checks !== 'write') return json(403, { message: 'Resource not accessible by integration' });
        const b = checkFields(expect, `${method} check-runs`, body, method === 'POST' ? CHECK_RUN_FIELDS : CHECK_RUN_FIELDS.filter((f) => f !== 'head_sha'), method === 'POST' ? ['name', 'head_sha'] : []);
        if (b.status !== undefined) expect(`check-runs: status ${String(b.status)}`, ['queued', 'in_progress', 'completed'].includes(String(b.status)));
        if (b.conclusion !== undefined) expect(`check-runs: conclusion ${String(b.conclusion)}`, CONCLUSIONS.includes(String(b.conclusion)));
        if (b.status === 'completed') expect('check-runs: completed needs a conclusion', b.conclusion !== undefined);
        const output = b.output as { title?: string; summary?: string; annotations?: CheckRun['annotations'] } | undefined;
        if (output) {
          checkFields(expect, 'check-runs: output', output, ['title', 'summary', 'text', 'annotations', 'images'], ['title', 'summary']);
          expect('check-runs: at most 50 annotations a request', (output.annotations ?? []).length <= 50);
          for (const a of output.annotations ?? []) {
            checkFields(expect, 'check-runs: annotation', a, ['path', 'start_line', 'end_line', 'start_column', 'end_column', 'annotation_level', 'message', 'title', 'raw_details'], ['path', 'start_line', 'end_line', 'annotation_level', 'message']);
            expect('check-runs: annotation_level', ['notice', 'warning', 'failure'].includes(a.annotation_level));
          }
        }
        let run: CheckRun | undefined;
        if (method === 'POST' && !cm[1]) {
          expect('check-runs: head_sha a full sha', /^[0-9a-f]{40}$/.test(String(b.head_sha)));
          run = { id: nextId++, repo: repo.fullName, name: String(b.name), head_sha: String(b.head_sha), status: String(b.status ?? 'queued'), annotations: [], requests: [] };
          checkRuns.push(run);
        } else if (method === 'PATCH' && cm[1]) {
          run = checkRuns.find((r) => r.id === Number(cm[1]) && r.repo === repo.fullName);
          if (!run) return notFound;
        } else return json(405, { message: 'Method Not Allowed' });
        run.requests.push(b);
        if (b.status !== undefined) run.status = String(b.status);
        if (b.conclusion !== undefined) {
          run.conclusion = String(b.conclusion);
          run.status = 'completed';
        }
        if (b.details_url !== undefined) run.details_url = String(b.details_url);
        if (b.external_id !== undefined) run.external_id = String(b.external_id);
        if (output) {
          run.output = { title: output.title, summary: output.summary };
          run.annotations.push(...(output.annotations ?? []));
        }
        return json(method === 'POST' ? 201 : 200, { id: run.id, head_sha: run.head_sha, status: run.status, conclusion: run.conclusion ?? null, name: run.name });
      }
    }
    return notFound;
  };

  /** Smart HTTP for an installation token that may read the repository's contents (`x-access-token` Basic, as GitHub documents). */
  const gitHttp = (req: http.IncomingMessage, res: http.ServerResponse, url: URL, m: RegExpExecArray) => {
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const [user, token = ''] = basic ? Buffer.from(basic, 'base64').toString().split(':') : [];
    const t = tokens.get(token);
    const repo = opts.repos.find((r) => r.fullName === `${m[1]}/${m[2]}`);
    if (!basic || user !== 'x-access-token' || !t || t.expires < Date.now() || !repo?.bare || !t.repositoryIds.includes(repo.id) || !t.permissions.contents) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="GitHub"' }).end('Invalid username or token.');
      return;
    }
    if (url.pathname.endsWith('/info/refs')) clones.push({ token, repo: repo.fullName });
    const child = spawn('git', ['http-backend'], {
      env: {
        PATH: process.env.PATH,
        GIT_PROJECT_ROOT: path.dirname(repo.bare),
        GIT_HTTP_EXPORT_ALL: '1',
        PATH_INFO: `/${path.basename(repo.bare)}${m[3]}`,
        QUERY_STRING: url.search.replace(/^\?/, ''),
        REQUEST_METHOD: req.method,
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        ...(req.headers['content-encoding'] ? { HTTP_CONTENT_ENCODING: String(req.headers['content-encoding']) } : {}),
        ...(req.headers['git-protocol'] ? { GIT_PROTOCOL: String(req.headers['git-protocol']) } : {}),
      },
    });
    req.pipe(child.stdin);
    const chunks: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.on('close', () => {
      const out = Buffer.concat(chunks);
      const split = out.indexOf('\r\n\r\n');
      const head = out.subarray(0, split).toString();
      const headers: Record<string, string> = {};
      let status = 200;
      for (const line of head.split('\r\n')) {
        const [k, ...v] = line.split(':');
        if (k!.toLowerCase() === 'status') status = Number(v.join(':').trim().split(' ')[0]);
        else headers[k!] = v.join(':').trim();
      }
      res.writeHead(status, headers).end(out.subarray(split + 4));
    });
  };

  const server = http.createServer((req, res) => {
    const url = new URL(req.url!, 'http://github.test');
    requests.push(`${req.method} ${url.pathname}${url.search}`);
    const gm = /^\/([^/]+)\/([^/]+)\.git(\/info\/refs|\/git-upload-pack)$/.exec(url.pathname);
    if (gm) return gitHttp(req, res, url, gm);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let reply: Reply;
      try {
        reply = route(req, url, raw);
      } catch (err) {
        problems.push(`the fake failed: ${(err as Error).message}`);
        reply = json(500, { message: 'Server Error' });
      }
      res.writeHead(reply.status, { ...(reply.body === undefined ? {} : { 'content-type': 'application/json; charset=utf-8' }), ...reply.headers });
      res.end(reply.body === undefined ? undefined : typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body));
    });
  });

  const route = (req: http.IncomingMessage, url: URL, raw: string): Reply => {
    const p = url.pathname;
    if (p.startsWith('/api/v3/')) return api(req.method!, p.slice('/api/v3'.length), url, req.headers, raw);
    // The manifest flow's page: a form post with `manifest`, then back to redirect_url.
    if (req.method === 'POST' && /^(?:\/organizations\/[^/]+)?\/settings\/apps\/new$/.test(p)) {
      const manifest = JSON.parse(new URLSearchParams(raw).get('manifest') ?? '{}') as Record<string, unknown>;
      checkFields(expect, 'manifest', manifest, MANIFEST_FIELDS, ['url', 'hook_attributes']);
      checkFields(expect, 'manifest: hook_attributes', manifest.hook_attributes, ['url', 'active'], ['url']);
      for (const e of (manifest.default_events as string[] | undefined) ?? []) expect(`manifest: event ${e}`, APP_EVENTS.includes(e));
      for (const k of Object.keys((manifest.default_permissions as object | undefined) ?? {})) expect(`manifest: permission ${k}`, PERMISSIONS.includes(k));
      const code = randomBytes(10).toString('hex');
      codes.set(code, manifest);
      const back = new URL(String(manifest.redirect_url));
      back.searchParams.set('code', code);
      back.searchParams.set('state', url.searchParams.get('state') ?? '');
      return { status: 302, headers: { location: via(back.href) } };
    }
    return { status: 404, body: 'Not Found', headers: { 'content-type': 'text/plain' } };
  };

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const installationPayload = (id: number, action: string, account: string, repoIds: number[]) => ({
    action,
    installation: { id, account: { login: account, id: 9, type: 'Organization' }, repository_selection: 'selected', app_id: app!.id, app_slug: app!.slug, target_type: 'Organization', permissions: app!.manifest.default_permissions, events: app!.manifest.default_events, suspended_at: null },
    repositories: repoIds.map((r) => ({ id: r, node_id: `R_${r}`, name: repoById(r)!.fullName.split('/')[1], full_name: repoById(r)!.fullName, private: true })),
    sender: { login: 'octocat', id: 1, type: 'User' },
  });

  return {
    webUrl: base,
    problems,
    requests,
    app: () => app,
    checkRuns,
    tokens,
    clones,
    via,
    async install(account, repoIds) {
      const installationId = nextId++;
      installations.set(installationId, { account, repoIds: [...repoIds] });
      return { installationId, status: await deliver('installation', installationPayload(installationId, 'created', account, repoIds)) };
    },
    async addRepos(installationId, repoIds) {
      const i = installations.get(installationId)!;
      i.repoIds.push(...repoIds);
      const { repositories, ...rest } = installationPayload(installationId, 'added', i.account, repoIds);
      return deliver('installation_repositories', { ...rest, repository_selection: 'selected', repositories_added: repositories, repositories_removed: [] });
    },
    async push(repoId, push, o = {}) {
      const r = repoById(repoId)!;
      const installationId = [...installations.entries()].find(([, i]) => i.repoIds.includes(repoId))?.[0];
      return deliver(
        'push',
        {
          ref: push.ref,
          before: push.before,
          after: push.after,
          created: false,
          deleted: false,
          forced: false,
          compare: `${base}/${r.fullName}/compare`,
          commits: [{ id: push.after, message: 'a change', timestamp: new Date().toISOString(), author: { name: 'Octo Cat', email: 'octo@example.com' }, added: [], removed: [], modified: ['README'] }],
          head_commit: { id: push.after, message: 'a change', timestamp: new Date().toISOString(), author: { name: 'Octo Cat', email: 'octo@example.com' } },
          repository: { ...repoJson(r), ssh_url: `git@github.test:${r.fullName}.git` },
          pusher: { name: 'octocat', email: 'octo@example.com' },
          sender: { login: 'octocat', id: 1, type: 'User' },
          installation: { id: installationId, node_id: 'I_1' },
        },
        o.secret,
      );
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

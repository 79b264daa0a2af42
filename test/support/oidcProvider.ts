/**
 * A real OpenID Connect provider for tests (panva's certified oidc-provider, run by
 * oidcProvider.mjs as a child process on 127.0.0.1), and a way to sign in through it without a
 * browser.
 *
 *   const idp = await startOidcProvider({
 *     clients: [{ client_id: 'sluice', client_secret: 's3cret', redirect_uris: ['http://127.0.0.1:8080/auth/callback'] }],
 *     accounts: { alice: { email: 'alice@example.com', email_verified: true, name: 'Alice', groups: ['devs'] } },
 *   });
 *   // the product (openid-client) discovers idp.issuer and builds an authorization URL, then:
 *   const callback = await idp.signIn(authorizationUrl, 'alice'); // redirect_uri?code=…&state=…&iss=…
 *   await idp.removeAccount('alice');   // her refresh tokens now fail with invalid_grant
 *   afterAll(() => idp.stop());
 *
 * Authorization code flow with PKCE (S256) required; scopes openid email profile groups
 * offline_access; clients authenticate with client_secret_basic unless they say otherwise; a
 * refresh token comes with every code grant. offline_access is granted only with prompt=consent
 * (OIDC Core); without it the refresh token still comes, but is bound to the provider's session
 * with the browser. In a browser, the sign-in page is a form with an input `login` (the account
 * id) and a button `#sign-in`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { request } from 'undici';

export interface OidcHarnessClient {
  client_id: string;
  client_secret: string;
  redirect_uris: string[];
  /** How it authenticates at the token endpoint; default client_secret_basic. */
  token_endpoint_auth_method?: 'client_secret_basic' | 'client_secret_post';
}

/** An account's claims (`sub` is its id). */
export interface OidcHarnessAccount {
  email: string;
  email_verified?: boolean;
  name: string;
  groups: string[];
}

export interface OidcHarnessConfig {
  clients: OidcHarnessClient[];
  accounts?: Record<string, OidcHarnessAccount>;
}

export interface OidcHarness {
  /** http://127.0.0.1:<port>; discovery at <issuer>/.well-known/openid-configuration. */
  issuer: string;
  /** Creates or replaces an account. */
  putAccount(id: string, account: OidcHarnessAccount): Promise<void>;
  /** Removes an account (false if there was none): its refresh tokens then fail with invalid_grant. */
  removeAccount(id: string): Promise<boolean>;
  /** Destroys the account's grants and every token issued under them; returns how many grants. */
  revokeAccount(id: string): Promise<number>;
  /**
   * Follows `authorizationUrl` through the provider as a browser would, signing in as
   * `accountId`, and returns the URL the provider finally sends the browser to: one of the
   * client's redirect URIs with `code` and `state` (or `error`). Fresh cookies on every call.
   */
  signIn(authorizationUrl: string, accountId: string): Promise<string>;
  /** SIGTERM, then SIGKILL after 5 s; resolves once the process has exited. */
  stop(): Promise<void>;
}

const SCRIPT = path.join(__dirname, 'oidcProvider.mjs');
const READY_TIMEOUT_MS = 20_000;
const REQUEST_TIMEOUT_MS = 10_000;
const MAX_HOPS = 20;

// Children still running when jest's process exits are killed with it, not left behind.
const children = new Set<ChildProcess>();
let exitHookInstalled = false;

export async function startOidcProvider(config: OidcHarnessConfig): Promise<OidcHarness> {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', () => {
      for (const child of children) child.kill('SIGKILL');
    });
  }
  const child = spawn(process.execPath, [SCRIPT], {
    env: { ...process.env, OIDC_HARNESS_CONFIG: JSON.stringify(config) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => children.delete(child));

  // Kept (the tail) for error messages; both pipes are always drained so the child never blocks.
  let stderr = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-64 * 1024);
  });

  const issuer = await new Promise<string>((resolve, reject) => {
    let stdout = '';
    let settled = false;
    const fail = (why: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`OIDC provider ${why}\n${stderr}`));
    };
    const timer = setTimeout(() => fail(`did not get ready within ${READY_TIMEOUT_MS} ms`), READY_TIMEOUT_MS);
    child.once('exit', (code, signal) => fail(`exited (${signal ?? code}) before it was ready`));
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => {
      stdout += chunk;
      const m = stdout.match(/^OIDC_HARNESS_READY (\S+)$/m);
      if (m && !settled) {
        settled = true;
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
  });

  /** A control API call; returns the status and JSON answer. */
  async function control(method: 'PUT' | 'DELETE' | 'POST', pathname: string, body?: unknown) {
    const res = await request(`${issuer}${pathname}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      headersTimeout: REQUEST_TIMEOUT_MS,
      bodyTimeout: REQUEST_TIMEOUT_MS,
    });
    return { status: res.statusCode, json: (await res.body.json()) as Record<string, unknown> };
  }
  const accountPath = (id: string) => `/_harness/accounts/${encodeURIComponent(id)}`;

  const redirectUris = config.clients.flatMap((c) => c.redirect_uris);

  return {
    issuer,
    async putAccount(id, account) {
      const { status, json } = await control('PUT', accountPath(id), account);
      if (status !== 200) throw new Error(`putAccount(${id}): ${status} ${JSON.stringify(json)}`);
    },
    async removeAccount(id) {
      const { status, json } = await control('DELETE', accountPath(id));
      if (status !== 200 && status !== 404) throw new Error(`removeAccount(${id}): ${status} ${JSON.stringify(json)}`);
      return status === 200;
    },
    async revokeAccount(id) {
      const { status, json } = await control('POST', `${accountPath(id)}/revoke`);
      if (status !== 200) throw new Error(`revokeAccount(${id}): ${status} ${JSON.stringify(json)}`);
      return json.revokedGrants as number;
    },
    signIn: (authorizationUrl, accountId) => signIn(authorizationUrl, accountId, redirectUris),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }
    },
  };
}

/** Redirects followed by hand (to see each Location and keep cookies); the login form posted when met. */
async function signIn(authorizationUrl: string, accountId: string, redirectUris: string[]): Promise<string> {
  const jar = new CookieJar();
  let url = new URL(authorizationUrl);
  let form: string | undefined; // the login form's body, when the next request posts it
  for (let hop = 0; hop < MAX_HOPS; hop++) {
    const headers: Record<string, string> = {};
    const cookie = jar.header(url);
    if (cookie) headers.cookie = cookie;
    if (form !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
    const res = await request(url, {
      method: form === undefined ? 'GET' : 'POST',
      headers,
      body: form,
      headersTimeout: REQUEST_TIMEOUT_MS,
      bodyTimeout: REQUEST_TIMEOUT_MS,
    });
    jar.store(res.headers['set-cookie']);
    const text = await res.body.text();
    const location = res.headers.location;
    if (res.statusCode >= 300 && res.statusCode < 400 && typeof location === 'string') {
      const next = new URL(location, url);
      // Arrived at the client: compare without the query the provider added (code, state, iss).
      if (redirectUris.includes(`${next.origin}${next.pathname}`)) return next.href;
      url = next;
      form = undefined;
      continue;
    }
    if (res.statusCode === 200 && form === undefined && /^\/interaction\/[^/]+$/.test(url.pathname)) {
      url = new URL(`${url.pathname}/login`, url);
      form = new URLSearchParams({ login: accountId }).toString();
      continue;
    }
    throw new Error(`signIn as ${accountId}: ${res.statusCode} from ${url.href}\n${text.slice(0, 2000)}`);
  }
  throw new Error(`signIn as ${accountId}: more than ${MAX_HOPS} redirects from ${authorizationUrl}`);
}

/** Just enough of a cookie jar for one host: name, value, path and deletion (expiry in the past). */
class CookieJar {
  private cookies = new Map<string, { value: string; path: string }>();

  store(setCookie: string | string[] | undefined): void {
    for (const line of typeof setCookie === 'string' ? [setCookie] : (setCookie ?? [])) {
      const [pair = '', ...attributes] = line.split(';').map((s) => s.trim());
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq);
      let cookiePath = '/';
      let expired = false;
      for (const attribute of attributes) {
        const [key = '', value = ''] = attribute.split('=');
        if (key.toLowerCase() === 'path') cookiePath = value;
        if (key.toLowerCase() === 'expires' && Date.parse(value) <= Date.now()) expired = true;
        if (key.toLowerCase() === 'max-age' && Number(value) <= 0) expired = true;
      }
      if (expired) this.cookies.delete(name);
      else this.cookies.set(name, { value: pair.slice(eq + 1), path: cookiePath });
    }
  }

  header(url: URL): string {
    return [...this.cookies]
      .filter(([, c]) => url.pathname === c.path || url.pathname.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`))
      .map(([name, c]) => `${name}=${c.value}`)
      .join('; ');
  }
}

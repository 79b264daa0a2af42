/**
 * A real OpenID Connect provider (panva's oidc-provider) for tests, on 127.0.0.1 and a free port.
 * Started by test/support/oidcProvider.ts; configured by the JSON in env OIDC_HARNESS_CONFIG:
 *
 *   { "clients": [{ "client_id", "client_secret", "redirect_uris": [...], "token_endpoint_auth_method"? }],
 *     "accounts": { "<accountId>": { "email", "email_verified", "name", "groups": [...] } } }
 *
 * Authorization code flow with PKCE (S256) required; scopes openid email profile groups
 * offline_access; a refresh token with every code grant of a client allowed the refresh_token grant.
 * Sign-in is a one-field HTML form at /interaction/:uid (input `login` = account id, button
 * #sign-in) that logs in and grants every requested scope at once: usable by a browser and by
 * a plain HTTP client. A JSON control API under /_harness/ changes accounts while it runs:
 *
 *   PUT    /_harness/accounts/:id         create or replace an account (body: its claims)
 *   DELETE /_harness/accounts/:id         remove it: its refresh tokens stop working (invalid_grant)
 *   POST   /_harness/accounts/:id/revoke  destroy its grants and every token issued under them
 *
 * Prints exactly one line to stdout, `OIDC_HARNESS_READY <issuer>`, once listening; everything
 * else goes to stderr. Exits on SIGTERM.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';

// oidc-provider warns at import time that Node 20 is unsupported (it works), and later that its
// in-memory adapter is for development (what a test wants): drop those two warnings. Its other
// notices go to stderr so that stdout carries only the READY line.
const warn = console.warn.bind(console);
console.warn = (...args) => {
  if (/Unsupported runtime|development-only in-memory adapter/.test(String(args[0]))) return;
  warn(...args);
};
console.info = (...args) => console.error(...args);
// Dynamic import: a static one would run before the patch above.
const { Provider } = await import('oidc-provider');

const config = JSON.parse(process.env.OIDC_HARNESS_CONFIG ?? '{}');
/** Mutable at run time: findAccount reads it on every request. */
const accounts = new Map(Object.entries(config.accounts ?? {}));
/** accountId → ids of the grants made for it, for /revoke. */
const grantsByAccount = new Map();

const server = createServer();
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(0, '127.0.0.1', resolve);
});
// The issuer must name the port, so the provider is made only once the server listens.
const issuer = `http://127.0.0.1:${server.address().port}`;

// Our own signing key: the built-in development keys come with a warning.
const signingKey = { ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }), use: 'sig', alg: 'RS256', kid: 'harness' };

const provider = new Provider(issuer, {
  clients: (config.clients ?? []).map((c) => ({
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
    ...c,
  })),
  jwks: { keys: [signingKey] },
  // http://127.0.0.1: cookies get `secure` only when the request is https (ctx.secure), so plain
  // http works as it is; the keys sign them.
  cookies: { keys: [randomBytes(32).toString('hex')] },
  claims: {
    email: ['email', 'email_verified'],
    profile: ['name'],
    groups: ['groups'],
  },
  scopes: ['openid', 'offline_access', 'email', 'profile', 'groups'],
  // Scope claims in the ID token too (the default puts them only in userinfo for `code`), as
  // most real identity providers do.
  conformIdTokenClaims: false,
  responseTypes: ['code'],
  pkce: { required: () => true }, // S256 is the only method oidc-provider 9 knows
  features: { devInteractions: { enabled: false } },
  // Every code grant of a client allowed refresh_token gets a refresh token, offline_access or not
  // (offline_access itself survives only with prompt=consent; without it the refresh token is
  // bound to the provider's session, the default expiresWithSession).
  issueRefreshToken: async (ctx, client, source) => client.grantTypeAllowed('refresh_token') && source.kind === 'AuthorizationCode',
  findAccount: async (ctx, sub) => {
    const account = accounts.get(sub);
    if (!account) return undefined; // refresh and code grants then fail with invalid_grant
    return { accountId: sub, claims: async () => ({ sub, ...accounts.get(sub) }) };
  },
  // Explicit TTLs (the defaults log a notice each); in seconds.
  ttl: {
    AccessToken: 600,
    AuthorizationCode: 60,
    IdToken: 3600,
    RefreshToken: 24 * 3600,
    Interaction: 3600,
    Session: 24 * 3600,
    Grant: 24 * 3600,
  },
  clientBasedCORS: () => true,
  renderError: async (ctx, out) => {
    ctx.type = 'html';
    ctx.body = page('Error', `<pre id="error">${escape(JSON.stringify(out, null, 2))}</pre>`);
  },
});

provider.on('grant.saved', (grant) => {
  if (!grantsByAccount.has(grant.accountId)) grantsByAccount.set(grant.accountId, new Set());
  grantsByAccount.get(grant.accountId).add(grant.jti);
});
provider.on('server_error', (ctx, err) => console.error('oidc-provider server_error:', err));

const oidc = provider.callback();
server.on('request', (req, res) => {
  handle(req, res).catch((err) => {
    console.error(err);
    if (!res.headersSent) send(res, 500, 'text/plain', String(err?.message ?? err));
    else res.end();
  });
});

async function handle(req, res) {
  const url = new URL(req.url, issuer);
  let m;
  if ((m = url.pathname.match(/^\/interaction\/([^/]+)$/)) && req.method === 'GET') return showLogin(req, res, m[1]);
  if ((m = url.pathname.match(/^\/interaction\/([^/]+)\/login$/)) && req.method === 'POST') return login(req, res, m[1]);
  if (url.pathname.startsWith('/_harness/')) return control(req, res, url.pathname);
  return oidc(req, res);
}

async function showLogin(req, res, uid) {
  const details = await interaction(req, res, uid);
  if (!details) return;
  send(res, 200, 'text/html', loginPage(uid, details.params.client_id, details.params.scope));
}

async function login(req, res, uid) {
  const details = await interaction(req, res, uid);
  if (!details) return;
  const accountId = new URLSearchParams(await readBody(req)).get('login') ?? '';
  if (!accounts.has(accountId)) {
    return send(res, 400, 'text/html', loginPage(uid, details.params.client_id, details.params.scope, `unknown account: ${accountId}`));
  }
  // Consent is granted here too, for everything asked: the grant the session already has for
  // this account when there is one, else a new one.
  const existing = details.grantId ? await provider.Grant.find(details.grantId) : undefined;
  const grant = existing?.accountId === accountId ? existing : new provider.Grant({ accountId, clientId: details.params.client_id });
  if (details.params.scope) grant.addOIDCScope(details.params.scope);
  const claims = parseClaims(details.params.claims);
  if (claims.length) grant.addOIDCClaims(claims);
  // No resource indicators are enabled, so there are no resource-server scopes to grant.
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { login: { accountId }, consent: { grantId } }, { mergeWithLastSubmission: false });
}

/** The interaction this browser is in, if it is `uid`; otherwise answers 400 and returns undefined. */
async function interaction(req, res, uid) {
  let details;
  try {
    details = await provider.interactionDetails(req, res);
  } catch (err) {
    send(res, 400, 'text/html', page('Error', `<p id="error">${escape(err.message)}</p>`));
    return undefined;
  }
  if (details.uid !== uid) {
    send(res, 400, 'text/html', page('Error', '<p id="error">interaction mismatch</p>'));
    return undefined;
  }
  return details;
}

/** Names of the claims asked for with the `claims` parameter (JSON), if any. */
function parseClaims(param) {
  if (!param) return [];
  const parsed = typeof param === 'string' ? JSON.parse(param) : param;
  return [...new Set([...Object.keys(parsed.id_token ?? {}), ...Object.keys(parsed.userinfo ?? {})])];
}

async function control(req, res, pathname) {
  const m = pathname.match(/^\/_harness\/accounts\/([^/]+)(\/revoke)?$/);
  if (!m) return sendJson(res, 404, { error: 'not found' });
  const id = decodeURIComponent(m[1]);
  if (m[2] && req.method === 'POST') {
    const grantIds = [...(grantsByAccount.get(id) ?? [])];
    for (const grantId of grantIds) await revokeGrant(grantId);
    grantsByAccount.delete(id);
    return sendJson(res, 200, { revokedGrants: grantIds.length });
  }
  if (!m[2] && req.method === 'PUT') {
    accounts.set(id, JSON.parse(await readBody(req)));
    return sendJson(res, 200, { id });
  }
  if (!m[2] && req.method === 'DELETE') {
    const existed = accounts.delete(id);
    return sendJson(res, existed ? 200 : 404, { id, removed: existed });
  }
  return sendJson(res, 405, { error: 'method not allowed' });
}

/** What the revocation endpoint does for a grant: its tokens and codes, then the grant itself. */
async function revokeGrant(grantId) {
  await Promise.all([provider.AccessToken, provider.RefreshToken, provider.AuthorizationCode].map((model) => model.revokeByGrantId(grantId)));
  await provider.Grant.adapter.destroy(grantId);
}

function loginPage(uid, clientId, scope, error) {
  return page(
    'Sign in',
    `${error ? `<p id="error">${escape(error)}</p>` : ''}
<p>Client <code>${escape(clientId)}</code> asks for <code>${escape(scope ?? '')}</code>.</p>
<form method="post" action="/interaction/${escape(uid)}/login">
  <label>Account <input type="text" name="login" id="login" autofocus></label>
  <button type="submit" id="sign-in">Sign in</button>
</form>`,
  );
}

function page(title, body) {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escape(title)}</title></head><body><h1>${escape(title)}</h1>${body}</body></html>`;
}

function escape(s) {
  return String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function send(res, status, type, body) {
  res.writeHead(status, { 'content-type': `${type}; charset=utf-8`, 'cache-control': 'no-store' });
  res.end(body);
}

function sendJson(res, status, value) {
  send(res, status, 'application/json', JSON.stringify(value));
}

async function readBody(req) {
  let body = '';
  req.setEncoding('utf8');
  for await (const chunk of req) body += chunk;
  return body;
}

process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});

process.stdout.write(`OIDC_HARNESS_READY ${issuer}\n`);

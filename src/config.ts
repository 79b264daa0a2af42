import { z } from 'zod';
import { isLoopbackHost } from './core/names';
import type { PostRetry, RetrySettings } from './core/retry';
import { parseAllowList, type Cidr } from './ip/ranges';

/**
 * Everything Sluice reads from its environment, validated once at start. Processes get a
 * Config object and pass it down; nothing else reads process.env (test processes get a
 * clean environment of their own, see steps/tests/runTestFile.ts).
 */
export interface Config {
  databaseUrl: string;
  temporalAddress: string;
  temporalNamespace: string;
  /** Public base URL, used in status_uri, report links and the webhook URL shown to users; a token runner's address of the API. */
  baseUrl: string;
  /** A runner that holds no keys: its token (SLUICE_RUNNER_TOKEN); it talks to the API at baseUrl and to nothing else of Sluice's. */
  runnerToken?: string;
  adminToken: string;
  /** 32 bytes; seals SSH private keys, webhook passwords, repository keys and build secrets. */
  secretKey: Buffer;
  smtpUrl: string | undefined;
  host: string;
  port: number;
  /** Task queue of the workflows and webhook deliveries. */
  taskQueue: string;
  /** Default task queue of runners' activities (checkouts, test lanes, pushes). */
  buildQueue: string;
  /** Where runners keep checkouts. */
  workspaceDir: string;
  /** Time limit of one test file. */
  testTimeoutMs: number;
  /** Runners: the unprivileged user tests run as (SLUICE_BUILD_USER); unset, a root runner's own `sluice-build` (steps/isolation/buildUser.ts), or a runner's own user when it is not root. */
  buildUser?: string;
  /**
   * Runners: the sandbox around build processes (SLUICE_SANDBOX): `auto` (the default, and
   * undefined: bubblewrap wherever it works), `bwrap` (required) or `none` (steps/isolation).
   */
  sandbox?: 'auto' | 'bwrap' | 'none';
  /** Runners, with the sandbox: whether tests may use the network (SLUICE_SANDBOX_NETWORK=host, the default) or not (`none`). */
  sandboxNetwork?: boolean;
  /** Test files one build may have; more end it in `error` (default 5,000). */
  maxTestFiles?: number;
  /** Runners: how many activities (test lanes, checkouts, pushes) one runner runs at once (default 4). */
  runnerSlots?: number;
  webhookRetry: WebhookRetry;
  /**
   * Retry policies of push, chat and e-mail; default DEFAULT_POST_RETRY (core/retry.ts: 3
   * attempts, 2 s and 5 s apart, 10 s for e-mail). Tests shorten them.
   */
  postRetry?: PostRetry;
  /**
   * How long `stop` waits for push, chat and e-mail before it goes out without them
   * (SLUICE_POST_BUILD_WAIT_MS, default DEFAULT_POST_BUILD_WAIT_MS); they go on retrying after.
   */
  postBuildWaitMs?: number;
  /** Retry policy of commit statuses; default DEFAULT_STATUS_RETRY (core/commitStatus.ts). Tests shorten it. */
  statusRetry?: RetrySettings;
  /** Non-public ranges outgoing webhooks may reach anyway (SLUICE_WEBHOOK_ALLOW); none by default. */
  webhookAllow: Cidr[];
  /** History events after which a suite workflow continues-as-new (default in suite.ts). */
  suiteHistoryLimit?: number;
  /** How often a suite makes sure its running session's workflow still exists (SLUICE_SUITE_LIVENESS_MS; default in suite.ts). */
  suiteLivenessMs?: number;
  /** How long a checkout waits on a build queue that no runner polls before its build ends in error (SLUICE_RUNNER_WAIT_MS). */
  runnerWaitMs?: number;
  /** API: the Temporal UI's address (SLUICE_TEMPORAL_UI_URL), for a build page's link to its workflow; none when unset. */
  temporalUiUrl?: string;
  /**
   * Workers: days an ended session is kept, with its results, outputs and trigger, before the
   * daily cleanup deletes it (SLUICE_RETENTION_DAYS, default DEFAULT_RETENTION_DAYS); 0 keeps them.
   */
  retentionDays?: number;
  /** Workers: days a delivery attempt stays in its webhook's log (SLUICE_DELIVERY_RETENTION_DAYS, default DEFAULT_DELIVERY_RETENTION_DAYS); 0 keeps them. */
  deliveryRetentionDays?: number;
  /**
   * Where dependency caches and artifacts are kept (SLUICE_CACHE_URL and friends): runners
   * write them, the API serves artifacts, workers delete them with their sessions. Default:
   * DEFAULT_CACHE_DIR on the machine itself.
   */
  store?: StoreSettings;
  /** Runners: their local copies of cache entries, and how much those may hold (least recently used go first). */
  cacheLocal?: { dir: string; maxBytes: number };
  /** Runners: how much their git mirrors (`<workspace>/.mirrors`) may hold, least recently used going first. */
  gitMirrorMaxBytes?: number;
  /** Runners: how many trees of ended builds they keep for later builds of the same repository (steps/checkout/kept.ts; 0: none). */
  keptTrees?: number;
  /**
   * Runners: builds' images (steps/image/): the store of unpacked images by digest and how much it
   * may hold (least recently used go first), Docker Hub's pull-through mirror, and the `crane`
   * executable that talks to registries (SLUICE_CRANE; else found on PATH or in ~/.cache/sluice/bin).
   */
  images?: ImageSettings;
  /** Limits of the cache: one entry, and all of one repository's entries (least recently used go first). */
  cacheLimits?: { maxEntryBytes: number; maxRepoBytes: number };
  /** Limits of a build's artifacts: one file, and all of one build's. */
  artifactLimits?: { maxFileBytes: number; maxBuildBytes: number };
  /** Runners: time limit of one hook (SLUICE_HOOK_TIMEOUT_MS). */
  hookTimeoutMs?: number;
  /**
   * Runners: admin connections of the services builds may ask for (SLUICE_SERVICE_*_URL); a
   * worker gets a database and a role of its own on these servers, never these credentials.
   */
  services?: ServiceAdmins;
  /** OpenTelemetry tracing (tracing/setup.ts): off, and undefined, unless an OTLP endpoint is set. */
  tracing?: TracingSettings;
  /**
   * Where this process serves Prometheus' `/metrics` (SLUICE_METRICS_PORT, SLUICE_METRICS_HOST,
   * default 127.0.0.1); unset: no metrics listener (metrics/serve.ts).
   */
  metrics?: { host: string; port: number };
  /** API: where people sign in (SLUICE_SIGN_IN_PROVIDERS); none: only the admin token signs in. */
  signInProviders?: SignInProvider[];
  /** API: how often a signed-in person's provider is asked again whether they are still theirs (SLUICE_SIGN_IN_REFRESH_SECONDS). */
  signInRefreshMs?: number;
}

/**
 * An identity provider people sign in with (docs/configuration.md "Signing in"): any OpenID
 * Connect provider by its issuer (GitLab, Gitea, Keycloak, Google, Entra ID, Okta, ...), or
 * GitHub's OAuth (GitHub Enterprise by its addresses).
 */
export type SignInProvider =
  | { kind: 'oidc'; id: string; name: string; issuer: string; clientId: string; clientSecret: string; groupsClaim: string; scopes: string[] }
  | { kind: 'github'; id: string; name: string; clientId: string; clientSecret: string; webUrl: string; apiUrl: string };

/** Where a process sends its spans, and as which service (OTEL_* variables, docs/observability.md "Traces"). */
export interface TracingSettings {
  /** The OTLP/HTTP traces URL: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, or OTEL_EXPORTER_OTLP_ENDPOINT + `/v1/traces`. */
  tracesUrl: string;
  /** OTEL_SERVICE_NAME, or the role's: `sluice-api`, `sluice-worker`, `sluice-runner` (`sluice` for `npm start`). */
  serviceName: string;
}

/** Runners: where images are kept and pulled from (Config.images). */
export interface ImageSettings {
  dir: string;
  maxBytes: number;
  /** Docker Hub's images are pulled through this registry first (SLUICE_REGISTRY_MIRROR), as Docker's `registry-mirrors`. */
  mirror: { host: string; insecure: boolean } | null;
  crane?: string;
}

/** Where caches and artifacts live: a directory (local or a mount runners share), or an S3-compatible bucket. */
export type StoreSettings =
  | { kind: 'dir'; dir: string }
  | {
      kind: 's3';
      bucket: string;
      /** Key prefix inside the bucket ('' or ending in '/'). */
      prefix: string;
      /** S3-compatible servers (MinIO, Ceph, R2, ...); unset: AWS. */
      endpoint?: string;
      region: string;
      accessKeyId?: string;
      secretAccessKey?: string;
      forcePathStyle: boolean;
    };

/** Admin URLs of the runner's service servers (a service with none cannot be asked for). */
export interface ServiceAdmins {
  postgresql?: string;
  mysql?: string;
  redis?: string;
}

/** Outgoing webhook deliveries' retry policy (SLUICE_WEBHOOK_RETRY_*). */
export type WebhookRetry = RetrySettings;

const positiveInt = z.coerce.number().int().positive();

/** An identity provider's address: HTTPS, or plain HTTP on this machine only (its secrets and tokens cross it). */
const secureUrl = z.url({ protocol: /^https?$/ }).refine((v) => {
  const u = new URL(v);
  return u.protocol === 'https:' || isLoopbackHost(u.hostname);
}, 'must be https (plain http only on loopback)');
const providerId = z.string().regex(/^[a-z0-9][a-z0-9-]{0,39}$/, 'lower-case letters, digits and "-"');
const SignInProviders = z
  .array(
    z.discriminatedUnion('kind', [
      z.strictObject({
        kind: z.literal('oidc'),
        id: providerId,
        name: z.string().min(1).max(60),
        issuer: secureUrl,
        client_id: z.string().min(1),
        client_secret: z.string().min(1),
        // Where the provider puts group names: `groups` for Keycloak, GitLab, Okta, Entra ID.
        groups_claim: z.string().min(1).default('groups'),
        scopes: z.array(z.string().regex(/^[!-~]+$/)).default(['openid', 'email', 'profile']),
      }),
      z.strictObject({
        kind: z.literal('github'),
        id: providerId,
        name: z.string().min(1).max(60).default('GitHub'),
        client_id: z.string().min(1),
        client_secret: z.string().min(1),
        web_url: secureUrl.default('https://github.com'),
        api_url: secureUrl.default('https://api.github.com'),
      }),
    ]),
  )
  .refine((list) => new Set(list.map((p) => p.id)).size === list.length, 'two providers have the same id');

/** SLUICE_SIGN_IN_PROVIDERS: a JSON array; a problem is named by its place, never with the value (it holds secrets). */
const signInProvidersEnv = z.string().transform((v, ctx) => {
  let json: unknown;
  try {
    json = JSON.parse(v);
  } catch {
    ctx.addIssue({ code: 'custom', message: 'must be a JSON array of providers' });
    return z.NEVER;
  }
  const parsed = SignInProviders.safeParse(json);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) ctx.addIssue({ code: 'custom', message: `${issue.path.join('.') || '(the list)'}: ${issue.message}` });
    return z.NEVER;
  }
  return parsed.data.map(
    (p): SignInProvider =>
      p.kind === 'oidc'
        ? { kind: 'oidc', id: p.id, name: p.name, issuer: p.issuer, clientId: p.client_id, clientSecret: p.client_secret, groupsClaim: p.groups_claim, scopes: p.scopes }
        : { kind: 'github', id: p.id, name: p.name, clientId: p.client_id, clientSecret: p.client_secret, webUrl: p.web_url.replace(/\/+$/, ''), apiUrl: p.api_url.replace(/\/+$/, '') },
  );
});

/** How often a signed-in person's provider is asked again, unless SLUICE_SIGN_IN_REFRESH_SECONDS says otherwise. */
export const DEFAULT_SIGN_IN_REFRESH_MS = 15 * 60_000;

/** Lanes (and checkouts, pushes) one runner runs at once, unless SLUICE_RUNNER_SLOTS says otherwise. */
export const DEFAULT_RUNNER_SLOTS = 4;
/** How long `stop` waits for the post-build steps, unless SLUICE_POST_BUILD_WAIT_MS says otherwise. */
export const DEFAULT_POST_BUILD_WAIT_MS = 5_000;
/** How long a checkout waits for a runner on a queue nobody polls, unless SLUICE_RUNNER_WAIT_MS says otherwise. */
export const DEFAULT_RUNNER_WAIT_MS = 10 * 60_000;
/** Test files one build may have, unless SLUICE_MAX_TEST_FILES says otherwise. */
export const DEFAULT_MAX_TEST_FILES = 5_000;
/** Days ended sessions and delivery attempts are kept, unless SLUICE_RETENTION_DAYS and SLUICE_DELIVERY_RETENTION_DAYS say otherwise. */
export const DEFAULT_RETENTION_DAYS = 90;
export const DEFAULT_DELIVERY_RETENTION_DAYS = 30;
const retentionDays = z.coerce.number().int().min(0).max(36_500);
/** Where caches and artifacts go when SLUICE_CACHE_URL is unset (`npm start`: its data directory). */
export const DEFAULT_CACHE_DIR = '/tmp/sluice-cache';
export const DEFAULT_CACHE_LOCAL_DIR = '/tmp/sluice-cache-local';
export const DEFAULT_HOOK_TIMEOUT_MS = 30 * 60_000;
const MiB = 1024 * 1024;
export const DEFAULT_CACHE_LIMITS = { maxEntryBytes: 2048 * MiB, maxRepoBytes: 10240 * MiB };
export const DEFAULT_CACHE_LOCAL_MAX_BYTES = 20480 * MiB;
/** How much a runner's git mirrors may hold (steps/checkout/mirror.ts). */
export const DEFAULT_GIT_MIRROR_MAX_BYTES = 20480 * MiB;
/** Trees of ended builds a runner keeps for later ones (steps/checkout/kept.ts), of all repositories. */
export const DEFAULT_KEPT_TREES = 4;
export const DEFAULT_IMAGE_DIR = '/tmp/sluice-images';
export const DEFAULT_IMAGE_MAX_BYTES = 20480 * MiB;
export const DEFAULT_ARTIFACT_LIMITS = { maxFileBytes: 512 * MiB, maxBuildBytes: 2048 * MiB };
/** Files a build keeps at most, over all its workers. */
export const MAX_ARTIFACT_FILES = 10_000;
// Megabytes in, bytes out; a default is given in bytes (zod takes a default as the output, untransformed).
const mebibytes = positiveInt.transform((n) => n * MiB);
const otlpUrl = (name: string) => z.url({ protocol: /^https?$/, error: `${name} must be an http or https URL` });
const serviceUrl = (scheme: RegExp, what: string) => z.string().refine((v) => scheme.test(v), `must be a ${what} URL`);

const EnvSchema = z.object({
  DATABASE_URL: z.string().min(1).default('postgres://postgres@127.0.0.1:5432/sluice'),
  TEMPORAL_ADDRESS: z.string().min(1).default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  SLUICE_BASE_URL: z.url().optional(),
  SLUICE_ADMIN_TOKEN: z.string().min(16, 'SLUICE_ADMIN_TOKEN must be at least 16 characters').optional(),
  SLUICE_SECRET_KEY: z
    .string()
    .refine((v) => Buffer.from(v, 'base64').length === 32, 'SLUICE_SECRET_KEY must be 32 bytes in base64')
    .optional(),
  /** A runner that holds no keys: its token (the API makes them: /api/v1/runner-tokens). */
  SLUICE_RUNNER_TOKEN: z.string().regex(/^sluice_rt_[A-Za-z0-9_-]{43}$/, 'SLUICE_RUNNER_TOKEN is not a runner token (sluice_rt_…)').optional(),
  SMTP_URL: z.string().optional(),
  HOST: z.string().default('127.0.0.1'),
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  SLUICE_TASK_QUEUE: z.string().min(1).default('sluice'),
  SLUICE_BUILD_QUEUE: z.string().min(1).default('sluice-build'),
  SLUICE_WORKSPACE_DIR: z.string().default('/tmp/sluice-workspaces'),
  SLUICE_TEST_TIMEOUT_MS: positiveInt.default(10 * 60_000),
  SLUICE_RUNNER_SLOTS: positiveInt.default(DEFAULT_RUNNER_SLOTS),
  SLUICE_MAX_TEST_FILES: positiveInt.default(DEFAULT_MAX_TEST_FILES),
  SLUICE_BUILD_USER: z.string().min(1).optional(),
  SLUICE_SANDBOX: z.enum(['auto', 'bwrap', 'none']).default('auto'),
  SLUICE_SANDBOX_NETWORK: z.enum(['host', 'none']).default('host'),
  SLUICE_WEBHOOK_RETRY_INITIAL_MS: positiveInt.default(1_000),
  // Defaults: 1 s doubling to 1 h, 36 attempts: the last one about a day after the first (docs/configuration.md).
  SLUICE_WEBHOOK_RETRY_MAX_INTERVAL_MS: positiveInt.default(60 * 60_000),
  SLUICE_WEBHOOK_RETRY_BACKOFF: z.coerce.number().min(1).default(2),
  SLUICE_WEBHOOK_RETRY_ATTEMPTS: positiveInt.default(36),
  SLUICE_SUITE_HISTORY_LIMIT: positiveInt.optional(),
  SLUICE_SUITE_LIVENESS_MS: positiveInt.optional(),
  SLUICE_RUNNER_WAIT_MS: positiveInt.default(DEFAULT_RUNNER_WAIT_MS),
  SLUICE_TEMPORAL_UI_URL: z.url({ protocol: /^https?$/, error: 'SLUICE_TEMPORAL_UI_URL must be an http or https URL' }).optional(),
  SLUICE_POST_BUILD_WAIT_MS: z.coerce.number().int().min(0).default(DEFAULT_POST_BUILD_WAIT_MS),
  SLUICE_RETENTION_DAYS: retentionDays.default(DEFAULT_RETENTION_DAYS),
  SLUICE_DELIVERY_RETENTION_DAYS: retentionDays.default(DEFAULT_DELIVERY_RETENTION_DAYS),
  SLUICE_CACHE_URL: z
    .string()
    .refine((v) => v.startsWith('/') || v.startsWith('file:///') || /^s3:\/\/[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](\/.*)?$/.test(v), 'must be an absolute directory, file:///dir or s3://bucket[/prefix]')
    .default(DEFAULT_CACHE_DIR),
  SLUICE_CACHE_S3_ENDPOINT: z.url({ protocol: /^https?$/, error: 'SLUICE_CACHE_S3_ENDPOINT must be an http or https URL' }).optional(),
  SLUICE_CACHE_S3_REGION: z.string().min(1).default('us-east-1'),
  SLUICE_CACHE_S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  SLUICE_CACHE_S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  SLUICE_CACHE_S3_FORCE_PATH_STYLE: z.enum(['true', 'false']).optional(),
  SLUICE_CACHE_LOCAL_DIR: z.string().refine((v) => v.startsWith('/'), 'must be an absolute directory').default(DEFAULT_CACHE_LOCAL_DIR),
  SLUICE_CACHE_LOCAL_MAX_MB: mebibytes.default(DEFAULT_CACHE_LOCAL_MAX_BYTES),
  SLUICE_GIT_MIRROR_MAX_MB: mebibytes.default(DEFAULT_GIT_MIRROR_MAX_BYTES),
  SLUICE_KEPT_TREES: z.coerce.number().int().min(0).max(1000).default(DEFAULT_KEPT_TREES),
  SLUICE_CACHE_MAX_ENTRY_MB: mebibytes.default(DEFAULT_CACHE_LIMITS.maxEntryBytes),
  SLUICE_CACHE_MAX_REPO_MB: mebibytes.default(DEFAULT_CACHE_LIMITS.maxRepoBytes),
  SLUICE_IMAGE_DIR: z.string().refine((v) => v.startsWith('/'), 'must be an absolute directory').default(DEFAULT_IMAGE_DIR),
  SLUICE_IMAGE_MAX_MB: mebibytes.default(DEFAULT_IMAGE_MAX_BYTES),
  SLUICE_REGISTRY_MIRROR: z
    .url({ protocol: /^https?$/, error: 'SLUICE_REGISTRY_MIRROR must be an http or https URL of a registry (https://mirror.example.com)' })
    .refine((v) => /^https?:\/\/[^/]+\/?$/.test(v), 'SLUICE_REGISTRY_MIRROR must be a registry\'s address, with no path')
    .optional(),
  SLUICE_CRANE: z.string().refine((v) => v.startsWith('/'), 'SLUICE_CRANE must be an absolute path').optional(),
  SLUICE_ARTIFACT_MAX_FILE_MB: mebibytes.default(DEFAULT_ARTIFACT_LIMITS.maxFileBytes),
  SLUICE_ARTIFACT_MAX_BUILD_MB: mebibytes.default(DEFAULT_ARTIFACT_LIMITS.maxBuildBytes),
  SLUICE_HOOK_TIMEOUT_MS: positiveInt.default(DEFAULT_HOOK_TIMEOUT_MS),
  SLUICE_SERVICE_POSTGRESQL_URL: serviceUrl(/^postgres(ql)?:\/\//, 'postgres://').optional(),
  SLUICE_SERVICE_MYSQL_URL: serviceUrl(/^(mysql|mariadb):\/\//, 'mysql://').optional(),
  SLUICE_SERVICE_REDIS_URL: serviceUrl(/^rediss?:\/\//, 'redis://').optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: otlpUrl('OTEL_EXPORTER_OTLP_ENDPOINT').optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: otlpUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT').optional(),
  // Sluice sends OTLP/HTTP as JSON; told to speak another protocol it refuses to start rather than send what the endpoint cannot read.
  OTEL_EXPORTER_OTLP_PROTOCOL: z.enum(['http/json'], { error: 'Sluice sends traces as OTLP/HTTP JSON: set http/json or leave it unset' }).optional(),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: z.enum(['http/json'], { error: 'Sluice sends traces as OTLP/HTTP JSON: set http/json or leave it unset' }).optional(),
  OTEL_SERVICE_NAME: z.string().min(1).optional(),
  OTEL_SDK_DISABLED: z.enum(['true', 'false']).optional(),
  SLUICE_METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  SLUICE_METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  SLUICE_SIGN_IN_PROVIDERS: signInProvidersEnv.optional(),
  SLUICE_SIGN_IN_REFRESH_SECONDS: positiveInt.optional(),
  SLUICE_WEBHOOK_ALLOW: z
    .string()
    .default('')
    .transform((v, ctx) => {
      try {
        return parseAllowList(v);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    }),
});

/**
 * Which process reads the configuration: each role gets only the credentials it uses. Only the
 * API (and `npm start`, which runs it) needs the admin token; a worker or runner is given none,
 * so a build that reached one could not take it.
 */
export type Role = 'api' | 'worker' | 'runner' | 'all';

/**
 * The variables that say something: `SLUICE_RETENTION_DAYS=` (a blank line in an .env or a
 * compose file) means unset, so its default, where z.coerce.number() would read 0 and keep
 * everything for good, and a blank URL would refuse to start.
 */
function setOnly(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v.trim() !== ''));
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, role: Role = 'all'): Config {
  const parsed = EnvSchema.safeParse(setOnly(env));
  const problems = parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  if (parsed.success && (role === 'api' || role === 'all') && parsed.data.SLUICE_ADMIN_TOKEN === undefined) {
    problems.push('SLUICE_ADMIN_TOKEN: required by the API (at least 16 characters)');
  }
  // Every role needs the secret key but a runner with a token: it never sees a sealed value.
  const tokenRunner = role === 'runner' && parsed.success && parsed.data.SLUICE_RUNNER_TOKEN !== undefined;
  if (parsed.success && parsed.data.SLUICE_SECRET_KEY === undefined && !tokenRunner) problems.push('SLUICE_SECRET_KEY: Required');
  if (!parsed.success || problems.length > 0) {
    // Name the variable, never echo its value: some of these are secrets.
    throw new Error(`invalid configuration:\n  ${problems.join('\n  ')}`);
  }
  const e = parsed.data;
  return {
    databaseUrl: e.DATABASE_URL,
    temporalAddress: e.TEMPORAL_ADDRESS,
    temporalNamespace: e.TEMPORAL_NAMESPACE,
    baseUrl: (e.SLUICE_BASE_URL ?? `http://${e.HOST}:${e.PORT}`).replace(/\/+$/, ''),
    // Empty outside the API, whose auth refuses to start without one (loadConfig above).
    adminToken: e.SLUICE_ADMIN_TOKEN ?? '',
    // Empty for a runner with a token: unsealing with it fails, loudly.
    secretKey: tokenRunner ? Buffer.alloc(0) : Buffer.from(e.SLUICE_SECRET_KEY!, 'base64'),
    runnerToken: tokenRunner ? e.SLUICE_RUNNER_TOKEN : undefined,
    smtpUrl: e.SMTP_URL,
    host: e.HOST,
    port: e.PORT,
    taskQueue: e.SLUICE_TASK_QUEUE,
    buildQueue: e.SLUICE_BUILD_QUEUE,
    workspaceDir: e.SLUICE_WORKSPACE_DIR,
    testTimeoutMs: e.SLUICE_TEST_TIMEOUT_MS,
    runnerSlots: e.SLUICE_RUNNER_SLOTS,
    maxTestFiles: e.SLUICE_MAX_TEST_FILES,
    buildUser: e.SLUICE_BUILD_USER,
    sandbox: e.SLUICE_SANDBOX,
    sandboxNetwork: e.SLUICE_SANDBOX_NETWORK === 'host',
    webhookRetry: {
      initialIntervalMs: e.SLUICE_WEBHOOK_RETRY_INITIAL_MS,
      maximumIntervalMs: e.SLUICE_WEBHOOK_RETRY_MAX_INTERVAL_MS,
      backoffCoefficient: e.SLUICE_WEBHOOK_RETRY_BACKOFF,
      maximumAttempts: e.SLUICE_WEBHOOK_RETRY_ATTEMPTS,
    },
    webhookAllow: e.SLUICE_WEBHOOK_ALLOW,
    suiteHistoryLimit: e.SLUICE_SUITE_HISTORY_LIMIT,
    suiteLivenessMs: e.SLUICE_SUITE_LIVENESS_MS,
    runnerWaitMs: e.SLUICE_RUNNER_WAIT_MS,
    postBuildWaitMs: e.SLUICE_POST_BUILD_WAIT_MS,
    temporalUiUrl: e.SLUICE_TEMPORAL_UI_URL?.replace(/\/+$/, ''),
    retentionDays: e.SLUICE_RETENTION_DAYS,
    deliveryRetentionDays: e.SLUICE_DELIVERY_RETENTION_DAYS,
    store: storeSettings(e),
    cacheLocal: { dir: e.SLUICE_CACHE_LOCAL_DIR, maxBytes: e.SLUICE_CACHE_LOCAL_MAX_MB },
    gitMirrorMaxBytes: e.SLUICE_GIT_MIRROR_MAX_MB,
    keptTrees: e.SLUICE_KEPT_TREES,
    cacheLimits: { maxEntryBytes: e.SLUICE_CACHE_MAX_ENTRY_MB, maxRepoBytes: e.SLUICE_CACHE_MAX_REPO_MB },
    images: {
      dir: e.SLUICE_IMAGE_DIR,
      maxBytes: e.SLUICE_IMAGE_MAX_MB,
      mirror: e.SLUICE_REGISTRY_MIRROR ? { host: new URL(e.SLUICE_REGISTRY_MIRROR).host, insecure: e.SLUICE_REGISTRY_MIRROR.startsWith('http:') } : null,
      ...(e.SLUICE_CRANE ? { crane: e.SLUICE_CRANE } : {}),
    },
    artifactLimits: { maxFileBytes: e.SLUICE_ARTIFACT_MAX_FILE_MB, maxBuildBytes: e.SLUICE_ARTIFACT_MAX_BUILD_MB },
    hookTimeoutMs: e.SLUICE_HOOK_TIMEOUT_MS,
    services: { postgresql: e.SLUICE_SERVICE_POSTGRESQL_URL, mysql: e.SLUICE_SERVICE_MYSQL_URL, redis: e.SLUICE_SERVICE_REDIS_URL },
    tracing: tracingSettings(e, role),
    metrics: e.SLUICE_METRICS_PORT === undefined ? undefined : { host: e.SLUICE_METRICS_HOST, port: e.SLUICE_METRICS_PORT },
    signInProviders: e.SLUICE_SIGN_IN_PROVIDERS ?? [],
    signInRefreshMs: e.SLUICE_SIGN_IN_REFRESH_SECONDS === undefined ? DEFAULT_SIGN_IN_REFRESH_MS : e.SLUICE_SIGN_IN_REFRESH_SECONDS * 1000,
  };
}

/** Off unless an OTLP endpoint is set (and OTEL_SDK_DISABLED is not `true`), as OpenTelemetry's SDKs read these variables. */
function tracingSettings(e: z.infer<typeof EnvSchema>, role: Role): TracingSettings | undefined {
  if (e.OTEL_SDK_DISABLED === 'true') return undefined;
  const tracesUrl = e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (e.OTEL_EXPORTER_OTLP_ENDPOINT && `${e.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`);
  if (!tracesUrl) return undefined;
  return { tracesUrl, serviceName: e.OTEL_SERVICE_NAME ?? (role === 'all' ? 'sluice' : `sluice-${role}`) };
}

function storeSettings(e: z.infer<typeof EnvSchema>): StoreSettings {
  const url = e.SLUICE_CACHE_URL;
  if (!url.startsWith('s3://')) return { kind: 'dir', dir: url.startsWith('file://') ? url.slice('file://'.length) : url };
  const [bucket, ...rest] = url.slice('s3://'.length).split('/');
  const prefix = rest.join('/').replace(/^\/+|\/+$/g, '');
  return {
    kind: 's3',
    bucket: bucket!,
    prefix: prefix === '' ? '' : `${prefix}/`,
    endpoint: e.SLUICE_CACHE_S3_ENDPOINT,
    region: e.SLUICE_CACHE_S3_REGION,
    accessKeyId: e.SLUICE_CACHE_S3_ACCESS_KEY_ID,
    secretAccessKey: e.SLUICE_CACHE_S3_SECRET_ACCESS_KEY,
    // S3-compatible servers mostly want bucket names in the path; AWS wants them in the host.
    forcePathStyle: e.SLUICE_CACHE_S3_FORCE_PATH_STYLE ? e.SLUICE_CACHE_S3_FORCE_PATH_STYLE === 'true' : e.SLUICE_CACHE_S3_ENDPOINT !== undefined,
  };
}

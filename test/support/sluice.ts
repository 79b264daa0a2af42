/**
 * A whole Sluice for one e2e test file: the real API (HTTP on loopback), a real worker, the
 * shared Temporal dev server and test database that globalSetup started. Task queues are the
 * file's own, so files never run each other's activities.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { unmountUnder } from '../../src/steps/cache/overlay';
import { removeDir } from './removeDir';
import { parseAllowList } from '../../src/ip/ranges';
import { heralded, startHerald } from '../../src/api/received';
import { buildApp } from '../../src/api/app';
import type { Config, WebhookRetry } from '../../src/config';
import type { PostRetry } from '../../src/core/retry';
import { createPool, type Pool } from '../../src/db/pool';
import { freePort } from '../../src/temporal/devServer';
import { createBatcher, createEnqueuer, signalIntake, signalSuite } from '../../src/temporal/enqueue';
import type { WorkflowIds } from '../../src/core/workflowIds';
import { loadWorkflowIds } from '../../src/temporal/ids';
import { stopSession } from '../../src/temporal/stop';
import { triggerKnowledge } from '../../src/api/triggerKnowledge';
import type { Intake } from '../../src/core/intake';
import { runRunner, type RunnerHandle } from '../../src/runner/run';
import { runWorker, type WorkerHandle } from '../../src/worker/run';
import { callAdmin } from './adminApi';

export interface Sluice {
  config: Config;
  pool: Pool;
  client: Client;
  /** This installation's workflow ids (`w.sluice.ids.session(12)`). */
  ids: WorkflowIds;
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Its runners' names (host-pid, as test results and the web UI name them). */
  runnerNames: string[];
  /** Calls the management API with the admin token; throws unless the status is 2xx. */
  admin<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<T>;
  stop(): Promise<void>;
}

export function requireEnv(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run e2e tests through jest, whose globalSetup sets it`);
  return v;
}


export async function startSluice(
  opts: {
    webhookRetry?: Partial<WebhookRetry>;
    postRetry?: PostRetry;
    testTimeoutMs?: number;
    suiteHistoryLimit?: number;
    smtpUrl?: string;
    runnerSlots?: number;
    maxTestFiles?: number;
    postBuildWaitMs?: number;
    buildUser?: string;
    sandbox?: Config['sandbox'];
    sandboxNetwork?: boolean;
    temporalUiUrl?: string;
    suiteLivenessMs?: number;
    runnerWaitMs?: number;
    /** The service servers builds may ask for (SLUICE_SERVICE_*_URL); none by default. */
    services?: Config['services'];
    /** Where caches and artifacts go; default a directory of this Sluice's own. */
    store?: Config['store'];
    hookTimeoutMs?: number;
    /** Runners started with this Sluice (each its own process's runner in one process); default 1. */
    runners?: number;
    /**
     * How its runners isolate builds: `trusted` (the default unless `sandbox` or `buildUser` is
     * given) runs them as this process's user without a sandbox, so that tests can talk to their
     * builds through files of their own outside the checkout (a release file, a pid file, a log);
     * `default` is what a runner does with nothing configured: bubblewrap where it works, never
     * as root (runner/isolation.ts). Isolation's own tests use `default` or name the settings.
     */
    isolation?: 'trusted' | 'default';
    /**
     * A database of its own (test/support/db.ts createTestDatabase); by default the e2e run's
     * shared one, where other files' organizations and repositories, sealed under other keys,
     * sit beside this Sluice's: a test that lists everything needs its own.
     */
    databaseUrl?: string;
    /** The API's port; default a free one (an identity provider registers the callback URL before Sluice starts). */
    port?: number;
    /** Identity providers people sign in with (SLUICE_SIGN_IN_PROVIDERS); none by default. */
    signInProviders?: Config['signInProviders'];
    /**
     * Its runners' image stores: one each (as on separate machines), or one they share (as
     * runner processes of one machine); a store of this Sluice's own either way. Default shared.
     */
    imageStores?: 'per-runner' | 'shared';
    /** Docker Hub's images through this registry (SLUICE_REGISTRY_MIRROR). */
    registryMirror?: { host: string; insecure: boolean };
    /** How much each image store holds before it evicts (SLUICE_IMAGE_MAX_MB); default 20 GiB. */
    imageMaxBytes?: number;
  } = {},
): Promise<Sluice> {
  const port = opts.port ?? (await freePort());
  const tag = randomBytes(4).toString('hex');
  const workspaceDir = await mkdtemp(path.join(os.tmpdir(), 'sluice-ws-'));
  // Its own cache store and runner's local copies, beside the workspaces: files never share entries.
  const cacheDir = `${workspaceDir}-cache`;
  const config: Config = {
    databaseUrl: opts.databaseUrl ?? requireEnv('SLUICE_TEST_DATABASE_URL'),
    temporalAddress: requireEnv('SLUICE_TEST_TEMPORAL_ADDRESS'),
    temporalNamespace: 'default',
    baseUrl: `http://127.0.0.1:${port}`,
    adminToken: `admin-${randomBytes(16).toString('hex')}`,
    secretKey: randomBytes(32),
    smtpUrl: opts.smtpUrl,
    host: '127.0.0.1',
    port,
    taskQueue: `sluice-${tag}`,
    buildQueue: `sluice-build-${tag}`,
    workspaceDir,
    testTimeoutMs: opts.testTimeoutMs ?? 30_000,
    // Fast retries, so "receiver down, then up" takes seconds, not minutes.
    webhookRetry: { initialIntervalMs: 200, maximumIntervalMs: 1_000, backoffCoefficient: 2, maximumAttempts: 30, ...opts.webhookRetry },
    // The default policies' shape (3 attempts each), with waits of a fraction of a second.
    postRetry: opts.postRetry ?? {
      push: { initialIntervalMs: 200, backoffCoefficient: 2, maximumIntervalMs: 1_000, maximumAttempts: 3 },
      chat: { initialIntervalMs: 200, backoffCoefficient: 2, maximumIntervalMs: 1_000, maximumAttempts: 3 },
      email: { initialIntervalMs: 200, backoffCoefficient: 2, maximumIntervalMs: 1_000, maximumAttempts: 3 },
    },
    // The receivers of these tests listen on loopback, which the SSRF guard blocks by default.
    webhookAllow: parseAllowList('127.0.0.0/8'),
    suiteHistoryLimit: opts.suiteHistoryLimit,
    maxTestFiles: opts.maxTestFiles,
    buildUser: opts.buildUser,
    sandbox: opts.sandbox,
    // `stop` waits for push, chat and e-mail (these finish in well under a second here), so a
    // test that reads the steps once `stop` arrived finds them; the bound has its own test.
    postBuildWaitMs: opts.postBuildWaitMs ?? 120_000,
    sandboxNetwork: opts.sandboxNetwork,
    temporalUiUrl: opts.temporalUiUrl,
    suiteLivenessMs: opts.suiteLivenessMs,
    runnerWaitMs: opts.runnerWaitMs,
    services: opts.services ?? {},
    store: opts.store ?? { kind: 'dir', dir: path.join(cacheDir, 'store') },
    cacheLocal: { dir: path.join(cacheDir, 'local'), maxBytes: 1024 * 1024 * 1024 },
    hookTimeoutMs: opts.hookTimeoutMs,
    signInProviders: opts.signInProviders,
    // Beside the workspaces, not under the cache's 0700 directory: the build user enters it (steps/image/store.ts).
    images: { dir: `${workspaceDir}-images`, maxBytes: opts.imageMaxBytes ?? 20 * 1024 ** 3, mirror: opts.registryMirror ?? null },
  };

  // Each part is stopped again, newest first, by stop() or when a later one fails to start (a
  // worker left polling would keep jest from exiting).
  const parts: (() => Promise<unknown>)[] = [
    () => removeDir(workspaceDir),
    () => rm(cacheDir, { recursive: true, force: true }),
    () => rm(`${workspaceDir}-images`, { recursive: true, force: true }),
    // Caches restored by overlay mounts (a session's tree outlives its build until a sweep): detached first.
    () => unmountUnder([workspaceDir]),
  ];
  // Every part is stopped even when one fails (the first failure is thrown after): a part left
  // running (a worker polling, a server listening) would keep jest from ever exiting.
  const stopAll = async () => {
    let failed: { err: unknown } | undefined;
    for (const stop of parts.splice(0).reverse()) {
      try {
        await stop();
      } catch (err) {
        failed ??= { err };
      }
    }
    if (failed) throw failed.err;
  };
  try {
    const pool = createPool(config.databaseUrl);
    parts.push(() => pool.end());
    const ids = await loadWorkflowIds(pool);
    const connection = await Connection.connect({ address: config.temporalAddress });
    parts.push(() => connection.close());
    const client = new Client({ connection, namespace: config.temporalNamespace });
    const worker: WorkerHandle = await runWorker(config, {
      workflowBundle: { codePath: requireEnv('SLUICE_TEST_WORKFLOW_BUNDLE') },
    });
    parts.push(() => worker.shutdown());
    const runnerNames: string[] = [];
    for (let i = 0; i < (opts.runners ?? 1); i++) {
      // As `npm start` does: where bubblewrap does not work (a developer's laptop), run on.
      const trustedBuilds = (opts.isolation ?? (opts.sandbox || opts.buildUser ? 'default' : 'trusted')) === 'trusted';
      const own = opts.imageStores === 'per-runner' ? { ...config, images: { ...config.images!, dir: path.join(config.images!.dir, `runner-${i + 1}`) } } : config;
      const runner: RunnerHandle = await runRunner(own, { slots: opts.runnerSlots, requireSandbox: false, trustedBuilds });
      parts.push(() => runner.shutdown());
      runnerNames.push(runner.name);
    }
    const knowledge = triggerKnowledge(pool, { databaseUrl: config.databaseUrl });
    parts.push(async () => knowledge.close());
    // As the api process does: it records what Temporal took and sends its `received` (api/herald.ts).
    const herald = startHerald({ config, pool, ids, migrated: () => true, signal: (id, name, payload) => client.workflow.getHandle(id).signal(name, payload) });
    parts.push(() => herald.close());
    const app: FastifyInstance = buildApp({
      config,
      pool,
      enqueue: createEnqueuer(heralded(herald, (reqs) => signalSuite(client, config, ids, reqs))),
      announce: herald.announce,
      intake: createBatcher((i: Intake) => i.repoId, (batch) => signalIntake(client, config, ids, batch)),
      knowledge,
      stop: (target, stoppedBy) => stopSession(client, ids, target, stoppedBy),
      workflowIds: ids,
    });
    parts.push(() => app.close());
    await app.listen({ host: '127.0.0.1', port });

    return {
      config,
      pool,
      client,
      ids,
      url: config.baseUrl,
      runnerNames,
      admin: (method, p, body) => callAdmin(config.baseUrl, config.adminToken, method, p, body),
      stop: stopAll,
    };
  } catch (err) {
    await stopAll().catch(() => undefined);
    throw err;
  }
}

export { eventually } from './wait';
/** One free-port finder for the tests and the dev server alike. */
export { freePort };

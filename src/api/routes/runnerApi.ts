/**
 * The runner API (`/api/v1/runner/...`): everything a runner that holds only a token
 * (`Authorization: Bearer <runner token>`) does, over HTTP. It takes jobs (one build activity
 * each: worker/gateway.ts) of the queues it serves that its token may take, heartbeats them,
 * ends them, and while it runs one reads and writes that build's records (steps/records.ts)
 * and blobs, signals that build's workflow, and nothing else: every call names its job, and a
 * call about another build, or from a revoked token, is refused. What is secret (the checkout
 * key, build secrets) is read here only for the build the job belongs to, and only as far as
 * the build may have it (no secrets for a build the trust rules deny them).
 */
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { BuildRecords } from '../../steps/records';
import { DEFAULT_ARTIFACT_LIMITS, DEFAULT_CACHE_DIR, DEFAULT_CACHE_LIMITS, MAX_ARTIFACT_FILES } from '../../config';
import { ownRunnersQueue } from '../../core/queues';
import { FIRST_FAIL_SIGNAL, WORKERS_READY_SIGNAL } from '../../core/signalNames';
import { fromWire, toWire } from '../../core/wire';
import { pgBuildRecords } from '../../db/buildRecords';
import { finishJob, heartbeatJob, JOB_QUEUED_CHANNEL, listenForJobs, releaseJob, rowOfJob, runningJob, sessionsOfToken, takeJob, type RunnerJob } from '../../db/runnerJobs';
import { tokenByHash, touchRunnerToken } from '../../db/runnerTokens';
import { checkKey, openStore, type BlobStore } from '../../store';
import type { ApiDeps } from '../deps';
import { bearerToken } from '../auth';
import { runnerTokenHash } from './admin/runnerTokens';
import { HttpError, parseId } from '../http';
import { notFound, validate } from '../../app/errors';

/**
 * A records call carries what the build recorded (a claim's results, its JUnit cases: up to
 * 20,000 cases of 16 MiB reports, steps/tests/junit.ts), more than the API's usual 1 MiB.
 */
const RECORDS_BODY_LIMIT = 64 * 1024 * 1024;

/** The longest a poll for a job waits before it answers 204. */
export const MAX_POLL_MS = 25_000;

const Poll = z.strictObject({
  runner: z.string().min(1).max(200),
  version: z.string().min(1).max(100),
  queues: z.array(z.string().min(1).max(200)).min(1).max(20),
  wait_ms: z.number().int().min(0).max(MAX_POLL_MS).default(MAX_POLL_MS),
});
const Finish = z.union([
  z.strictObject({ result: z.unknown() }),
  z.strictObject({ error: z.strictObject({ message: z.string().max(64 * 1024), type: z.string().max(200).optional(), retryable: z.boolean() }) }),
]);
const Call = z.strictObject({ args: z.array(z.unknown()).max(10) });
const Signal = z.strictObject({ name: z.enum([FIRST_FAIL_SIGNAL, WORKERS_READY_SIGNAL]), payload: z.unknown() });
const Sweep = z.strictObject({ ids: z.array(z.number().int().positive()).max(10_000) });
const Keys = z.strictObject({ keys: z.array(z.string().max(1_000)).max(10_000) });

type Job = RunnerJob & { suiteId: number };
type Method = Exclude<keyof BuildRecords, 'endedSessions' | 'liveStoreKeys'>;
type Owns = (table: Parameters<typeof rowOfJob>[1], id: unknown) => Promise<boolean>;

const refused = (why: string) => new HttpError(403, 'forbidden', why);

/** The cache a lane's job may use, as the workflow decided it (core/trust.ts): which branches it reads, where it may write (null: nowhere). */
function cacheOf(job: Job): { readScopes: string[]; writeScope: string | null } {
  const cache = (job.input as { cache?: { readScopes?: unknown; writeScope?: unknown } } | null)?.cache;
  const readScopes = Array.isArray(cache?.readScopes) ? cache.readScopes.filter((s): s is string => typeof s === 'string') : [];
  return { readScopes, writeScope: typeof cache?.writeScope === 'string' ? cache.writeScope : null };
}
const writes = (job: Job) => cacheOf(job).writeScope !== null;
const readsOnly = (job: Job, scopes: unknown) => Array.isArray(scopes) && scopes.every((s) => cacheOf(job).readScopes.includes(s as string));

/**
 * What each records call may name: the job's session, its repository, its suite, or a row of
 * them; a cache entry only in the scopes the build may read or write. A method missing here is
 * refused.
 */
const CHECKS: Record<Method, (job: Job, args: unknown[], owns: Owns, limits: ServerLimits) => boolean | Promise<boolean>> = (() => {
  const session = (job: Job, args: unknown[]) => args[0] === job.sessionId;
  const sessionField = (job: Job, args: unknown[]) => (args[0] as { sessionId?: unknown } | null)?.sessionId === job.sessionId;
  const repo = (job: Job, args: unknown[]) => args[0] === job.repoId;
  return {
    pullSource: repo,
    recordKnownHosts: repo,
    buildSecrets: repo,
    registryLogins: repo,
    installationId: () => true,
    repoIdOfSession: session,
    suiteJUnitPatternOfSession: session,
    recordWorkerStep: session,
    markWorkerReady: session,
    markWorkerFailed: session,
    rendezvous: session,
    setupTiming: session,
    startHook: sessionField,
    finishHook: (_job, args, owns) => owns('session_hooks', args[0]),
    appendOutput: session,
    startBatch: sessionField,
    finishBatch: (_job, args, owns) => owns('test_batches', args[0]),
    recordedDurations: (job, args) => args[0] === job.suiteId,
    enqueueTests: session,
    claimFiles: session,
    renewClaims: session,
    releaseClaims: session,
    recordFileResults: session,
    workLeftMs: session,
    queueProgress: session,
    replaceJUnitResults: session,
    findExactEntry: (job, args) => repo(job, args) && readsOnly(job, args[1]),
    findNewestEntry: (job, args) => repo(job, args) && readsOnly(job, args[1]),
    touchEntry: (_job, args, owns) => owns('cache_entries', args[0]),
    // A new entry: in the build's own write scope, under its repository's key prefix, within the entry size limit.
    insertEntry: (job, args, _owns, limits) => {
      const e = args[0] as { repoId?: unknown; scope?: unknown; storeKey?: unknown; size?: unknown } | null;
      return (
        e?.repoId === job.repoId &&
        writes(job) &&
        e.scope === cacheOf(job).writeScope &&
        typeof e.storeKey === 'string' &&
        e.storeKey.startsWith(`caches/${job.repoId}/`) &&
        typeof e.size === 'number' &&
        e.size <= limits.maxEntryBytes
      );
    },
    evictEntries: (job, args) => repo(job, args) && writes(job),
    deleteEntry: (job, args, owns) => writes(job) && owns('cache_entries', args[0]),
    reserveArtifact: (job, args, _owns, limits) => sessionField(job, args) && typeof (args[0] as { size?: unknown }).size === 'number' && (args[0] as { size: number }).size <= limits.maxFileBytes,
    markArtifactStored: (_job, args, owns) => owns('artifacts', args[0]),
    dropArtifact: (_job, args, owns) => owns('artifacts', args[0]),
    deleteWorkerArtifacts: session,
  };
})();

interface ServerLimits {
  maxEntryBytes: number;
  maxRepoBytes: number;
  maxFileBytes: number;
  maxBuildBytes: number;
}

/** Whether the job's build may have its repository's secrets (the workflow decided: core/trust.ts). */
const jobMayHaveSecrets = (job: Job) => (job.input as { secrets?: unknown } | null)?.secrets === true;

/** Store keys a job may read or write: its repository's cache entries, its session's artifacts. */
const jobMayUseKey = (job: Job, key: string) => key.startsWith(`caches/${job.repoId}/`) || key.startsWith(`artifacts/${job.sessionId}/`);

declare module 'fastify' {
  interface FastifyRequest {
    runnerToken?: { id: number; orgId: number | null };
  }
}

export function registerRunnerApi(app: FastifyInstance, deps: ApiDeps): void {
  const { pool, config } = deps;
  const records = pgBuildRecords(pool, config.secretKey);
  const limits: ServerLimits = { ...(config.cacheLimits ?? DEFAULT_CACHE_LIMITS), ...(config.artifactLimits ?? DEFAULT_ARTIFACT_LIMITS) };
  let store: BlobStore | undefined;
  const blobs = () => (store ??= openStore(config.store ?? { kind: 'dir', dir: DEFAULT_CACHE_DIR }));

  // Polls wait for a job queued on one of their queues (NOTIFY), with a poll of the table behind it.
  const waiting = new Set<() => void>();
  let unlisten: Promise<() => void> | undefined;
  app.addHook('onClose', async () => (await unlisten)?.());

  app.addHook('onRequest', async (request, reply) => {
    const given = bearerToken(request);
    const token = given === undefined ? undefined : await tokenByHash(pool, runnerTokenHash(given));
    if (!token) {
      return reply.code(401).header('www-authenticate', 'Bearer realm="sluice-runner"').send({ error: 'unauthorized', message: 'send Authorization: Bearer <runner token> (a live one)' });
    }
    request.runnerToken = token;
    return undefined;
  });

  const tokenOf = (request: FastifyRequest) => request.runnerToken!;
  const jobOf = async (request: FastifyRequest<{ Params: { id: string } }>): Promise<Job> => {
    const job = await runningJob(pool, parseId(request.params.id, 'job'), tokenOf(request).id);
    if (!job) throw new HttpError(404, 'not found', 'no such job running on this token (ended, cancelled or lost)');
    return job;
  };

  app.post('/runner/jobs/next', async (request, reply) => {
    const body = validate(Poll, request.body);
    const token = tokenOf(request);
    // An organization's runners serve its own queue, where its suites with own_runners send their
    // builds, and no other: a queue the gateway serves is served for token runners only, and an
    // organization's token must not take a shared queue's work away from the other runners.
    const queues = token.orgId === null ? body.queues : [ownRunnersQueue(config.buildQueue, token.orgId)];
    await touchRunnerToken(pool, token.id, { runner: body.runner, version: body.version, queues });
    unlisten ??= listenForJobs(pool, JOB_QUEUED_CHANNEL, () => [...waiting].forEach((wake) => wake()));
    // The runner hung up (it is stopping): not `request.raw.destroyed`, which is true as soon as the body was read.
    let gone = false;
    reply.raw.once('close', () => (gone = true));
    const deadline = Date.now() + body.wait_ms;
    for (;;) {
      const job = await takeJob(pool, token, body.runner, queues);
      if (job && gone) {
        await releaseJob(pool, job.id);
        return reply;
      }
      if (job) return { job: { id: job.id, kind: job.kind, attempt: job.attempt, input: job.input } };
      const left = deadline - Date.now();
      if (left <= 0 || gone) return reply.code(204).send();
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          waiting.delete(wake);
          resolve();
        };
        // NOTIFY wakes it when a job is queued; the timer only covers a notification missed.
        const timer = setTimeout(wake, Math.min(left, 5_000));
        waiting.add(wake);
      });
    }
  });

  app.post<{ Params: { id: string } }>('/runner/jobs/:id/heartbeat', async (request) => {
    const beat = await heartbeatJob(pool, parseId(request.params.id, 'job'), tokenOf(request).id);
    if (!beat) throw new HttpError(404, 'not found', 'no such job running on this token (ended, cancelled or lost)');
    return beat;
  });

  app.post<{ Params: { id: string } }>('/runner/jobs/:id/finish', { bodyLimit: RECORDS_BODY_LIMIT }, async (request, reply) => {
    const output = validate(Finish, request.body);
    if (!(await finishJob(pool, parseId(request.params.id, 'job'), tokenOf(request).id, output as Parameters<typeof finishJob>[3]))) {
      throw new HttpError(404, 'not found', 'no such job running on this token (ended, cancelled or lost)');
    }
    return reply.code(204).send();
  });

  app.post<{ Params: { id: string; method: string } }>('/runner/jobs/:id/records/:method', { bodyLimit: RECORDS_BODY_LIMIT }, async (request) => {
    const job = await jobOf(request);
    const method = request.params.method as Method;
    if (!Object.hasOwn(CHECKS, method)) throw notFound('records call');
    const args = fromWire(validate(Call, request.body).args) as unknown[];
    const owns: Owns = (table, id) => (typeof id === 'number' ? rowOfJob(pool, table, id, job) : Promise.resolve(false));
    if (!(await CHECKS[method](job, args, owns, limits))) throw refused(`${method} names something outside what the build this job belongs to may touch`);
    if (method === 'buildSecrets' && !jobMayHaveSecrets(job)) return { value: toWire({ values: {}, unreadable: [] }) };
    if (method === 'registryLogins' && !jobMayHaveSecrets(job)) return { value: toWire([]) };
    // Limits are the installation's, whatever the runner says.
    if (method === 'evictEntries') args[1] = limits.maxRepoBytes;
    if (method === 'reserveArtifact') args[1] = { maxBuildBytes: limits.maxBuildBytes, maxFiles: MAX_ARTIFACT_FILES };
    const value = await (records[method] as (...a: unknown[]) => Promise<unknown>)(...args);
    return { value: toWire(value) };
  });

  app.post<{ Params: { id: string } }>('/runner/jobs/:id/signal', async (request, reply) => {
    const job = await jobOf(request);
    const { name, payload } = validate(Signal, request.body);
    if (!deps.signalWorkflow) throw new HttpError(503, 'unavailable', 'this API cannot reach Temporal');
    await deps.signalWorkflow(job.workflowId, name, payload);
    return reply.code(204).send();
  });

  // Blobs: the job's cache entries and artifacts, streamed through the API's store.
  app.addContentTypeParser('application/octet-stream', (_request, payload, done) => done(null, payload));
  /**
   * Whether the job may write (or delete) the blob at `key`: a new cache entry's, when the build
   * may save one, never a blob an entry names (that would change what other builds restore); an
   * artifact it reserved. The most it may write there.
   */
  const writable = async (job: Job, key: string): Promise<number> => {
    if (key.startsWith('caches/')) {
      if (!writes(job)) throw refused('this build may not save a cache entry');
      if ((await records.liveStoreKeys([key])).size > 0) throw refused('an entry names this blob: it is not this build’s to change');
      return limits.maxEntryBytes;
    }
    const id = Number(/^artifacts\/\d+\/\d+\/(\d+)$/.exec(key)?.[1]);
    if (!(await rowOfJob(pool, 'artifacts', id, job))) throw refused('no artifact of this build was reserved at this key');
    return limits.maxFileBytes;
  };

  app.put<{ Params: { id: string; '*': string } }>('/runner/jobs/:id/blobs/*', async (request, reply) => {
    const job = await jobOf(request);
    const key = blobKey(request.params['*'], job);
    const max = await writable(job, key);
    const dir = await mkdtemp(path.join(os.tmpdir(), 'sluice-blob-'));
    try {
      const file = path.join(dir, 'blob');
      let bytes = 0;
      const capped = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          bytes += chunk.length;
          done(bytes > max ? new HttpError(413, 'payload too large', `a blob here may have at most ${max} bytes`) : null, chunk);
        },
      });
      await pipeline(request.body as NodeJS.ReadableStream, capped, createWriteStream(file));
      await blobs().putFile(key, file);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    return reply.code(204).send();
  });
  app.get<{ Params: { id: string; '*': string } }>('/runner/jobs/:id/blobs/*', async (request, reply) => {
    const job = await jobOf(request);
    const found = await blobs().open(blobKey(request.params['*'], job));
    if (!found) throw notFound('blob');
    return reply.header('content-type', 'application/octet-stream').header('content-length', found.size).send(found.stream);
  });
  app.delete<{ Params: { id: string; '*': string } }>('/runner/jobs/:id/blobs/*', async (request, reply) => {
    const job = await jobOf(request);
    const key = blobKey(request.params['*'], job);
    // An artifact of its own build it may drop; a cache blob only once no entry names it (deleted, evicted).
    if (key.startsWith('caches/')) await writable(job, key);
    await blobs().delete(key);
    return reply.code(204).send();
  });

  // A runner's sweeps between jobs: which of the builds it ran have ended, which local cache copies are still named.
  app.post('/runner/ended-sessions', async (request) => {
    const { ids } = validate(Sweep, request.body);
    // Only of the sessions it ran: the others' trees, in a workspace it shares with other
    // runners on its machine, are theirs to sweep (and their state none of its business).
    return { ended: await records.endedSessions(await sessionsOfToken(pool, tokenOf(request).id, ids)) };
  });
  app.post('/runner/live-store-keys', async (request) => {
    const { keys } = validate(Keys, request.body);
    return { live: [...(await records.liveStoreKeys(keys))] };
  });
}

function blobKey(raw: string, job: Job): string {
  let key: string;
  try {
    key = checkKey(raw);
  } catch {
    throw new HttpError(400, 'invalid request', 'not a store key', 'key');
  }
  if (!jobMayUseKey(job, key)) throw refused('the key is outside the build this job belongs to');
  return key;
}

/**
 * What a runner that holds only a token may do (issue 31), decided here; the runner API
 * (api/routes/runnerApi.ts) is its HTTP. A runner takes jobs (one build activity each:
 * worker/gateway.ts) of the queues its token may serve, heartbeats them, ends them, and while it
 * runs one reads and writes that build's records (steps/records.ts) and blobs: every call names
 * its job, and a call about another build, or from a revoked token, is refused. What is secret
 * (the checkout key, build secrets) is handed only to the build the job belongs to, and only as
 * far as the build may have it (no secrets for a build the trust rules deny them).
 */
import { z } from 'zod';
import { DEFAULT_ARTIFACT_LIMITS, DEFAULT_CACHE_LIMITS, MAX_ARTIFACT_FILES, type Config } from '../config';
import { ownRunnersQueue } from '../core/queues';
import { FIRST_FAIL_SIGNAL, WORKERS_READY_SIGNAL } from '../core/signalNames';
import { fromWire, toWire } from '../core/wire';
import { pgBuildRecords } from '../db/buildRecords';
import { checkoutTokens } from './githubApps';
import { finishJob, heartbeatJob, JOB_QUEUED_CHANNEL, listenForJobs, releaseJob, rowOfJob, runningJob, sessionsOfToken, takeJob, type JobOutput, type RunnerJob } from '../db/runnerJobs';
import { tokenByHash, touchRunnerToken } from '../db/runnerTokens';
import type { BuildRecords } from '../steps/records';
import { checkKey } from '../store';
import type { AppDeps } from './deps';
import { AppError, notFound, parseId, validate } from './errors';
import { runnerTokenHash } from './runners';

/** The longest a poll for a job waits before it answers that there is none. */
export const MAX_POLL_MS = 25_000;

export const Poll = z.strictObject({
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
export const Signal = z.strictObject({ name: z.enum([FIRST_FAIL_SIGNAL, WORKERS_READY_SIGNAL]), payload: z.unknown() });
const Sweep = z.strictObject({ ids: z.array(z.number().int().positive()).max(10_000) });
const Keys = z.strictObject({ keys: z.array(z.string().max(1_000)).max(10_000) });

/** A runner token as the runner API knows its caller. */
export interface RunnerTokenRef {
  id: number;
  orgId: number | null;
}

export type Job = RunnerJob & { suiteId: number };
type Method = Exclude<keyof BuildRecords, 'endedSessions' | 'liveStoreKeys'>;
type Owns = (table: Parameters<typeof rowOfJob>[1], id: unknown) => Promise<boolean>;

interface ServerLimits {
  maxEntryBytes: number;
  maxRepoBytes: number;
  maxFileBytes: number;
  maxBuildBytes: number;
}

const refused = (why: string) => new AppError('forbidden', why);
const noSuchJob = () => new AppError('not found', 'no such job running on this token (ended, cancelled or lost)');

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
    failureHistory: (job, args) => args[0] === job.suiteId,
    enqueueTests: session,
    claimFiles: session,
    renewClaims: session,
    releaseClaims: session,
    recordFileResults: session,
    workLeftMs: session,
    queueProgress: session,
    replaceJUnitResults: session,
    recordRunCases: session,
    mutedTests: session,
    // A map only from a job the workflow made a mapping run of (a push to the default branch).
    startMap: (job, args) => session(job, args) && (job.input as { affected?: { mayMap?: unknown } } | null)?.affected?.mayMap === true,
    recordFileDeps: (job, args) => session(job, args) && (job.input as { trace?: unknown } | null)?.trace === true,
    mapCandidates: session,
    loadMap: session,
    recordAffected: session,
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

/** Whether the job's build may have its repository's secrets (the workflow decided: core/trust.ts). */
const jobMayHaveSecrets = (job: Job) => (job.input as { secrets?: unknown } | null)?.secrets === true;

/** Store keys a job may read or write: its repository's cache entries, its session's artifacts. */
const jobMayUseKey = (job: Job, key: string) => key.startsWith(`caches/${job.repoId}/`) || key.startsWith(`artifacts/${job.sessionId}/`);

/** The runner jobs of an installation: what its runner API does, without the HTTP. */
export function runnerJobs({ pool, config }: Pick<AppDeps, 'pool'> & { config: Pick<Config, 'secretKey' | 'webhookAllow' | 'buildQueue' | 'cacheLimits' | 'artifactLimits'> }) {
  // A build through a GitHub App gets its checkout's token with the job's pullSource, minted here.
  const records = pgBuildRecords(pool, config.secretKey, checkoutTokens({ pool, config }));
  const limits: ServerLimits = { ...(config.cacheLimits ?? DEFAULT_CACHE_LIMITS), ...(config.artifactLimits ?? DEFAULT_ARTIFACT_LIMITS) };

  return {
    /** The live runner token a Bearer token is; undefined when it is none (unknown, revoked). */
    tokenOf: (given: string): Promise<RunnerTokenRef | undefined> => tokenByHash(pool, runnerTokenHash(given)),

    /**
     * A poll's queues, recorded as the runner's: an organization's runners serve its own queue,
     * where its suites with own_runners send their builds, and no other (a queue the gateway
     * serves is served for token runners only, and an organization's token must not take a
     * shared queue's work away from the other runners).
     */
    async announce(token: RunnerTokenRef, poll: z.output<typeof Poll>): Promise<string[]> {
      const queues = token.orgId === null ? poll.queues : [ownRunnersQueue(config.buildQueue, token.orgId)];
      await touchRunnerToken(pool, token.id, { runner: poll.runner, version: poll.version, queues });
      return queues;
    },
    take: (token: RunnerTokenRef, runner: string, queues: readonly string[]) => takeJob(pool, token, runner, queues),
    /** Puts a job taken for a runner that hung up back in its queue. */
    giveBack: (jobId: number) => releaseJob(pool, jobId),
    /** Calls `wake` whenever a job is queued (NOTIFY); resolves to what stops listening. */
    onQueued: (wake: () => void) => listenForJobs(pool, JOB_QUEUED_CHANNEL, wake),

    /** The job a path names, running on this token. */
    async running(ref: string, token: RunnerTokenRef): Promise<Job> {
      const job = await runningJob(pool, parseId(ref, 'job'), token.id);
      if (!job) throw noSuchJob();
      return job;
    },
    async heartbeat(ref: string, token: RunnerTokenRef): Promise<{ cancel: boolean }> {
      const beat = await heartbeatJob(pool, parseId(ref, 'job'), token.id);
      if (!beat) throw noSuchJob();
      return beat;
    },
    async finish(ref: string, token: RunnerTokenRef, input: unknown): Promise<void> {
      const output = validate(Finish, input) as JobOutput;
      if (!(await finishJob(pool, parseId(ref, 'job'), token.id, output))) throw noSuchJob();
    },

    /** One records call of a job's build, as the wire carries it, refused when it names what the build may not touch. */
    async callRecords(job: Job, method: string, input: unknown): Promise<{ value: unknown }> {
      if (!Object.hasOwn(CHECKS, method)) throw notFound('records call');
      const m = method as Method;
      const args = fromWire(validate(Call, input).args) as unknown[];
      const owns: Owns = (table, id) => (typeof id === 'number' ? rowOfJob(pool, table, id, job) : Promise.resolve(false));
      if (!(await CHECKS[m](job, args, owns, limits))) throw refused(`${m} names something outside what the build this job belongs to may touch`);
      if (m === 'buildSecrets' && !jobMayHaveSecrets(job)) return { value: toWire({ values: {}, unreadable: [] }) };
      if (m === 'registryLogins' && !jobMayHaveSecrets(job)) return { value: toWire([]) };
      // Limits are the installation's, whatever the runner says.
      if (m === 'evictEntries') args[1] = limits.maxRepoBytes;
      if (m === 'reserveArtifact') args[1] = { maxBuildBytes: limits.maxBuildBytes, maxFiles: MAX_ARTIFACT_FILES };
      const value = await (records[m] as (...a: unknown[]) => Promise<unknown>)(...args);
      return { value: toWire(value) };
    },

    /** The store key a path names, when it is the job's build's to use. */
    blobKey(raw: string, job: Job): string {
      let key: string;
      try {
        key = checkKey(raw);
      } catch {
        throw new AppError('invalid', 'not a store key', 'key');
      }
      if (!jobMayUseKey(job, key)) throw refused('the key is outside the build this job belongs to');
      return key;
    },

    /**
     * Whether the job may write (or delete) the blob at `key`: a new cache entry's, when the build
     * may save one, never a blob an entry names (that would change what other builds restore); an
     * artifact it reserved. The most it may write there.
     */
    async writableBlob(job: Job, key: string): Promise<number> {
      if (key.startsWith('caches/')) {
        if (!writes(job)) throw refused('this build may not save a cache entry');
        if ((await records.liveStoreKeys([key])).size > 0) throw refused('an entry names this blob: it is not this build’s to change');
        return limits.maxEntryBytes;
      }
      const id = Number(/^artifacts\/\d+\/\d+\/(\d+)$/.exec(key)?.[1]);
      if (!(await rowOfJob(pool, 'artifacts', id, job))) throw refused('no artifact of this build was reserved at this key');
      return limits.maxFileBytes;
    },

    /**
     * Which of the builds this token's runners ran have ended. Only of the sessions it ran: the
     * others' trees, in a workspace it shares with other runners on its machine, are theirs to
     * sweep (and their state none of its business).
     */
    async endedSessions(token: RunnerTokenRef, input: unknown): Promise<number[]> {
      const { ids } = validate(Sweep, input);
      return records.endedSessions(await sessionsOfToken(pool, token.id, ids));
    },
    /** Which of these local cache copies' keys an entry still names. */
    async liveStoreKeys(input: unknown): Promise<string[]> {
      const { keys } = validate(Keys, input);
      return [...(await records.liveStoreKeys(keys))];
    },
  };
}

import type { Pool } from 'pg';
import { DEFAULT_ARTIFACT_LIMITS, DEFAULT_CACHE_DIR, type Config } from '../config';
import { cacheDeps } from '../steps/cache';
import { checkoutTokens } from '../app/githubApps';
import { pgBuildRecords } from '../db/buildRecords';
import { openStore, type BlobStore } from '../store';
import { DEFAULT_STATUS_RETRY } from '../core/commitStatus';
import { createBuildActivities } from './steps/activities';
import type { BuildUser, ProcessGroups } from '../steps/isolation/process';
import type { Sandbox } from '../steps/isolation/sandbox';
import type { BuildRecords } from '../steps/records';
import { createCommitStatusActivity } from './commitStatus';
import { createCleanupActivity } from './cleanup';
import { createDeliverActivity } from './delivery';
import { createLivenessActivities } from './liveness';
import { endSquashedSessions } from '../delivery/squashed';
import { writeIntakes } from '../db/intake';
import { createReceivedSender } from './received';
import { createPostActivities } from './post/activities';
import { createSessionRecords } from './session/records';
import type { ControlActivities, RunnerActivities } from './types';

export interface ActivityDeps {
  config: Config;
  pool: Pool;
}

/** A worker's activities, on the orchestration queue: records, deliveries, chat and e-mail. */
export function createControlActivities(deps: ActivityDeps): ControlActivities {
  const { postChat, sendEmail } = createPostActivities({ config: deps.config, pool: deps.pool });
  const deliverDeps = {
    pool: deps.pool,
    secretKey: deps.config.secretKey,
    // A receiver's Retry-After may stretch a wait up to our own longest backoff, no further.
    maxRetryAfterMs: deps.config.webhookRetry.maximumIntervalMs,
    allow: deps.config.webhookAllow,
  };
  const sendReceived = createReceivedSender({ ...deliverDeps, config: deps.config });
  return {
    ...createSessionRecords(deps.pool, deps.config),
    ...createLivenessActivities(deps),
    postChat,
    sendEmail,
    cleanUp: createCleanupActivity(deps),
    deliverWebhook: createDeliverActivity(deliverDeps),
    endSquashed: (batch) => endSquashedSessions({ ...deliverDeps, config: deps.config }, batch),
    recordIntakes: async (intakes) => {
      const { ids, fresh } = await writeIntakes(deps.pool, intakes, { mostlyWritten: true });
      // `received` goes out beside the suite, not as its step (activities/received.ts), for the
      // sessions written here: the API sends it of those it wrote first (api/herald.ts).
      sendReceived(fresh);
      return [...ids];
    },
    postCommitStatus: createCommitStatusActivity({
      pool: deps.pool,
      secretKey: deps.config.secretKey,
      allow: deps.config.webhookAllow,
      maxRetryAfterMs: (deps.config.statusRetry ?? DEFAULT_STATUS_RETRY).maximumIntervalMs,
    }),
  };
}

/** A runner's activities, on the build queue(s): checkouts, test lanes (with their setup), the push and the post_build hook. */
export function createRunnerActivities(
  deps: ActivityDeps & { runner: string; processGroups?: ProcessGroups; runAs?: BuildUser; sandbox?: Sandbox; store?: BlobStore; crane?: string | null },
): RunnerActivities {
  const { pushToCiServer } = createPostActivities({ config: deps.config, pool: deps.pool });
  // One store a runner, for its caches and its builds' artifacts.
  const store = deps.store ?? openStore(deps.config.store ?? { kind: 'dir', dir: DEFAULT_CACHE_DIR });
  const records = pgBuildRecords(deps.pool, deps.config.secretKey, checkoutTokens(deps));
  return {
    ...createBuildActivities({
      ...deps,
      records,
      cache: cacheDeps(deps.config, records, store),
      artifacts: { records, store, limits: deps.config.artifactLimits ?? DEFAULT_ARTIFACT_LIMITS },
    }),
    pushToCiServer,
  };
}

/**
 * The build activities of a runner that holds only a token (runner/token): its records and
 * blobs go through the runner API, and it has no push (the worker's gateway pushes: the push
 * key never leaves the keyed side).
 */
export function createTokenRunnerActivities(
  deps: { config: Config; records: BuildRecords; store: BlobStore; runner: string; processGroups?: ProcessGroups; runAs?: BuildUser; sandbox?: Sandbox; crane?: string | null },
): Omit<RunnerActivities, 'pushToCiServer'> {
  return createBuildActivities({
    ...deps,
    cache: cacheDeps(deps.config, deps.records, deps.store),
    artifacts: { records: deps.records, store: deps.store, limits: deps.config.artifactLimits ?? DEFAULT_ARTIFACT_LIMITS },
  });
}

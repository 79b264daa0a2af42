import type { Pool } from 'pg';
import type { Config } from '../config';
import { createBuildActivities } from './build/activities';
import { createDeliverActivity } from './delivery';
import { createPostActivities } from './post/activities';
import { createSessionRecords } from './session/records';
import type { Activities } from './types';

export interface ActivityDeps {
  config: Config;
  pool: Pool;
  workerQueue: string;
}

/** Every activity of Sluice, bound to this worker's config, pool and own task queue. */
export function createActivities(deps: ActivityDeps): Activities {
  return {
    ...createSessionRecords(deps.pool, deps.config),
    ...createBuildActivities(deps),
    ...createPostActivities({ config: deps.config, pool: deps.pool }),
    deliverWebhook: createDeliverActivity({
      pool: deps.pool,
      secretKey: deps.config.secretKey,
      // A receiver's Retry-After may stretch a wait up to our own longest backoff, no further.
      maxRetryAfterMs: deps.config.webhookRetry.maximumIntervalMs,
      allow: deps.config.webhookAllow,
    }),
  };
}

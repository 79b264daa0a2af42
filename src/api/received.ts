/**
 * The API's head start on `received` (herald.ts), wired to what it needs: PostgreSQL for the
 * records, the delivery code for the sends, Temporal to wake a suite whose receiver did not get
 * one, and the trace of each trigger's request.
 */
import type { Pool } from 'pg';
import type { Config } from '../config';
import { RETRY_RECEIVED_SIGNAL } from '../core/signalNames';
import type { WorkflowIds } from '../core/workflowIds';
import { intakeRecorded, writeIntakes } from '../db/intake';
import { announceAll } from '../delivery/received';
import type { SendBatch } from '../temporal/enqueue';
import { inActiveContext } from '../tracing/spans';
import { createHerald, type Herald } from './herald';

export function startHerald(deps: {
  config: Config;
  pool: Pool;
  ids: WorkflowIds;
  /** False until the API has migrated PostgreSQL: nothing is recorded before. */
  migrated: () => boolean;
  signal: (workflowId: string, name: string, payload: unknown) => Promise<void>;
}): Herald {
  const { config, pool } = deps;
  const deliver = { pool, config, secretKey: config.secretKey, maxRetryAfterMs: config.webhookRetry.maximumIntervalMs, allow: config.webhookAllow };
  return createHerald({
    record: (intakes) => (deps.migrated() ? writeIntakes(pool, intakes) : Promise.reject(new Error('PostgreSQL is not migrated yet'))),
    recorded: (key) => intakeRecorded(pool, key),
    announce: (sessionIds) => announceAll(deliver, sessionIds),
    wake: (suiteId, sessionId) => deps.signal(deps.ids.suite(suiteId), RETRY_RECEIVED_SIGNAL, { sessionId }),
    capture: () => inActiveContext((fn) => fn()),
  });
}

/** `send`, telling the herald which batches Temporal took (and which it may have). */
export function heralded(herald: Herald, send: SendBatch): SendBatch {
  return async (reqs) => {
    const suiteId = reqs[0].suiteId;
    const intakes = reqs.flatMap((r) => (r.intake ? [r.intake] : []));
    try {
      await send(reqs);
    } catch (err) {
      herald.lost(suiteId, intakes); // it may have landed all the same
      throw err;
    }
    herald.took(suiteId, intakes);
  };
}

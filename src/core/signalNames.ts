/**
 * Names of the signals that activities send to workflows by name (activity code may not import
 * workflow code, where the signals are defined: workflows/signals.ts).
 */

/** Runner → session: the build's first failing file was recorded; carries `{ counts }` as they stood then. */
export const FIRST_FAIL_SIGNAL = 'firstFail';

/**
 * Runner → session: the build's first worker is set up (the rendezvous: the others join as they
 * get ready); carries `{ timing }`, the setup's timing keys. The name is older than that rule.
 */
export const WORKERS_READY_SIGNAL = 'workersReady';

/** Worker → suite: a queued session's `received` did not reach every receiver; carries `{ sessionId }`. */
export const RETRY_RECEIVED_SIGNAL = 'retryReceived';

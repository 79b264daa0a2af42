/** Small helpers shared by the session workflow's modules. Workflow code only. */
import { upsertSearchAttributes } from '@temporalio/workflow';
import { epochSeconds, type SessionSnapshot } from '../core/payload';
import type { SessionStatus } from '../core/types';
import { SluiceStatus } from './searchAttributes';

/** Sets the session's status, and the search attribute operators find it by. */
export function setStatus(snap: SessionSnapshot, status: SessionStatus): void {
  snap.status = status;
  upsertSearchAttributes([{ key: SluiceStatus, value: status }]);
}

/** Workflow time (deterministic), in the seconds-with-fraction of spec §2 `timing`. */
export function now(): number {
  return epochSeconds(Date.now());
}

/** The most specific message of a failure chain (ActivityFailure → ApplicationFailure → ...). */
export function failureMessage(err: unknown): string {
  let e = err as { message?: string; cause?: unknown } | undefined;
  while (e && e.cause) e = e.cause as typeof e;
  return e?.message || 'unknown error';
}

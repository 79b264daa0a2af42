/**
 * What one attempt of a commit status or check run takes and gives (postStatus.ts, checkRuns.ts):
 * a module of its own so the two share it without importing each other.
 */
import type { Dispatcher } from 'undici';
import type { CommitStatusInput } from '../core/commitStatus';
import type { Db } from '../db/transaction';
import type { Cidr } from '../ip/ranges';
import type { DeliveryOutcome, RetrySchedule } from './backoff';

export interface StatusDeps {
  pool: Db;
  secretKey: Buffer;
  /** SLUICE_WEBHOOK_ALLOW: non-public ranges a self-hosted instance may be on. Default none. */
  allow?: readonly Cidr[];
  /** Deadline of one HTTP attempt (default 10 s); the activity's startToCloseTimeout is longer. */
  timeoutMs?: number;
  /** Upper bound on a provider's Retry-After or rate-limit reset: the retry policy's maximum interval. */
  maxRetryAfterMs?: number;
  /** Tests: replaces the guarded Agent. */
  dispatcher?: Dispatcher;
}

/** One attempt of the status the workflow asked for (its CommitStatusInput). */
export interface StatusAttemptSpec extends CommitStatusInput {
  /** This attempt's number, from 1. */
  attempt: number;
  /** The retry policy's maximumAttempts; 0 means unlimited. */
  maxAttempts: number;
  retry?: RetrySchedule;
}

export interface StatusAttemptDone {
  id: number;
  outcome: DeliveryOutcome;
  /** The provider's state name sent. */
  state: string;
  statusCode: number | null;
  /** Why it was not delivered; never holds the token. */
  error: string | null;
  /** Outcome `retrying`: the wait before the next attempt. */
  nextDelayMs?: number;
}

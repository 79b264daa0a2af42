/**
 * The contract between workflow code and activities. Workflows import these types only
 * (never the implementations), and nothing secret crosses it: activities load keys and
 * passwords from PostgreSQL themselves, so Temporal's history never holds one.
 */
import type { WebhookRetry } from '../config';
import type { Counts, OutgoingPayload, Scm, SessionStatus, TestStatus, Timing } from '../core/types';

/** Everything the session workflow needs to know about its session, loaded once. */
export interface SessionContext {
  sessionId: number;
  guid: string;
  parentSession: number | null;
  suiteId: number;
  repoId: number;
  repo: { name: string; url: string; orgName: string; scm: Scm };
  branch: string;
  ref: string | null;
  head: string;
  force: boolean;
  profileName: string;
  testPattern: string;
  testCommand: string | null;
  workers: number;
  env: Record<string, string>;
  /** Task queue of this session's build activities: the trigger's `queue`, or the default. */
  buildQueue: string;
  webhookIds: number[];
  /** Report page, `{base_url}/1/reports/<session>`. */
  url: string;
  /** ci_received_at, seconds since the epoch. */
  receivedAt: number;
  /** The worker's settings, read once per session so the workflow stays deterministic. */
  settings: { webhookRetry: WebhookRetry; testTimeoutMs: number };
}

export interface CheckoutInput {
  sessionId: number;
  repoId: number;
  branch: string;
  head: string;
}

export interface CheckoutResult {
  /** The task queue only the worker holding this checkout listens on. */
  workerQueue: string;
  workdir: string;
  commitId: string;
  committers: string[];
}

export interface DiscoverInput {
  workdir: string;
  pattern: string;
}

export interface RunTestInput {
  sessionId: number;
  workdir: string;
  /** Test file, relative to the repository root. */
  path: string;
  command: string | null;
  env: Record<string, string>;
  timeoutMs: number;
}

export interface RunTestResult {
  path: string;
  status: TestStatus;
  exitCode: number | null;
  durationMs: number;
}

export interface DeliverInput {
  webhookId: number;
  sessionId: number | null;
  payload: OutgoingPayload;
  /** The retry policy's maximumAttempts, so the last attempt can be logged as `gave_up`. */
  maxAttempts: number;
}

export interface DeliverResult {
  outcome: 'delivered' | 'dropped';
  statusCode: number | null;
}

export interface StartRecord {
  /** Head commit of the suite's last build, to decide whether anything is new. */
  lastBuiltCommit: string | null;
}

export interface FinishInput {
  sessionId: number;
  status: SessionStatus;
  reason: string | null;
  commitId: string | null;
  committers: string[];
  counts: Counts;
  timing: Timing;
  stoppedBy: string | null;
  /** Set when tests ran: becomes the suite's last built commit. */
  builtCommit: string | null;
}

export interface Activities {
  loadSession(sessionId: number): Promise<SessionContext>;
  recordStart(sessionId: number, timing: Timing): Promise<StartRecord>;
  recordFinish(input: FinishInput): Promise<void>;
  /** The repository settings the suite's queue obeys, read when it picks the next session. */
  suiteSettings(suiteId: number): Promise<{ ciSquash: boolean }>;
  checkout(input: CheckoutInput): Promise<CheckoutResult>;
  discoverTests(input: DiscoverInput): Promise<string[]>;
  runTest(input: RunTestInput): Promise<RunTestResult>;
  cleanupWorkspace(workdir: string): Promise<void>;
  deliverWebhook(input: DeliverInput): Promise<DeliverResult>;
}

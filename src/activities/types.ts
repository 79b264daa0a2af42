/**
 * The contract between workflow code and activities. Workflows import these types only
 * (never the implementations), and nothing secret crosses it: activities load keys and
 * passwords from PostgreSQL themselves, so Temporal's history never holds one.
 */
import type { WebhookRetry } from '../config';
import type { Profile, RepoConfig } from '../core/profiles';
import type { PostRetry } from '../core/retry';
import type { Counts, OutgoingPayload, Scm, SessionStatus, TestStatus, Timing } from '../core/types';

/**
 * Everything the session workflow needs to know about its session, loaded once. Read-only:
 * the workflow passes what it decides (the profile it runs, ...) explicitly, never by
 * writing it back here.
 */
export interface SessionContext {
  readonly sessionId: number;
  readonly guid: string;
  readonly parentSession: number | null;
  readonly suiteId: number;
  readonly repoId: number;
  readonly repo: { name: string; url: string; orgName: string; scm: Scm };
  readonly branch: string;
  readonly ref: string | null;
  readonly head: string;
  readonly force: boolean;
  /** The session's profile as queued (the trigger's `profile_name`, a plan part's, or `default`). */
  readonly profileName: string;
  readonly testPattern: string;
  readonly testCommand: string | null;
  /** Workers of the session as queued (the suite's setting, or a plan part's). */
  readonly workers: number;
  readonly env: Record<string, string>;
  /** Task queue of this session's build activities: the trigger's `queue`, or the default. */
  readonly buildQueue: string;
  readonly webhookIds: number[];
  /** Report page, `{base_url}/1/reports/<session>`. */
  readonly url: string;
  /** ci_received_at, seconds since the epoch. */
  readonly receivedAt: number;
  /** The worker's settings, read once per session so the workflow stays deterministic. */
  readonly settings: {
    webhookRetry: WebhookRetry;
    testTimeoutMs: number;
    /** Retry policies of push, chat and e-mail. */
    postRetry: PostRetry;
  };
  /** The trigger's `refspec`. */
  readonly refspecs?: string[];
  /** The suite's JUnit XML glob, if any (its default profile's). */
  readonly junitPattern: string | null;
  /** Named profiles and the build plan configured on the suite (sluice.yml may add or override). */
  readonly suiteProfiles: Profile[];
  readonly suitePlan: string[] | undefined;
  /** The trigger's `profile_name`, when it named one. */
  readonly requestedProfile: string | null;
}

export interface CheckoutInput {
  sessionId: number;
  repoId: number;
  branch: string;
  head: string;
  /** The trigger's `refspec`: extra git refspecs to fetch. git only; ignored for hg. */
  refspecs?: string[];
}

export interface CheckoutResult {
  /** The task queue only the worker holding this checkout listens on. */
  workerQueue: string;
  workdir: string;
  commitId: string;
  committers: string[];
  /** Full message of the checked-out commit (changeset description for hg). */
  message: string;
}

export interface DiscoverInput {
  workdir: string;
  pattern: string;
}

export interface RunTestInput {
  sessionId: number;
  /**
   * The session's repository, whose build secrets the activity loads itself and adds to
   * `env` (secrets win over the trigger's env). Optional: when absent, found from sessionId.
   */
  repoId?: number;
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

export interface CollectResultsInput {
  sessionId: number;
  /** The checkout's working tree (CheckoutResult.workdir); run on CheckoutResult.workerQueue. */
  workdir: string;
  /**
   * Glob of the JUnit XML files, relative to the repository root. Absent: the suite's
   * `junit_pattern` (read by the activity); null or empty: nothing is collected.
   */
  pattern?: string | null;
}

export interface CollectResultsResult {
  /** Test cases stored. */
  cases: number;
  /** Of those, how many failed or errored. */
  failed: number;
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
  /** The profile that ran (sluice.yml's default_profile may name another than the trigger did). */
  profileName: string;
  workers: number;
}

export interface PlanSessionsInput {
  parentId: number;
  commitId: string;
  profiles: Array<{ name: string; workers: number }>;
}

// --- after the tests (spec §1 steps 4-6) and the repository's sluice.yml ----------------------
// Push, chat and e-mail run one attempt per activity task under Temporal's retry policy: an
// attempt that may be mended by another throws a retryable failure (FAILURE_TYPES.*Retrying,
// activities/failures.ts) and records nothing; the final outcome, success or failure, is
// recorded once in post_build_steps and returned, never thrown, so a failing step never
// changes the build's status.

/** What push, chat and e-mail say about a finished build; built by the workflow from its snapshot. */
export interface BuildSummary {
  session: number;
  repo: { orgName: string; name: string };
  branch: string;
  commitId: string | null;
  status: SessionStatus;
  reason: string | null;
  counts: Counts;
  /** Report page, `{base_url}/1/reports/<session>`. */
  url: string;
  profileName?: string;
}

export interface PushInput {
  sessionId: number;
  repoId: number;
  /** The checkout (CheckoutResult.workdir): run on the checkout's worker queue. */
  workdir: string;
  /** The tested commit (CheckoutResult.commitId). */
  commitId: string;
  /** Pushed to `refs/heads/<branch>` at the repository's ci_push_url. */
  branch: string;
}

export interface PushResult {
  pushed: boolean;
  detail: string;
}

export interface ChatInput {
  sessionId: number;
  /** Default: the repository's chat_url. */
  chatUrl?: string;
  summary: BuildSummary;
}

export interface ChatResult {
  posted: boolean;
  detail: string;
}

export interface EmailInput {
  sessionId: number;
  /** Default: the organization's email. */
  to?: string[];
  summary: BuildSummary;
}

export interface EmailResult {
  sent: boolean;
  detail: string;
}

export interface RepoConfigInput {
  /** The checkout (CheckoutResult.workdir): run on the checkout's worker queue. */
  workdir: string;
}

/**
 * The repository's sluice.yml, read and parsed by the activity (the workflow never parses):
 * `config` is null when the repository has none; `error` says why the file cannot be used
 * (too large, not UTF-8, not a regular file, not valid settings, with the line).
 */
export type RepoConfigResult = { config: RepoConfig | null } | { error: string };

export interface Activities {
  loadSession(sessionId: number): Promise<SessionContext>;
  recordStart(sessionId: number, timing: Timing): Promise<StartRecord>;
  recordFinish(input: FinishInput): Promise<void>;
  /** The repository settings the suite's queue obeys, read when it picks the next session. */
  suiteSettings(suiteId: number): Promise<{ ciSquash: boolean }>;
  /** One session row per profile of a plan, children of the parent session; their ids, in order. */
  createPlanSessions(input: PlanSessionsInput): Promise<number[]>;
  checkout(input: CheckoutInput): Promise<CheckoutResult>;
  discoverTests(input: DiscoverInput): Promise<string[]>;
  runTest(input: RunTestInput): Promise<RunTestResult>;
  /** After the tests: reads the JUnit XML files they left and stores their test cases. */
  collectResults(input: CollectResultsInput): Promise<CollectResultsResult>;
  cleanupWorkspace(workdir: string): Promise<void>;
  deliverWebhook(input: DeliverInput): Promise<DeliverResult>;
  pushToCiServer(input: PushInput): Promise<PushResult>;
  postChat(input: ChatInput): Promise<ChatResult>;
  sendEmail(input: EmailInput): Promise<EmailResult>;
  readRepoConfig(input: RepoConfigInput): Promise<RepoConfigResult>;
}

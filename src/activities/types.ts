/**
 * The contract between workflow code and activities. Workflows import these types only
 * (never the implementations), and nothing secret crosses it: activities load keys and
 * passwords from PostgreSQL themselves, so Temporal's history never holds one.
 */
import type { BuildSetup } from '../core/buildSetup';
import type { CommitStatusInput, CommitStatusResult } from '../core/commitStatus';
import type { Intake } from '../core/intake';
import type { AffectedSettings, RepoConfigResult } from '../core/profiles';
import type { LaneSettings, ResolvedImage, SessionContext, TreeRef } from '../core/session';
import type { OpenLanes, SquashedBatch } from '../core/squash';
import type { Counts, OutgoingPayload, SessionStatus, Timing } from '../core/types';

export interface CheckoutInput {
  sessionId: number;
  repoId: number;
  branch: string;
  /** `HEAD` (the branch tip), a commit, a tag or a ref the trigger named. */
  head: string;
  /** Provider refs (pull requests) fetched too, so that a fork's commit can be checked out. */
  refspecs?: string[];
  /** The build's cache scopes: which kept trees it may start from (TreeRef). */
  scopes?: TreeRef['scopes'];
  /**
   * The profile that runs if the repository has no sluice.yml (the workflow knows it before the
   * checkout): then its files are listed here, sparing the build a queueTests round trip. Not
   * when the commit is `unlessCommit` (already built: nothing will run).
   */
  list?: { suiteId: number; profileName: string; pattern: string; unlessCommit: string | null };
}

/** What the session's first checkout found: the commit that builds, and the repository's sluice.yml. */
export interface CheckoutResult {
  commitId: string;
  committers: string[];
  message: string;
  repoConfig: RepoConfigResult;
  /** Set when the checkout listed the files of `input.list` (queueTests' work, done). */
  listed?: { profileName: string; pattern: string; total: number };
}

export interface QueueTestsInput {
  tree: TreeRef;
  suiteId: number;
  /** The profile that runs: earlier builds' durations count only within the same profile. */
  profileName: string;
  pattern: string;
  /** The profile runs only what a change can affect (issue 40). Absent: every file runs. */
  affected?: AffectedPlan;
}

/** What the workflow decided about selection; the runner, which has the tree, does the rest. */
export interface AffectedPlan {
  settings: AffectedSettings;
  /** The build records a map if one is due: a push to the default branch with no env of its own. */
  mayMap: boolean;
  /** Every file runs, for this reason (the default branch, `[ci full]`, the trigger's `full`); null: select. */
  fullBecause: string | null;
}

export interface QueueTestsResult {
  /** How many files the session's shared list holds to run. */
  total: number;
  /** Files left out as not affected (done already, skipped). Absent: none. */
  skipped?: number;
  /** The lanes run each file alone under strace and record the map (a mapping run). */
  mapping?: boolean;
}

export interface RunLaneInput extends LaneSettings {
  tree: TreeRef;
  /** 0 .. workers-1; lane 0 reuses the session's first checkout when it runs where that is. */
  lane: number;
  /** How many lanes the build has (SLUICE_WORKER_COUNT; batches are sized to them). Absent in older histories: the lane runs alone, as before. */
  lanes?: number;
  /** What the build sets up around its tests (core/buildSetup.ts). Absent in older histories: nothing. */
  setup?: BuildSetup;
  /** Whose cache entries the build reads, and where it may write one (core/buildSetup.ts cacheScopes). */
  cache?: { readScopes: string[]; writeScope: string | null };
  /** The session workflow, told of the first failure. */
  workflowId: string;
  /** A mapping run: each file runs alone under strace, and what it touched is recorded (issue 40). */
  trace?: boolean;
  /**
   * Nothing of the build runs in this lane's tree after it (lanes after the first; the first when
   * there is no post_build hook): the lane retires it at its end (kept for a later build where it
   * may be). Absent: lane 0's tree waits for the sweep, as before.
   */
  lastUse?: boolean;
}

/** The build's image, resolved on a runner: its tag to a digest, or a rebuild's digest checked. */
export interface ResolveImageInput {
  sessionId: number;
  repoId: number;
  /** As the settings wrote it (`node:22`). */
  image: string;
  /** A rebuild's digest for it: checked against the registry, not resolved again. */
  digest: string | null;
  /** Whether the build may have the repository's secrets, and so its registry logins (core/trust.ts). */
  secrets: boolean;
}

export interface RunLaneResult {
  /** Files this lane ran and counted (a retried lane may find none left). */
  ran: number;
  runner: string;
  /** The build's setup failed (this worker's or another's): no test ran here; the message names the step and its last output. */
  setupFailure?: string | null;
  /** When this worker's steps ended (setup_cache, package_setup, ..., capture_cache), seconds since the epoch. */
  timing?: Timing;
}

/** The `workersReady` signal's payload (core/signalNames.ts): the setup's timing keys, each the last worker's. */
export interface WorkersReady {
  timing: Timing;
}

/** The `post_build` hook: once a build, after its results are recorded, in the session's first checkout (or a new one). */
export interface PostBuildHookInput {
  tree: TreeRef;
  command: string;
  /** The profile's and the trigger's variables; the runner adds the secrets when `secrets`. */
  env: Record<string, string>;
  secrets: boolean;
  /** SLUICE_BUILD_STATUS. */
  status: 'passed' | 'failed' | 'error';
  /** The build's image (absent: the runner's own `/`). */
  image?: ResolvedImage;
}

/** The `firstFail` signal's payload (core/signalNames.ts). */
export interface FirstFailure {
  counts: Counts;
}

export interface DeliverInput {
  webhookId: number;
  sessionId: number | null;
  payload: OutgoingPayload;
  /** The retry policy's maximumAttempts, so the last attempt can be logged as `gave_up`. */
  maxAttempts: number;
  /**
   * `received`: the API may have made the first attempt already (delivery/received.ts); the
   * activity claims it or goes on from what the log says.
   */
  claimFirst?: boolean;
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

/** The commit to push, by its tree: the runner that takes the push reuses the session's checkout or fetches it. */
export type PushInput = TreeRef;

export interface PushResult {
  /** The CI server's branch is at the commit now (pushed, or already there); false when nothing was pushed (not configured, failed, or not the branch's tip). */
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


/** What workers do: records, deliveries, chat and e-mail. */
export interface ControlActivities {
  loadSession(sessionId: number): Promise<SessionContext>;
  recordStart(sessionId: number, timing: Timing): Promise<StartRecord>;
  recordFinish(input: FinishInput): Promise<void>;
  /** The repository settings the suite's queue obeys, read when it picks the next session. */
  suiteSettings(suiteId: number): Promise<{ ciSquash: boolean }>;
  /**
   * Writes accepted triggers' records (db/intake.ts), idempotently; each session's id by its
   * intake key. Starts sending their `received` beside the suite (activities/received.ts).
   */
  recordIntakes(intakes: Intake[]): Promise<[string, number][]>;
  /** The running session's workflow is gone without telling its suite: its record ends in error (activities/liveness.ts). */
  sessionGone(sessionId: number, workflowId: string): Promise<boolean>;
  /** Whether any runner polls this build queue. */
  queueServed(taskQueue: string): Promise<boolean>;
  /** One session row per profile of a plan, children of the parent session; their ids, in order. */
  createPlanSessions(input: PlanSessionsInput): Promise<number[]>;
  /** The image the session runs in, as resolved when its build started. */
  recordImage(sessionId: number, image: ResolvedImage): Promise<void>;
  /** The session's counts from its shared list of test files (exact, whichever runner ran what). */
  testCounts(sessionId: number): Promise<Counts>;
  /** The daily retention cleanup (activities/cleanup.ts): deletes what is older than the worker's settings keep. */
  cleanUp(): Promise<CleanupResult>;
  deliverWebhook(input: DeliverInput): Promise<DeliverResult>;
  /** Ends a batch of queued sessions CI squash passed over; those whose events a receiver still needs. */
  endSquashed(batch: SquashedBatch): Promise<OpenLanes[]>;
  postChat(input: ChatInput): Promise<ChatResult>;
  sendEmail(input: EmailInput): Promise<EmailResult>;
  /** One attempt to post a commit status (activities/commitStatus.ts): returns once posted, throws otherwise. */
  postCommitStatus(input: CommitStatusInput): Promise<CommitStatusResult>;
}

/** What runners do: checkouts, tests, and the push (from a checkout). */
export interface RunnerActivities {
  checkout(input: CheckoutInput): Promise<CheckoutResult>;
  queueTests(input: QueueTestsInput): Promise<QueueTestsResult>;
  resolveImage(input: ResolveImageInput): Promise<ResolvedImage>;
  runLane(input: RunLaneInput): Promise<RunLaneResult>;
  pushToCiServer(input: PushInput): Promise<PushResult>;
  postBuildHook(input: PostBuildHookInput): Promise<{ status: string }>;
}

/** Every activity, as workflow code proxies them (each on its role's queue). */
export type Activities = ControlActivities & RunnerActivities;

/** What a retention cleanup deleted, under which settings (0 days: kept for good). */
export interface CleanupResult {
  sessionRetentionDays: number;
  deliveryRetentionDays: number;
  /** Ended sessions (a plan's parts not counted: they went with their parent). */
  sessions: number;
  /** Triggers no session referred to any more. */
  ciEvents: number;
  deliveries: number;
  /** Signed-in browsers' sessions past their end. */
  webSessions: number;
}

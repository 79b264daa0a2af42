/**
 * What a session is about, as the session workflow and the steps around it share it: the
 * session's context (loaded once, db/sessionContext.ts) and the tree a build activity needs.
 * Types only: every layer that needs them (the data layer, delivery, the runner's steps,
 * activities, workflows) imports them from here, below all of them.
 */
import type { BuildSetupSettings } from './buildSetup';
import type { Profile } from './profiles';
import type { PostRetry, RetrySettings } from './retry';
import type { BuildTrust } from './trust';
import type { Scm, SessionStatus, Timing } from './types';

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
  /** As loaded: `queued` for a session about to build; anything else means it ended already. */
  readonly status: SessionStatus;
  /** As loaded: why it ended (null while it has not). */
  readonly reason: string | null;
  /** As loaded: the lifecycle times recorded so far. */
  readonly timing: Timing;
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
    webhookRetry: RetrySettings;
    testTimeoutMs: number;
    /** Retry policies of push, chat and e-mail. */
    postRetry: PostRetry;
    /** How long `stop` waits for push, chat and e-mail before it goes out without them. */
    postBuildWaitMs: number;
    /** How long the checkout waits on a build queue no runner polls before the build ends in error. */
    runnerWaitMs?: number;
    /** Retry policy of commit statuses (absent in histories recorded before them: the default). */
    statusRetry?: RetrySettings;
  };
  /**
   * Whether the repository posts commit statuses to its hosting site: a status provider, its
   * repository path and a token (core/commitStatus.ts). Absent in histories recorded before
   * them: none.
   */
  readonly commitStatus?: boolean;
  /** Whether chat and e-mail have anywhere to go (a chat URL; SMTP_URL and an address). */
  readonly notify: { chat: boolean; email: boolean };
  /** The trigger's `refspec`. */
  readonly refspecs?: string[];
  /** The suite's JUnit XML glob, if any (its default profile's). */
  readonly junitPattern: string | null;
  /** The suite's retry_failed (its default profile's). Absent in histories recorded before it: 0. */
  readonly retryFailed?: number;
  /** What the trigger lets this build have: secrets, a push (core/trust.ts). */
  readonly trust: BuildTrust;
  /** Named profiles and the build plan configured on the suite (sluice.yml may add or override). */
  readonly suiteProfiles: Profile[];
  readonly suitePlan: string[] | undefined;
  /** The trigger's `profile_name`, when it named one. */
  readonly requestedProfile: string | null;
  /** The trigger asked for every test file (`full: true`), over a profile's selection of affected ones. Absent: no. */
  readonly fullRun?: boolean;
  /** The suite's hooks, cache, services and artifacts (sluice.yml may override them). Absent in histories recorded before them: none. */
  readonly suiteSetup?: BuildSetupSettings;
  /** The repository's default branch, whose cache entries its other branches may read. Absent in older histories: master. */
  readonly defaultBranch?: string;
  /** A rebuild's image digests, by normalized reference (TriggerEvent.imageDigests). Absent: none. */
  readonly imageDigests?: Record<string, string>;
  /**
   * The suite's deadline for this build in minutes, from its turn to the end of its tests; past
   * it the build is stopped and ends in `error`. Null (absent in histories recorded before it
   * existed): none. Always null for a plan's part, which its parent stops.
   */
  readonly deadlineMinutes?: number | null;
}

/**
 * The tree a build activity needs, by commit: any runner can make it (steps/checkout/tree.ts),
 * so no step depends on the runner that did an earlier one.
 */
export interface TreeRef {
  sessionId: number;
  repoId: number;
  branch: string;
  commitId: string;
  refspecs?: string[];
  /**
   * The build's cache scopes (buildSetup cacheScopes), which also say which of a runner's kept
   * trees it may start from and whether its own is kept (steps/checkout/kept.ts). Absent: none.
   */
  scopes?: { readScopes: string[]; writeScope: string | null };
}

/** An image as a build resolved it when it started: every worker on every runner runs `digest`. */
export interface ResolvedImage {
  /** The reference as read, normalized (`docker.io/library/node:22`): what the session records and a rebuild is keyed by. */
  reference: string;
  /** `sha256:…`: the manifest (or index) the reference named then. */
  digest: string;
}

/** How a lane runs its files, as the workflow decides it for each lane (RunLaneInput) and the lane's worker runs it (steps/lifecycle.ts WorkerJob). */
export interface LaneSettings {
  /** The test command (`{files}`: a batch of files a process); null: each file runs itself. */
  command: string | null;
  /** The profile's and the trigger's variables; the runner adds the repository's secrets when `secrets`. */
  env: Record<string, string>;
  /** Whether the repository's secrets reach hooks and tests (not for a pull request: core/trust.ts). */
  secrets: boolean;
  timeoutMs: number;
  junitPattern: string | null;
  /** How many times a failing file runs again (the profile's retry_failed). Absent in older histories: 0. */
  retryFailed?: number;
  /** The image its hooks and tests run in, resolved once for the build (absent: the runner's own `/`). */
  image?: ResolvedImage;
}

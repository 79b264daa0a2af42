/**
 * Everything a runner's build steps read and write about builds, in one interface: the
 * repository to pull (with its key, unsealed), the build's secrets and registry logins, the shared list of test
 * files and their results, live output, hooks, batches, JUnit results, the workers' rendezvous,
 * cache entries and artifacts. The build steps hold a BuildRecords, never a database
 * connection or Sluice's secret key.
 *
 * Today's runners hold the keys and use PostgreSQL directly (db/buildRecords.ts). This seam is
 * where runners that hold only a token of their own will plug in (issue 23): the same calls,
 * answered by the API for the builds the runner is running and no other.
 *
 * Each record is the data layer's function of the same name without its first argument (the
 * connection), so the two cannot drift apart.
 */
import type * as artifacts from '../db/artifacts';
import type * as dependencyMaps from '../db/dependencyMaps';
import type * as installation from '../db/installation';
import type * as cacheEntries from '../db/cacheEntries';
import type * as outputChunks from '../db/outputChunks';
import type * as sessionHooks from '../db/sessionHooks';
import type * as sessions from '../db/sessions';
import type * as sessionWorkers from '../db/sessionWorkers';
import type * as testBatches from '../db/testBatches';
import type * as mutedTests from '../db/mutedTests';
import type * as testCases from '../db/testCases';
import type * as testQueue from '../db/testQueue';
import type { Scm } from '../core/types';

/** A data-layer function without its connection. */
type Bound<F> = F extends (db: never, ...args: infer A) => infer R ? (...args: A) => R : never;

/** Where to pull a repository from, with what key; the key unsealed, in this process only. */
export interface PullSource {
  scm: Scm;
  pullUrl: string;
  privateKey: string;
  /** known_hosts lines (trust on first use when null). */
  knownHosts: string | null;
  /**
   * A repository that builds through a GitHub App: an installation token for it alone, read-only,
   * minted for this checkout (an hour's life, never stored); the pull URL is then HTTPS.
   */
  httpToken?: string;
}

/** Mints a checkout's token for a repository that builds through a GitHub App (the roles that hold the app's keys have one). */
export type CheckoutTokens = (repoId: number) => Promise<string | undefined>;

/** A login to one registry, unsealed (registryLogins): what a build pulls private images with (image/credentials.ts). */
export interface RegistryLogin {
  host: string;
  username: string;
  password: string;
}

/** Build secrets, applied over the trigger's env (steps/lifecycle.ts says why). */
export interface BuildSecrets {
  /** Name → value. */
  values: Record<string, string>;
  /**
   * Names whose value could not be unsealed (SLUICE_SECRET_KEY was changed): left out, and each
   * test's output says which; the test still runs.
   */
  unreadable: string[];
}

export interface BuildRecords {
  // The checkout.
  /** undefined: the repository no longer exists. */
  pullSource(repoId: number): Promise<PullSource | undefined>;
  /** Host keys ssh learned on a first connection (trust on first use), kept unless someone changed them meanwhile. */
  recordKnownHosts(repoId: number, known: string | null, learned: string): Promise<void>;
  endedSessions: Bound<typeof sessions.endedSessions>;
  repoIdOfSession: Bound<typeof sessions.repoIdOfSession>;
  suiteJUnitPatternOfSession: Bound<typeof sessions.suiteJUnitPatternOfSession>;
  /** The repository's build secrets, unsealed. */
  buildSecrets(repoId: number): Promise<BuildSecrets>;
  /** The repository's registry logins, unsealed (steps/image/credentials.ts): for builds that may have its secrets. */
  registryLogins(repoId: number): Promise<RegistryLogin[]>;
  /** This installation's id (names the workers' service databases). */
  installationId: Bound<typeof installation.loadInstallation>;

  // The workers of a build and their rendezvous.
  recordWorkerStep: Bound<typeof sessionWorkers.recordWorkerStep>;
  markWorkerReady: Bound<typeof sessionWorkers.markWorkerReady>;
  markWorkerFailed: Bound<typeof sessionWorkers.markWorkerFailed>;
  rendezvous: Bound<typeof sessionWorkers.rendezvous>;
  setupTiming: Bound<typeof sessionWorkers.setupTiming>;

  // Hooks, live output, batches.
  startHook: Bound<typeof sessionHooks.startHook>;
  finishHook: Bound<typeof sessionHooks.finishHook>;
  appendOutput: Bound<typeof outputChunks.appendOutput>;
  startBatch: Bound<typeof testBatches.startBatch>;
  finishBatch: Bound<typeof testBatches.finishBatch>;

  // The shared list of test files.
  recordedDurations: Bound<typeof testQueue.recordedDurations>;
  failureHistory: Bound<typeof testQueue.failureHistory>;
  enqueueTests: Bound<typeof testQueue.enqueueTests>;
  claimFiles: Bound<typeof testQueue.claimFiles>;
  renewClaims: Bound<typeof testQueue.renewClaims>;
  releaseClaims: Bound<typeof testQueue.releaseClaims>;
  recordFileResults: Bound<typeof testQueue.recordFileResults>;
  workLeftMs: Bound<typeof testQueue.workLeftMs>;
  queueProgress: Bound<typeof testQueue.queueProgress>;
  replaceJUnitResults: Bound<typeof testCases.replaceJUnitResults>;
  recordRunCases: Bound<typeof testCases.recordRunCases>;
  mutedTests: Bound<typeof mutedTests.mutedTestsOfSession>;

  // Dependency maps: selecting the test files a change can affect (issue 40).
  startMap: Bound<typeof dependencyMaps.startMap>;
  recordFileDeps: Bound<typeof dependencyMaps.recordFileDeps>;
  mapCandidates: Bound<typeof dependencyMaps.mapCandidates>;
  loadMap: Bound<typeof dependencyMaps.loadMap>;
  recordAffected: Bound<typeof dependencyMaps.recordAffected>;

  // Cache entries (the bytes are in the blob store).
  findExactEntry: Bound<typeof cacheEntries.findExactEntry>;
  findNewestEntry: Bound<typeof cacheEntries.findNewestEntry>;
  touchEntry: Bound<typeof cacheEntries.touchEntry>;
  insertEntry: Bound<typeof cacheEntries.insertEntry>;
  evictEntries: Bound<typeof cacheEntries.evictEntries>;
  deleteEntry: Bound<typeof cacheEntries.deleteEntry>;
  liveStoreKeys: Bound<typeof cacheEntries.liveStoreKeys>;

  // Artifacts (the bytes are in the blob store).
  reserveArtifact: Bound<typeof artifacts.reserveArtifact>;
  markArtifactStored: Bound<typeof artifacts.markArtifactStored>;
  dropArtifact: Bound<typeof artifacts.dropArtifact>;
  deleteWorkerArtifacts: Bound<typeof artifacts.deleteWorkerArtifacts>;
}

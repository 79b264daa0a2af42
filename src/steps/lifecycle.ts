/**
 * A worker's life in a build, step by step: the list below is the lifecycle (GitLab Runner keeps
 * its job stages the same way), and each step is one function of one file of this folder.
 *
 *   step            file                 timing key (spec §6; the session's is the last worker's)
 *   checkout        checkout/tree.ts     setup (the session's first checkout; the activity's)
 *   image           image/               (none: part of setup, shown as a step of its own)
 *   cache restore   cache/               setup_cache
 *   pre_setup       hooks.ts             setup_hooks
 *   package setup   packages.ts          package_setup
 *   services        services/            services_setup
 *   worker_setup    hooks.ts             worker_hooks
 *   post_setup      hooks.ts             setup_hooks
 *   rendezvous      (here)               worker_rendezvous: the first worker ready sends `test`; none waits
 *   tests           tests/lane.ts        exec … post_build
 *   post_worker     hooks.ts             setup_post_hooks
 *   artifacts       artifacts.ts, JUnit  artifact_collect
 *   cache save      cache/               capture_cache
 *   (always)        services released, whatever happened
 *
 * Once a build: `post_build` (runPostBuildHook below), after the results are recorded
 * (post_build_hook). A step that has nothing to do does not run, and its key stays absent.
 *
 * A setup step that fails (a setup hook, a service the runner does not have) fails the build
 * once: the first failure is recorded for the session, every other worker stops at the
 * rendezvous or is cancelled by the workflow (its running tests too), and no test starts after
 * it. After the tests, a failing step is recorded and shown but changes nothing. A stopped build
 * skips what is left, but always gives its services back.
 */
import { chown, mkdir } from 'node:fs/promises';
import type { ServiceAdmins } from '../config';
import type { BuildSetup, CacheSettings, HookName } from '../core/buildSetup';
import type { LaneSettings, ResolvedImage } from '../core/session';
import type { Counts, Timing } from '../core/types';
import { collectArtifacts, type ArtifactDeps } from './artifacts';
import { restoreCache, saveCache, type CacheDeps, type Restored } from './cache';
import { hookFailure, runHook, skipHook, type HookPlace } from './hooks';
import { leaseWorkerImage, RegistryError, type ImageDeps, type RegistryCredentials, type WorkerImage } from './image';
import { DOCKER_AUTH_CONFIG } from './image/credentials';
import { defaultCache, detectPackageManagers, packageEnv, type PackageManager } from './packages';
import type { BuildUser, ProcessGroups } from './isolation/process';
import type { Sandbox } from './isolation/sandbox';
import type { BuildRecords } from './records';
import { provisionServices, ServiceUnavailableError, type WorkerServices } from './services';
import { layersDir } from './checkout/tree';
import { collectJUnitResults } from './tests/junit';
import { runLane } from './tests/lane';
import { TEST_PATH, testEnvironment } from './tests/runTestFile';

export interface WorkerJob extends LaneSettings {
  sessionId: number;
  /** A mapping run: each file alone under strace (tests/mapping.ts). */
  trace?: boolean;
  repoId: number;
  /** 1..N (the lane's number + 1): SLUICE_WORKER_ID. */
  worker: number;
  /** N: SLUICE_WORKER_COUNT, and how many the rendezvous waits for. */
  workers: number;
  /** Which attempt of this worker's activity (a retry follows a lost runner). */
  attempt: number;
  /** The worker's checkout, made by the caller. */
  tree: string;
  /** The worker's home: made here, shared by its hooks and tests (`~` of cache paths). */
  home: string;
  setup: BuildSetup;
  cache: { readScopes: string[]; writeScope: string | null };
  /** This worker saves the build's cache entry (one worker does: the first). */
  savesCache: boolean;
  /** This installation's id: names the worker's service databases. */
  installation: string;
}

export interface WorkerDeps {
  records: BuildRecords;
  /** This runner's name (host-pid). */
  runner: string;
  processGroups?: ProcessGroups;
  runAs?: BuildUser;
  sandbox?: Sandbox;
  hookTimeoutMs: number;
  /** Where caches live; null: this runner keeps none. */
  cache: CacheDeps | null;
  artifacts: ArtifactDeps | null;
  services: ServiceAdmins;
  /** Where images are kept and pulled from; null: this runner has no store (builds with an image fail). */
  images?: ImageDeps | null;
  /** Aborted when the session is stopped. */
  signal?: AbortSignal;
  /** The build's first failing file, with the counts as they stood then. */
  firstFailure(counts: Counts): Promise<void>;
  /** The first worker is ready, with the build's setup timing so far: the tests start, and the session sends `test`. */
  testsStarted(timing: Timing): Promise<void>;
}

export interface WorkerOutcome {
  /** Files this worker ran and counted. */
  ran: number;
  stopped: boolean;
  /** The build's setup failed (here or on another worker): no test ran here. */
  setupFailure: string | null;
  /** When each of this worker's steps ended, seconds since the epoch. */
  timing: Timing;
}

/** A setup step failed: the build ends in `error` with this message. */
class SetupFailed extends Error {}

/** What the steps share while a worker lives. */
interface Worker {
  deps: WorkerDeps;
  job: WorkerJob;
  /** The worker's variables over the clean base: image, profile, trigger, secrets, packages, services, SLUICE_WORKER_*. */
  env: Record<string, string>;
  /** The repository's secrets (none for a build that may not have them), and the package managers' variables: env is made of them. */
  secrets: Record<string, string>;
  packages: Record<string, string>;
  /** Values masked in everything stored. */
  secretValues: string[];
  /** The worker's lease on its image, once it has one. */
  image: WorkerImage | null;
  /** The sandbox its processes run in: the runner's, with the image's root once it has one. */
  sandbox?: Sandbox;
  /** Appended to each test's output: secrets that would not unseal. */
  note: string;
  managers: PackageManager[];
  /** The entry this build keeps (configured, else the package managers' default); null: none. */
  cacheSettings: CacheSettings | null;
  restored: Restored | null;
  services: WorkerServices | null;
  ran: number;
  stopped: boolean;
  notes: string[];
}

interface Step {
  name: string;
  /** The timing key its end sets, when it ran. */
  key?: string;
  /** Whether it did anything. */
  run(w: Worker): Promise<boolean>;
}

const now = () => Date.now() / 1000;

// --- the steps --------------------------------------------------------------------------------

// A setup step fails the build by throwing SetupFailed (the steps up to the rendezvous); after
// the tests, a step's failure is recorded and shown.
const STEPS: readonly Step[] = [
  { name: 'image', run: imageStep },
  { name: 'cache restore', key: 'setup_cache', run: restoreStep },
  { name: 'pre_setup', key: 'setup_hooks', run: (w) => setupHook(w, 'pre_setup') },
  { name: 'package setup', key: 'package_setup', run: packageSetup },
  { name: 'services', key: 'services_setup', run: servicesStep },
  { name: 'worker_setup', key: 'worker_hooks', run: (w) => setupHook(w, 'worker_setup') },
  { name: 'post_setup', key: 'setup_hooks', run: (w) => setupHook(w, 'post_setup') },
  { name: 'rendezvous', run: meet },
  { name: 'tests', key: 'post_build', run: tests },
  { name: 'post_worker', key: 'setup_post_hooks', run: postWorker },
  { name: 'artifacts', key: 'artifact_collect', run: artifacts },
  { name: 'cache save', key: 'capture_cache', run: saveStep },
];

/** The steps' names, in order (tests walk them). */
export const WORKER_STEPS = STEPS.map((s) => s.name);

/**
 * The build's image from the runner's store, pulled there first when it lacks it: shown as a step
 * with what it took. Every later step runs in it (w.sandbox, w.env).
 */
async function imageStep(w: Worker): Promise<boolean> {
  const { deps, job } = w;
  if (!job.image) return false;
  const place = { records: deps.records, sessionId: job.sessionId, worker: job.worker, runner: deps.runner };
  const got = await getImage(place, job.image, deps, () => registryCredentials(w));
  if ('failure' in got) {
    if (deps.signal?.aborted) return false;
    throw new SetupFailed(`worker ${job.worker}: ${got.failure}`);
  }
  w.image = got.image;
  w.sandbox = got.sandbox;
  w.env = workerEnvironment(job, w.secrets, w.packages, w.image);
  return true;
}

async function restoreStep(w: Worker): Promise<boolean> {
  if (!w.cacheSettings || !w.deps.cache) return false;
  const { job } = w;
  w.restored = await restoreCache(w.deps.cache, w.cacheSettings, cacheTarget(w), w.deps.signal);
  w.notes.push(...w.restored.notes);
  if (w.restored.hit !== 'miss') {
    w.notes.push(`cache restored ${w.restored.paths.join(', ')} (${w.restored.hit === 'exact' ? 'this key' : 'an older key'}, branch ${w.restored.scope}, from ${w.restored.source === 'local' ? "this runner's copy" : 'the store'}${w.restored.linked ? ', linked: its files are read-only' : ''}${w.restored.mounted ? ', mounted: its changes stay in this build' : ''})`);
  } else {
    w.notes.push(`cache empty: no entry of branch ${job.cache.readScopes.join(' or ')} to restore`);
  }
  return true;
}

async function setupHook(w: Worker, name: Exclude<HookName, 'package_setup' | 'post_worker' | 'post_build'>): Promise<boolean> {
  const command = w.job.setup.hooks[name];
  if (!command) return false;
  const outcome = await runHook(hookPlace(w), { name, command });
  if (outcome.status !== 'passed' && !w.deps.signal?.aborted) throw new SetupFailed(hookFailure(outcome, w.job.worker));
  return true;
}

async function packageSetup(w: Worker): Promise<boolean> {
  const configured = w.job.setup.hooks.package_setup;
  if (configured === false) return false;
  const place = hookPlace(w);
  // Installs reach the registries, even where tests have no network.
  const sandbox = w.sandbox ? { ...w.sandbox, network: true } : undefined;
  const runs = typeof configured === 'string' ? [{ command: configured, detail: 'the package_setup hook', installs: null as string | null }] : w.managers;
  if (runs.length === 0) return false;
  for (const run of runs) {
    const restored = w.restored;
    if (run.installs && restored?.hit === 'exact' && restored.paths.includes(run.installs)) {
      await skipHook(place, { name: 'package_setup', command: run.command, detail: `${run.detail}; not needed: the cache restored ${run.installs} for exactly these files` });
      continue;
    }
    const outcome = await runHook(place, { name: 'package_setup', command: run.command, detail: run.detail, sandbox });
    if (outcome.status !== 'passed' && !w.deps.signal?.aborted) throw new SetupFailed(hookFailure(outcome, w.job.worker));
  }
  return true;
}

async function servicesStep(w: Worker): Promise<boolean> {
  const names = w.job.setup.services;
  if (names.length === 0) return false;
  try {
    w.services = await provisionServices(w.deps.services, names, { installation: w.job.installation, sessionId: w.job.sessionId, worker: w.job.worker });
  } catch (err) {
    if (err instanceof ServiceUnavailableError) throw new SetupFailed(`worker ${w.job.worker}: ${err.message}`);
    throw err;
  }
  // The worker's database, user and password win over anything the build's variables say.
  Object.assign(w.env, w.services.env);
  w.secretValues.push(...w.services.secrets);
  w.notes.push(`services: ${names.join(', ')}`);
  return true;
}

/**
 * The rendezvous, without the wait: a worker that is set up starts taking files at once, and the
 * first one ready tells the session that the tests started (`test`, with the setup's timing). A
 * worker never waits for another: a partner still waiting for a runner's free slot would hold
 * this one's slot while it waited, and a burst of builds could then hold every slot of the pool
 * that way for good (issue 49). Late workers join the shared list as they get ready; one that
 * finds it done ends at once. Only a setup failure already recorded stops a worker here.
 */
async function meet(w: Worker): Promise<boolean> {
  const { deps, job } = w;
  const state = await deps.records.markWorkerReady(job.sessionId, job.worker, deps.runner);
  if (state.failure !== null) throw new SetupFailed(state.failure, { cause: 'another worker' });
  if (state.first) await deps.testsStarted({ ...(await deps.records.setupTiming(job.sessionId)), exec: now() });
  return true;
}

async function tests(w: Worker): Promise<boolean> {
  const { deps, job } = w;
  const out = await runLane(
    { records: deps.records, runner: deps.runner, processGroups: deps.processGroups, runAs: deps.runAs, sandbox: w.sandbox, firstFailure: deps.firstFailure, signal: deps.signal },
    {
      sessionId: job.sessionId,
      lane: job.worker - 1,
      lanes: job.workers,
      attempt: job.attempt,
      workdir: job.tree,
      home: job.home,
      command: job.command,
      env: w.env,
      secretValues: w.secretValues,
      note: w.note,
      timeoutMs: job.timeoutMs,
      retryFailed: job.retryFailed,
      ...(job.trace ? { trace: true } : {}),
    },
  );
  w.ran = out.ran;
  w.stopped = out.stopped;
  return true;
}

async function postWorker(w: Worker): Promise<boolean> {
  const command = w.job.setup.hooks.post_worker;
  if (!command) return false;
  // Recorded and shown; its failure changes nothing of the build's result.
  await runHook(hookPlace(w), { name: 'post_worker', command });
  return true;
}

async function artifacts(w: Worker): Promise<boolean> {
  const { deps, job } = w;
  let ran = false;
  if (job.setup.artifacts.length > 0 && deps.artifacts) {
    const kept = await collectArtifacts(deps.artifacts, { sessionId: job.sessionId, worker: job.worker, tree: job.tree, patterns: job.setup.artifacts });
    w.notes.push(`artifacts: ${kept.files} file${kept.files === 1 ? '' : 's'} kept`, ...kept.notes);
    ran = true;
  }
  if (job.junitPattern && w.ran > 0) {
    await collectJUnitResults({ records: deps.records }, { sessionId: job.sessionId, workdir: job.tree, pattern: job.junitPattern, lane: job.worker - 1 });
    ran = true;
  }
  return ran;
}

/**
 * Saves the entry when the build may write one and its key missed; says why not otherwise
 * (saveCache decides). Only a worker whose setup passed gets here: the tree is worth keeping.
 */
async function saveStep(w: Worker): Promise<boolean> {
  const { deps, job, restored } = w;
  if (!job.savesCache || !w.cacheSettings || !deps.cache || !restored) return false;
  const saved = await saveCache(deps.cache, w.cacheSettings, cacheTarget(w), restored, deps.signal);
  w.notes.push(saved.note);
  return saved.saved;
}

// --- running them -----------------------------------------------------------------------------

export async function runWorker(deps: WorkerDeps, job: WorkerJob): Promise<WorkerOutcome> {
  await mkdir(job.home, { recursive: true, mode: 0o700 });
  if (deps.runAs) await chown(job.home, deps.runAs.uid, deps.runAs.gid);
  // Secrets are read here, from PostgreSQL, never through Temporal, and only for a build they may reach.
  const secrets = job.secrets ? await deps.records.buildSecrets(job.repoId) : { values: {}, unreadable: [] };
  const managers = job.setup.hooks.package_setup === undefined ? await detectPackageManagers(job.tree) : [];
  const packages = packageEnv(managers, job.tree, job.home);
  const w: Worker = {
    deps,
    job,
    env: workerEnvironment(job, secrets.values, packages, null),
    secrets: secrets.values,
    packages,
    secretValues: Object.values(secrets.values),
    image: null,
    sandbox: deps.sandbox,
    note: secrets.unreadable.map((name) => `[sluice] secret ${name} could not be decrypted (was SLUICE_SECRET_KEY changed?); it was not set\n`).join(''),
    managers,
    cacheSettings: job.setup.cache === false ? null : (job.setup.cache ?? (job.setup.hooks.package_setup === undefined ? defaultCache(managers) : null)),
    restored: null,
    services: null,
    ran: 0,
    stopped: false,
    notes: [],
  };
  const timing: Timing = {};
  let setupFailure: string | null = null;
  try {
    for (const step of STEPS) {
      if (deps.signal?.aborted || w.stopped) {
        w.stopped = true;
        break;
      }
      if (step.name === 'tests') timing.exec = now();
      let ran: boolean;
      try {
        ran = await step.run(w);
      } catch (err) {
        if (!(err instanceof SetupFailed)) throw err;
        setupFailure = await failSetup(w, err);
        break;
      }
      if (ran && step.key) timing[step.key] = now();
      if ((ran && step.key) || w.notes.length > 0) {
        await deps.records.recordWorkerStep(job.sessionId, job.worker, deps.runner, ran && step.key ? { [step.key]: timing[step.key]! } : {}, w.notes.splice(0));
      }
    }
  } finally {
    await w.services?.release();
    await w.image?.lease.release();
  }
  return { ran: w.ran, stopped: w.stopped || deps.signal?.aborted === true, setupFailure, timing };
}

/**
 * A setup step failed here, or another worker's did (`cause`). The build's first failure is
 * kept, and ends the build even when other workers are testing already (the session stops
 * them). A worker run again after its runner died fails alone while another worker is testing:
 * its first attempt was set up, so the build's setup works, and the others go on with its files.
 */
async function failSetup(w: Worker, err: SetupFailed): Promise<string | null> {
  const { deps, job } = w;
  if (err.cause === 'another worker') return err.message;
  if (job.attempt > 1) {
    const before = await deps.records.rendezvous(job.sessionId);
    if (before.failure === null && before.ready > 0) return null;
  }
  return (await deps.records.markWorkerFailed(job.sessionId, job.worker, deps.runner, err.message)).failure ?? err.message;
}

// --- once a build -----------------------------------------------------------------------------

export interface PostBuildJob {
  sessionId: number;
  repoId: number;
  tree: string;
  home: string;
  command: string;
  env: Record<string, string>;
  secrets: boolean;
  /** SLUICE_BUILD_STATUS: passed, failed or error. */
  status: string;
  /** The build's image, as resolved; none: the runner's own `/`. */
  image?: ResolvedImage;
}

/** The `post_build` hook, once a build after its results are recorded (in its image); its failure changes nothing. */
export async function runPostBuildHook(deps: Omit<WorkerDeps, 'firstFailure' | 'testsStarted' | 'cache' | 'artifacts' | 'services'>, job: PostBuildJob): Promise<{ status: string }> {
  await mkdir(job.home, { recursive: true, mode: 0o700 });
  if (deps.runAs) await chown(job.home, deps.runAs.uid, deps.runAs.gid);
  const secrets = job.secrets ? await deps.records.buildSecrets(job.repoId) : { values: {}, unreadable: [] };
  let image: WorkerImage | null = null;
  let sandbox = deps.sandbox;
  if (job.image) {
    const place = { records: deps.records, sessionId: job.sessionId, worker: null, runner: deps.runner };
    const credentials = async () => (job.secrets ? credentialsOf(deps.records, job.repoId, secrets.values) : { logins: [] });
    const got = await getImage(place, job.image, deps, credentials);
    if ('failure' in got) return { status: 'error' };
    ({ image, sandbox } = got);
  }
  try {
    const env = testEnvironment(job.home, { ...imageVariables(image), ...job.env, ...secrets.values, SLUICE_BUILD_STATUS: job.status });
    const outcome = await runHook(
      {
        records: deps.records,
        sessionId: job.sessionId,
        worker: null,
        runner: deps.runner,
        tree: job.tree,
        home: job.home,
        env,
        secrets: Object.values(secrets.values),
        timeoutMs: deps.hookTimeoutMs,
        signal: deps.signal,
        processGroups: deps.processGroups,
        runAs: deps.runAs,
        sandbox,
      },
      { name: 'post_build', command: job.command },
    );
    return { status: outcome.status };
  } finally {
    await image?.lease.release();
  }
}

// --- the image --------------------------------------------------------------------------------

/** Where a step row goes: the session, its worker (null: the build's post_build), this runner. */
interface StepPlace {
  records: BuildRecords;
  sessionId: number;
  worker: number | null;
  runner: string;
}

/**
 * The image leased for a worker (or the post_build hook), recorded as an `image` step: what it
 * took and whether the store had it; or why not, recorded the same way.
 */
async function getImage(
  place: StepPlace,
  image: ResolvedImage,
  deps: Pick<WorkerDeps, 'sandbox' | 'images' | 'runAs' | 'signal'>,
  credentials: () => Promise<RegistryCredentials>,
): Promise<{ image: WorkerImage; sandbox: Sandbox } | { failure: string }> {
  const started = performance.now();
  const id = await place.records.startHook({ sessionId: place.sessionId, name: 'image', worker: place.worker, command: `${image.reference}@${image.digest}`, detail: null, runner: place.runner });
  const end = (status: 'passed' | 'error', notes: string[], detail: string | null) =>
    place.records.finishHook(id, { status, exitCode: null, durationMs: performance.now() - started, output: notes.map((n) => `[sluice] ${n}\n`).join(''), detail });
  try {
    if (!deps.sandbox) {
      throw new RegistryError('this runner runs builds without bubblewrap (SLUICE_SANDBOX=none, or bubblewrap does not work there): a build in an image needs it', 'no client');
    }
    if (!deps.images) throw new RegistryError('this runner keeps no images', 'no client');
    const user = deps.runAs ?? { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
    const got = await leaseWorkerImage(deps.images, image, credentials, user, deps.signal);
    await end('passed', got.notes, got.detail);
    return { image: got, sandbox: { ...deps.sandbox, image: got.sandbox } };
  } catch (err) {
    const failure = deps.signal?.aborted ? 'stopped while getting the image' : err instanceof RegistryError ? err.message : `the image could not be set up: ${(err as Error).message}`;
    await end('error', [failure], null);
    return { failure };
  }
}

/** What a build logs in to registries with: its repository's logins and DOCKER_AUTH_CONFIG secret. */
async function credentialsOf(records: BuildRecords, repoId: number, secrets: Record<string, string>): Promise<RegistryCredentials> {
  const dockerAuthConfig = secrets[DOCKER_AUTH_CONFIG];
  return { logins: await records.registryLogins(repoId), ...(dockerAuthConfig !== undefined ? { dockerAuthConfig } : {}) };
}

/** A worker's registry logins: none for a build that may not have the repository's secrets (it pulls anonymously). */
function registryCredentials(w: Worker): Promise<RegistryCredentials> {
  return w.job.secrets ? credentialsOf(w.deps.records, w.job.repoId, w.secrets) : Promise.resolve({ logins: [] });
}

/** The image's own variables, its PATH among them, and where it would start (SLUICE_IMAGE_WORKDIR); none without one. */
function imageVariables(image: WorkerImage | null): Record<string, string> {
  if (!image) return {};
  return { ...image.env, PATH: image.path, ...(image.workingDir ? { SLUICE_IMAGE_WORKDIR: image.workingDir } : {}) };
}

// --- what the steps share ---------------------------------------------------------------------

/**
 * The worker's variables, later ones winning: the image's (its configuration's Env), the
 * profile's and the trigger's, the repository's secrets, where the package managers put things,
 * and the worker's number. A secret is the operator's setting and the trigger's env comes from
 * whoever holds the webhook URL, so a trigger can neither replace a secret's value nor redirect
 * where a test sends it. Services add theirs when they are made. A PATH from the package
 * managers goes in front of the base PATH: the image's, else the runner's fixed one.
 */
function workerEnvironment(job: WorkerJob, secrets: Record<string, string>, packages: Record<string, string>, image: WorkerImage | null): Record<string, string> {
  const { PATH: pathPrefix, ...others } = packages;
  const base = imageVariables(image);
  const basePath = base.PATH ?? TEST_PATH;
  return {
    ...base,
    ...job.env,
    ...secrets,
    ...others,
    ...(pathPrefix ? { PATH: `${pathPrefix}${basePath}` } : {}),
    SLUICE_WORKER_ID: String(job.worker),
    SLUICE_WORKER_COUNT: String(job.workers),
  };
}

function hookPlace(w: Worker): HookPlace {
  const { deps, job } = w;
  return {
    records: deps.records,
    sessionId: job.sessionId,
    worker: job.worker,
    runner: deps.runner,
    tree: job.tree,
    home: job.home,
    env: testEnvironment(job.home, { ...w.env, SLUICE_CACHE_HIT: w.restored?.hit ?? 'miss' }),
    secrets: w.secretValues,
    timeoutMs: deps.hookTimeoutMs,
    signal: deps.signal,
    processGroups: deps.processGroups,
    runAs: deps.runAs,
    sandbox: w.sandbox,
  };
}

function cacheTarget(w: Worker) {
  const { job, deps } = w;
  // An install made in one image is never restored into another, nor into the runner's own `/`.
  const platform = job.image ? `${process.platform} image ${job.image.reference}` : undefined;
  return { repoId: job.repoId, readScopes: job.cache.readScopes, writeScope: job.cache.writeScope, tree: job.tree, home: job.home, owner: deps.runAs, platform, layers: layersDir(job.tree) };
}

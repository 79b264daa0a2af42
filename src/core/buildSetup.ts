/**
 * A build's setup (issue 21), Solano's names: hooks around the tests, the dependency cache,
 * per-worker services and artifacts, from the suite's settings and the repository's sluice.yml.
 * Pure, with no imports, so workflow code may resolve it (as it resolves profiles): the file
 * wins key by key (a hook it names replaces the suite's hook of that name; `cache`, `services`
 * and `artifacts` replace the suite's whole).
 *
 * When each hook runs (steps/lifecycle.ts):
 * - `pre_setup`: once per checkout, before package setup;
 * - `package_setup`: dependencies; absent: detected from the checkout (steps/packages.ts);
 *   `false`: none;
 * - `worker_setup`: once per worker, all workers in parallel, with that worker's services;
 * - `post_setup`: once per checkout, after its worker's setup; then the worker takes test files
 *   (the first one ready starts the tests; none waits for another);
 * - `post_worker`: once per worker, after its last test;
 * - `post_build`: once per build, after its results are recorded (SLUICE_BUILD_STATUS).
 */

export const HOOK_NAMES = ['pre_setup', 'package_setup', 'worker_setup', 'post_setup', 'post_worker', 'post_build'] as const;
export type HookName = (typeof HOOK_NAMES)[number];
/** What a build's steps list shows (session_hooks): its hooks, and getting its image (steps/image/). */
export type SetupStepName = HookName | 'image';

/** Hooks whose failure ends the build in `error` before any test runs. */
export const SETUP_HOOKS: readonly HookName[] = ['pre_setup', 'package_setup', 'worker_setup', 'post_setup'];

export const SERVICE_NAMES = ['postgresql', 'mysql', 'redis'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

/**
 * A hook's command (run with `sh -c` in the checkout); null: none (sluice.yml turning off a
 * suite's hook). `package_setup: false` turns detection off.
 */
export type HookSettings = Partial<Record<Exclude<HookName, 'package_setup'>, string | null>> & { package_setup?: string | false };

export interface CacheSettings {
  /** Files whose content names the entry, relative to the checkout. */
  key_paths: string[];
  /** What the entry keeps: paths relative to the checkout, or `~/…` in the build's home. */
  save_paths: string[];
  /**
   * Restore by hard links from the runner's copy instead of copying (issue 39): near-instant,
   * but the restored files are read-only (replace them, do not edit them, as in pnpm's store).
   * Needs a build user (the runner is root, builds are not); else the entry is copied.
   */
  link?: boolean;
}

/** What sluice.yml or a suite says; a key left out says nothing (the other source, else the default, decides). */
export interface BuildSetupSettings {
  hooks?: HookSettings;
  /** `false` (or null): no cache. */
  cache?: CacheSettings | false | null;
  services?: ServiceName[];
  artifacts?: string[];
  /** The OCI image hooks and tests run in (`node:22`); null: none (the runner's own `/`). */
  image?: string | null;
}

/** Every key settled: what a build's workers run with. */
export interface BuildSetup {
  hooks: HookSettings;
  /** null: no cache configured (package setup may still bring a default one: steps/packages.ts). `false`: none at all. */
  cache: CacheSettings | false | null;
  services: ServiceName[];
  artifacts: string[];
  /** The image as written, before a profile's own (imageOf); absent: none. */
  image?: string;
}

export const MAX_HOOK_COMMAND = 16 * 1024;
export const MAX_CACHE_PATHS = 32;
export const MAX_ARTIFACT_PATTERNS = 32;

/** sluice.yml over the suite, key by key; no source at all: nothing to set up but what package setup detects. */
export function resolveBuildSetup(suite: BuildSetupSettings | null | undefined, file: BuildSetupSettings | null | undefined): BuildSetup {
  const hooks: HookSettings = { ...(suite?.hooks ?? {}), ...(file?.hooks ?? {}) };
  const pick = <K extends 'cache' | 'services' | 'artifacts' | 'image'>(key: K) => (file?.[key] !== undefined ? file[key] : suite?.[key]);
  const cache = pick('cache');
  const image = pick('image');
  return {
    hooks,
    cache: cache === undefined ? null : cache === null ? false : cache,
    services: [...new Set(pick('services') ?? [])],
    artifacts: [...(pick('artifacts') ?? [])],
    ...(image ? { image } : {}),
  };
}

/**
 * The image a profile's build runs in: the profile's own when it names one (or null, none),
 * else the top level's (sluice.yml's over the suite's).
 */
export function imageOf(profile: { image?: string | null }, setup: BuildSetup): string | null {
  return profile.image !== undefined ? profile.image : (setup.image ?? null);
}

/** Whether a build with this setup does anything before its tests but check out (and so whether its workers meet at all). */
export function isEmptySetup(setup: BuildSetup): boolean {
  return setup.hooks.package_setup === false && Object.entries(setup.hooks).every(([name, cmd]) => name === 'package_setup' || !cmd) &&
    !setup.cache && setup.services.length === 0 && setup.artifacts.length === 0;
}

/**
 * Who a cache entry may come from and go to (GitHub Actions' rule, which stops cache
 * poisoning): a build reads its own branch's entries, else the default branch's, never another
 * branch's; only a trusted build writes, to its own branch: a push, never a pull request, never
 * a trigger that brought its own `env` (it could change what an install does).
 */
export function cacheScopes(input: { branch: string; defaultBranch: string; mayWrite: boolean }): { readScopes: string[]; writeScope: string | null } {
  const readScopes = input.branch === input.defaultBranch ? [input.branch] : [input.branch, input.defaultBranch];
  return { readScopes, writeScope: input.mayWrite ? input.branch : null };
}

/**
 * Profiles and build plans (spec §2 "Profile"), as pure functions: no I/O, no Node APIs and
 * no imports but types (no yaml, no zod), so the workflow may call them: they decide which
 * profiles a build runs, from settings the readRepoConfig activity parsed.
 *
 * A profile names a configuration: which files are tests (`test_pattern`), how to run one
 * (`test_command`), extra environment (`env`), how many run at once (`workers`) and where the
 * tests leave JUnit XML (`junit_pattern`). A plan is an ordered list of profile names, built
 * as one multi-session build.
 *
 * Which profiles a build runs:
 * 1. the trigger's `profile_name`, when given: that single profile, whatever else is configured;
 * 2. else the plan, when one is configured (in sluice.yml, else on the suite): its profiles, in order;
 * 3. else the default profile: sluice.yml's `default_profile`, else the suite's own settings.
 *
 * Where they come from: the suite's own settings (its default profile, named `default`), the
 * suite's profiles and plan, and the repository's `sluice.yml`, which wins: a profile it names
 * replaces, key by key, the suite's profile of that name; its `plan` replaces the suite's (an
 * empty `plan: []` turns the suite's off); its `default_profile` picks the default.
 */
import type { BuildSetupSettings } from './buildSetup';

export interface Profile {
  name: string;
  /** Glob of test files, relative to the repository root. */
  test_pattern: string;
  /** argv (split on spaces, no shell) each test file is appended to; none: the file runs itself. */
  test_command?: string | null;
  env?: Record<string, string>;
  workers?: number;
  /** Glob of the JUnit XML files the tests leave; none: exit codes only. */
  junit_pattern?: string | null;
  /** How many times a failing file runs again; one that then passes is flaky (default 0). */
  retry_failed?: number;
  /** The OCI image its build runs in, over the top-level `image` (null: none). */
  image?: string | null;
  /** Run only the test files a change can affect (issue 40): `true`, or its settings; false or absent: every file. */
  affected?: boolean | Partial<AffectedSettings>;
}

/** A profile with every key settled: what a build of it runs with. */
export interface ResolvedProfile {
  name: string;
  test_pattern: string;
  test_command: string | null;
  env: Record<string, string>;
  workers: number;
  junit_pattern: string | null;
  retry_failed: number;
  /** Its own image when it names one (null: none); absent: the top-level `image` decides (core/buildSetup.ts imageOf). */
  image?: string | null;
  /** Selection of affected test files (core/affected.ts); absent or null: every file runs. */
  affected?: AffectedSettings | null;
}

/** A profile's `affected:` setting, settled: how often the default branch records a map, and what always runs everything. */
export interface AffectedSettings {
  /** A mapping run every this many builds of the default branch (the first build with none maps). */
  map_every: number;
  /** Globs of files whose change runs every test file (`jest.config.js`, `test/support/**`). */
  always_full: string[];
}

export const DEFAULT_MAP_EVERY = 10;
export const MAX_MAP_EVERY = 1000;
export const MAX_ALWAYS_FULL = 100;

/** In a commit message: run every test file whatever changed. */
export const FULL_RUN_MARKER = '[ci full]';

/** The `affected:` setting settled: null when it is off. */
export function affectedSettings(given: Profile['affected']): AffectedSettings | null {
  if (given === undefined || given === false) return null;
  if (given === true) return { map_every: DEFAULT_MAP_EVERY, always_full: [] };
  return { map_every: given.map_every ?? DEFAULT_MAP_EVERY, always_full: [...(given.always_full ?? [])] };
}

/** A profile as sluice.yml gives it: any key may be left out (then the suite's profile of that name, if any, says). */
export type ProfileSettings = Partial<Omit<Profile, 'name'>>;

/** What sluice.yml configures (core/sluiceYml.ts parses it). */
export interface RepoConfig {
  profiles: Record<string, ProfileSettings>;
  plan?: string[];
  default_profile?: string;
  /** Its hooks, cache, services and artifacts (core/buildSetup.ts), where it sets any. */
  setup?: BuildSetupSettings;
}

/**
 * The repository's sluice.yml, read and parsed by the activity (the workflow never parses):
 * `config` is null when the repository has none; `error` says why the file cannot be used
 * (too large, not UTF-8, not a regular file, not valid settings, with the line).
 */
export type RepoConfigResult = { config: RepoConfig | null } | { error: string };

export interface ResolveInput {
  /** The suite's own settings as a profile (by convention named `default`). */
  suiteDefault: Profile;
  suiteProfiles?: readonly Profile[];
  suitePlan?: readonly string[];
  /** The repository's sluice.yml, parsed; absent when the repository has none. */
  fileConfig?: RepoConfig | null;
  /** The trigger's `profile_name`. */
  requestedProfile?: string | null;
}

export type ResolveResult = { profiles: ResolvedProfile[]; isPlan: boolean } | { error: string };

/** Profile names: what a report, a payload's `profile_name` and a trigger's `profile_name` carry. */
export const PROFILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
/** Sessions of one plan, at most. */
export const MAX_PLAN_PROFILES = 32;
export const MAX_WORKERS = 64;

const DEFAULTS = { test_command: null, env: {}, workers: 1, junit_pattern: null, retry_failed: 0 } as const;
/** Runs of a failing file after its first, at most. */
export const MAX_RETRY_FAILED = 10;

function quoted(names: Iterable<string>): string {
  return [...names].map((n) => JSON.stringify(n)).join(', ');
}

/** Copies only the keys that are set (undefined means "not said", null means "none"). */
function given(p: ProfileSettings): ProfileSettings {
  const out: ProfileSettings = {};
  if (p.test_pattern !== undefined) out.test_pattern = p.test_pattern;
  if (p.test_command !== undefined) out.test_command = p.test_command;
  if (p.env !== undefined) out.env = { ...p.env };
  if (p.workers !== undefined) out.workers = p.workers;
  if (p.junit_pattern !== undefined) out.junit_pattern = p.junit_pattern;
  if (p.retry_failed !== undefined) out.retry_failed = p.retry_failed;
  if (p.image !== undefined) out.image = p.image;
  if (p.affected !== undefined) out.affected = p.affected;
  return out;
}

export function resolveProfiles(input: ResolveInput): ResolveResult {
  const file = input.fileConfig ?? null;

  // Every profile known, by name: the suite's first, then sluice.yml's over them, key by key.
  const known = new Map<string, ProfileSettings>();
  known.set(input.suiteDefault.name, given(input.suiteDefault));
  for (const p of input.suiteProfiles ?? []) {
    if (p.name === input.suiteDefault.name || known.has(p.name)) {
      return { error: `the suite defines profile ${JSON.stringify(p.name)} more than once` };
    }
    known.set(p.name, given(p));
  }
  for (const [name, settings] of Object.entries(file?.profiles ?? {})) {
    known.set(name, { ...known.get(name), ...given(settings) });
  }

  const resolved = new Map<string, ResolvedProfile>();
  for (const [name, p] of known) {
    if (!p.test_pattern) {
      return {
        error: `profile ${JSON.stringify(name)} has no test_pattern (sluice.yml must give one for a profile the suite does not define)`,
      };
    }
    resolved.set(name, {
      name,
      test_pattern: p.test_pattern,
      test_command: p.test_command ?? DEFAULTS.test_command,
      env: { ...(p.env ?? DEFAULTS.env) },
      workers: p.workers ?? DEFAULTS.workers,
      junit_pattern: p.junit_pattern ?? DEFAULTS.junit_pattern,
      retry_failed: p.retry_failed ?? DEFAULTS.retry_failed,
      ...(p.image !== undefined ? { image: p.image } : {}),
      ...(p.affected !== undefined && p.affected !== false ? { affected: affectedSettings(p.affected) } : {}),
    });
  }
  const lookup = (name: string, what: string): ResolvedProfile | { error: string } =>
    resolved.get(name) ?? { error: `${what} names profile ${JSON.stringify(name)}, which is not defined (profiles: ${quoted(resolved.keys())})` };

  // Checked whichever is used, so a broken sluice.yml shows on every build, not only some.
  const defaultName = file?.default_profile ?? input.suiteDefault.name;
  const byDefault = lookup(defaultName, 'default_profile');
  if ('error' in byDefault) return byDefault;
  const plan = file?.plan ?? input.suitePlan ?? [];
  const planSource = file?.plan ? 'the plan in sluice.yml' : "the suite's plan";
  if (new Set(plan).size !== plan.length) return { error: `${planSource} lists a profile more than once` };
  if (plan.length > MAX_PLAN_PROFILES) return { error: `${planSource} lists more than ${MAX_PLAN_PROFILES} profiles` };
  const planned: ResolvedProfile[] = [];
  for (const name of plan) {
    const p = lookup(name, planSource);
    if ('error' in p) return p;
    planned.push(p);
  }

  const requested = input.requestedProfile ?? '';
  if (requested !== '') {
    const p = resolved.get(requested);
    if (!p) return { error: `unknown profile ${JSON.stringify(requested)} (profiles: ${quoted(resolved.keys())})` };
    return { profiles: [p], isPlan: false };
  }
  if (planned.length > 0) return { profiles: planned, isPlan: true };
  return { profiles: [byDefault], isPlan: false };
}

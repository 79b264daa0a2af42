/**
 * Suites, as the JSON API and the web pages both decide about them: a suite is one repository +
 * one branch, the unit that builds. Making one, changing its settings (from the next session on),
 * listing them, deleting one with its builds.
 */
import { z } from 'zod';
import { buildSetupShape, hookSettingsOf, imageSchema } from '../core/buildSetupSchema';
import { MAX_PLAN_PROFILES, MAX_RETRY_FAILED, MAX_WORKERS, PROFILE_NAME } from '../core/profiles';
import { findSuiteOfRepo } from '../db/removal';
import type { RepoRow } from '../db/repos';
import { insertSuite, listSuites, updateSuiteSettings, type SuiteRow } from '../db/suites';
import { uniqueViolation, type Db } from '../db/transaction';
import { conflict, notFound, parseId, validate } from './errors';
import { branchName, plainText, testPattern } from './fields';
import type { RemoveBy } from './orgs';
import { stopAndRemove, type RemoveDeps } from './remove';

const envMap = z
  .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,99}$/, 'environment variable names are letters, digits and _'), z.string().max(32 * 1024))
  .refine((env) => Object.keys(env).length <= 256, 'at most 256 variables');

// How many times a failing file runs again (0..10); one that then passes counts, as flaky.
const retryFailed = z.number().int().min(0).max(MAX_RETRY_FAILED);

/** A named profile besides the suite's own settings (which are the profile named `default`). */
const SuiteProfile = z.strictObject({
  name: z.string().regex(PROFILE_NAME, 'profile names are letters, digits, ., _ and -').refine((n) => n !== 'default', 'default is the suite itself'),
  test_pattern: testPattern,
  test_command: plainText(4000).nullish(),
  env: envMap.optional(),
  workers: z.number().int().min(1).max(MAX_WORKERS).optional(),
  junit_pattern: testPattern.nullish(),
  retry_failed: retryFailed.optional(),
  // The profile's own image, over the suite's (null: none for this profile).
  image: imageSchema.optional(),
});
const profiles = z
  .array(SuiteProfile)
  .max(MAX_PLAN_PROFILES)
  .refine((ps) => new Set(ps.map((p) => p.name)).size === ps.length, 'profile names must differ');
// Names of profiles the suite or the repository's sluice.yml defines; checked when a build uses it.
const plan = z.array(z.string().regex(PROFILE_NAME)).min(1).max(MAX_PLAN_PROFILES).nullable();
// Minutes one build may take from its turn to the end of its tests (7 days at most, the longest
// a test lane runs); past it the build is stopped and ends in `error`. null: no deadline.
export const MAX_DEADLINE_MINUTES = 7 * 24 * 60;
const deadline = z.number().int().min(1).max(MAX_DEADLINE_MINUTES).nullable();

/**
 * What builds set up around their tests, as sluice.yml says it (core/buildSetupSchema.ts); null
 * leaves a key unset (sluice.yml, else the default, decides), `cache: false` turns the cache off.
 */
const setupKeys = buildSetupShape;

/**
 * A suite's settings, as it is made (`test_pattern` required) and as it is changed (each
 * optional); null clears what may be cleared.
 */
const suiteSettings = <P extends z.ZodType>(pattern: P) => ({
  test_pattern: pattern,
  test_command: plainText(4000).nullish(),
  workers: z.number().int().min(1).max(64).optional(),
  // Where the tests leave JUnit XML reports (a glob like test_pattern); null: none collected.
  junit_pattern: testPattern.nullish(),
  retry_failed: retryFailed.optional(),
  profiles: profiles.optional(),
  plan: plan.optional(),
  deadline_minutes: deadline.optional(),
  // Builds run only on runners started with a token of the repository's organization.
  own_runners: z.boolean().optional(),
  ...setupKeys,
});

export const CreateSuite = z.strictObject({
  branch: branchName,
  ...suiteSettings(testPattern),
}).meta({
  examples: [
    { branch: 'master', test_pattern: 'test/**/*.test.js', test_command: 'node --test' },
    { branch: 'main', test_pattern: 'spec/**/*_spec.rb', test_command: 'bundle exec rspec {files}', workers: 4, retry_failed: 1, junit_pattern: 'reports/*.xml', deadline_minutes: 60 },
    { branch: 'next', test_pattern: 'test/**/*.test.mjs', test_command: 'node --test', image: 'node:22' },
  ],
});

export const PatchSuite = z.strictObject(suiteSettings(testPattern.optional())).meta({ examples: [{ workers: 2 }, { test_command: null, deadline_minutes: null }] });

/** A suite as the API shows it: every setting as set. */
export const suiteView = (s: SuiteRow) => ({
  id: s.id,
  repo_id: s.repo_id,
  branch: s.branch,
  test_pattern: s.test_pattern,
  test_command: s.test_command,
  workers: s.workers,
  junit_pattern: s.junit_pattern,
  retry_failed: s.retry_failed,
  profiles: s.profiles,
  plan: s.plan,
  deadline_minutes: s.deadline_minutes,
  hooks: s.hooks,
  cache: s.cache,
  services: s.services,
  artifacts: s.artifacts,
  image: s.image,
  own_runners: s.own_runners,
  last_built_commit: s.last_built_commit,
  created_at: s.created_at,
});

/** A repository's suites, oldest first. */
export const suitesOf = (db: Db, repo: RepoRow): Promise<SuiteRow[]> => listSuites(db, repo.id);

/** Suite `suiteRef` (its id, as a path gives it) of a repository, or not found. */
export async function loadSuite(db: Db, repo: RepoRow, suiteRef: string): Promise<{ id: number; branch: string }> {
  const suite = await findSuiteOfRepo(db, repo.id, parseId(suiteRef, 'suite'));
  if (!suite) throw notFound('suite');
  return suite;
}

/**
 * Makes a suite of `repo` from a body of POST /repos/:repo/suites: invalid naming a bad field, a
 * conflict when the repository has a suite for that branch.
 */
export async function createSuite(pool: Db, repo: RepoRow, input: unknown): Promise<SuiteRow> {
  const body = validate(CreateSuite, input);
  try {
    return await insertSuite(pool, {
      repo_id: repo.id,
      branch: body.branch,
      test_pattern: body.test_pattern,
      test_command: body.test_command ?? null,
      workers: body.workers ?? 1,
      junit_pattern: body.junit_pattern ?? null,
      retry_failed: body.retry_failed ?? 0,
      profiles: body.profiles ?? [],
      plan: body.plan ?? null,
      deadline_minutes: body.deadline_minutes ?? null,
      hooks: body.hooks ? hookSettingsOf(body.hooks) : null,
      cache: body.cache ?? null,
      services: body.services ?? null,
      artifacts: body.artifacts ?? null,
      image: body.image ?? null,
      own_runners: body.own_runners ?? false,
    });
  } catch (err) {
    if (uniqueViolation(err) === 'suites_repo_id_branch_key') throw conflict('branch', 'this repository has a suite for this branch');
    throw err;
  }
}

/** Changes suite `id` of `repo` from a body of PATCH /repos/:repo/suites/:suite: invalid naming a bad field, or not found. */
export async function updateSuite(pool: Db, repo: RepoRow, id: number, input: unknown): Promise<SuiteRow> {
  const { hooks, ...rest } = validate(PatchSuite, input ?? {});
  const suite = await updateSuiteSettings(pool, repo.id, id, { ...rest, ...(hooks !== undefined ? { hooks: hooks && hookSettingsOf(hooks) } : {}) });
  if (!suite) throw notFound('suite');
  return suite;
}

/** Deletes suite `id` of a repository with its builds, those under way stopped first. */
export async function removeSuite(deps: RemoveDeps, repo: RepoRow, id: number, by: RemoveBy): Promise<void> {
  const suite = await findSuiteOfRepo(deps.pool, repo.id, id);
  if (!suite) throw notFound('suite');
  const what = `the suite of ${repo.org_name}/${repo.name} @ ${suite.branch}`;
  if (!(await stopAndRemove(deps, { suite: suite.id }, { ...by, what }))) throw notFound('suite');
}

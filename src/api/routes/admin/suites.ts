/** `/api/v1/repos/:repo/suites`: a suite is one repository + one branch, the unit that builds. */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ApiDeps } from '../../deps';
import { parseId } from '../../http';
import { conflict, notFound, validate } from '../../../app/errors';
import { uniqueViolation, type Db } from '../../../db/transaction';
import type { RepoRow } from '../../../db/repos';
import { insertSuite, listSuites, updateSuiteSettings, type SuiteRow } from '../../../db/suites';
import { MAX_PLAN_PROFILES, MAX_RETRY_FAILED, MAX_WORKERS, PROFILE_NAME } from '../../../core/profiles';
import { buildSetupShape, hookSettingsOf, imageSchema } from '../../../core/buildSetupSchema';
import { branchName, plainText, testPattern } from './fields';
import { loadRepo } from '../../../app/repos';
import { described, documented, errors, RepoParams, SuiteParams } from '../../openapi/shapes';

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

const CreateSuite = z.strictObject({
  branch: branchName,
  test_pattern: testPattern,
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
}).meta({
  examples: [
    { branch: 'master', test_pattern: 'test/**/*.test.js', test_command: 'node --test' },
    { branch: 'main', test_pattern: 'spec/**/*_spec.rb', test_command: 'bundle exec rspec {files}', workers: 4, retry_failed: 1, junit_pattern: 'reports/*.xml', deadline_minutes: 60 },
    { branch: 'next', test_pattern: 'test/**/*.test.mjs', test_command: 'node --test', image: 'node:22' },
  ],
});

const PatchSuite = z.strictObject({
  test_pattern: testPattern.optional(),
  test_command: plainText(4000).nullable().optional(),
  workers: z.number().int().min(1).max(64).optional(),
  junit_pattern: testPattern.nullable().optional(),
  retry_failed: retryFailed.optional(),
  profiles: profiles.optional(),
  plan: plan.optional(),
  deadline_minutes: deadline.optional(),
  own_runners: z.boolean().optional(),
  ...setupKeys,
}).meta({ examples: [{ workers: 2 }, { test_command: null, deadline_minutes: null }] });

const Suite = described('the suite: `id`, `repo_id`, `branch`, its settings as set, `last_built_commit`, `created_at`');

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

/**
 * Makes a suite of `repo` from a body of POST /repos/:repo/suites: a 400 naming a bad field, a
 * 409 when the repository has a suite for that branch.
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

/** Changes suite `id` of `repo` from a body of PATCH /repos/:repo/suites/:suite: a 400 naming a bad field, a 404. */
export async function updateSuite(pool: Db, repo: RepoRow, id: number, input: unknown): Promise<SuiteRow> {
  const { hooks, ...rest } = validate(PatchSuite, input ?? {});
  const suite = await updateSuiteSettings(pool, repo.id, id, { ...rest, ...(hooks !== undefined ? { hooks: hooks && hookSettingsOf(hooks) } : {}) });
  if (!suite) throw notFound('suite');
  return suite;
}

export function registerSuiteRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const { pool } = deps;

  app.post<{ Params: { repo: string } }>('/repos/:repo/suites', documented({ tag: 'suites', summary: 'Create a suite', params: RepoParams, body: CreateSuite, response: { 201: Suite, ...errors(400, 404, 409) } }), async (request, reply) => {
    const suite = await createSuite(pool, await loadRepo(pool, request.params.repo), request.body);
    return reply.code(201).send(suiteView(suite));
  });

  app.get<{ Params: { repo: string } }>('/repos/:repo/suites', documented({ tag: 'suites', summary: 'List a repository’s suites', params: RepoParams, response: { 200: z.array(Suite), ...errors(404) } }), async (request) => {
    const repo = await loadRepo(pool, request.params.repo);
    return (await listSuites(pool, repo.id)).map(suiteView);
  });

  // `:suite` is the suite's id. Settings apply from the next session on.
  app.patch<{ Params: { repo: string; suite: string } }>('/repos/:repo/suites/:suite', documented({ tag: 'suites', summary: 'Change a suite’s settings', description: 'From the next session on; absent fields stay as they are.', params: SuiteParams, body: PatchSuite, response: { 200: Suite, ...errors(400, 404) } }), async (request) => {
    const repo = await loadRepo(pool, request.params.repo);
    return suiteView(await updateSuite(pool, repo, parseId(request.params.suite, 'suite'), request.body));
  });
}

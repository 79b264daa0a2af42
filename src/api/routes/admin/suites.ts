/** `/api/v1/repos/:repo/suites`: a suite is one repository + one branch, the unit that builds (app/suites.ts). */
import { parseId } from '../../../app/errors';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ApiDeps } from '../../deps';
import { loadRepo } from '../../../app/repos';
import { HistoryQuery, InsightsQuery, suiteInsights, testHistory } from '../../../app/insights';
import { mute, MutedTest, mutedTestsOf, unmute } from '../../../app/mutes';
import { createSuite, CreateSuite, PatchSuite, suitesOf, suiteView, updateSuite } from '../../../app/suites';
import { described, documented, errors, NoBody, RepoParams, SuiteParams } from '../../openapi/shapes';

const Suite = described('the suite: `id`, `repo_id`, `branch`, its settings as set, `last_built_commit`, `created_at`');

export function registerSuiteRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const { pool } = deps;

  app.post<{ Params: { repo: string } }>('/repos/:repo/suites', documented({ tag: 'suites', summary: 'Create a suite', params: RepoParams, body: CreateSuite, response: { 201: Suite, ...errors(400, 404, 409) } }), async (request, reply) => {
    const suite = await createSuite(pool, await loadRepo(pool, request.params.repo), request.body);
    return reply.code(201).send(suiteView(suite));
  });

  app.get<{ Params: { repo: string } }>('/repos/:repo/suites', documented({ tag: 'suites', summary: 'List a repository’s suites', params: RepoParams, response: { 200: z.array(Suite), ...errors(404) } }), async (request) => {
    const repo = await loadRepo(pool, request.params.repo);
    return (await suitesOf(pool, repo)).map(suiteView);
  });

  // `:suite` is the suite's id. Settings apply from the next session on.
  app.patch<{ Params: { repo: string; suite: string } }>('/repos/:repo/suites/:suite', documented({ tag: 'suites', summary: 'Change a suite’s settings', description: 'From the next session on; absent fields stay as they are.', params: SuiteParams, body: PatchSuite, response: { 200: Suite, ...errors(400, 404) } }), async (request) => {
    const repo = await loadRepo(pool, request.params.repo);
    return suiteView(await updateSuite(pool, repo, parseId(request.params.suite, 'suite'), request.body));
  });

  app.get<{ Params: { repo: string; suite: string } }>('/repos/:repo/suites/:suite/insights', documented({ tag: 'suites', summary: 'A suite’s history at a glance', description: 'Its last ended builds (status, `tests_ms` exec → post_build, `whole_ms`), its pass rate, its slowest files (median duration), and the tests that flaked or failed in most of those builds, with the builds.', params: SuiteParams, querystring: InsightsQuery, response: { 200: described('`{suite, builds, pass_rate, slowest_files, flaky_tests, failing_tests, muted}`'), ...errors(400, 404) } }), async (request) =>
    suiteInsights(deps, await loadRepo(pool, request.params.repo), request.params.suite, request.query),
  );

  app.get<{ Params: { repo: string; suite: string } }>('/repos/:repo/suites/:suite/history', documented({ tag: 'suites', summary: 'One test’s history in a suite', description: 'Its status in each of the suite’s last ended builds that ran it (by classname and name, as its reports give them), newest first, and how many it failed and flaked in.', params: SuiteParams, querystring: HistoryQuery, response: { 200: described('`{test, runs: [{session, status, duration_ms, flaky, muted}], failed, flaked, builds}`'), ...errors(400, 404) } }), async (request) =>
    testHistory(deps, await loadRepo(pool, request.params.repo), request.params.suite, request.query),
  );

  const MutedRow = z.object({ classname: z.string(), name: z.string(), muted_by: z.string(), muted_at: z.date() });
  app.get<{ Params: { repo: string; suite: string } }>('/repos/:repo/suites/:suite/muted', documented({ tag: 'suites', summary: 'A suite’s muted tests', description: 'They run and report; their failures do not fail builds.', params: SuiteParams, response: { 200: z.array(MutedRow), ...errors(404) } }), async (request) =>
    mutedTestsOf(pool, await loadRepo(pool, request.params.repo), request.params.suite),
  );
  app.put<{ Params: { repo: string; suite: string } }>('/repos/:repo/suites/:suite/muted', documented({ tag: 'suites', summary: 'Mute a test', description: 'From the next build on, a failure of this test (its classname and name, as its reports give them) does not fail its file; it is still run, reported and listed as muted.', params: SuiteParams, body: MutedTest, response: { 200: MutedRow, ...errors(400, 404) } }), async (request) =>
    mute(pool, await loadRepo(pool, request.params.repo), request.params.suite, request.body ?? {}, request.principal!),
  );
  app.delete<{ Params: { repo: string; suite: string } }>('/repos/:repo/suites/:suite/muted', documented({ tag: 'suites', summary: 'Unmute a test', params: SuiteParams, querystring: MutedTest, response: { 204: NoBody, ...errors(400, 404) } }), async (request, reply) => {
    await unmute(pool, await loadRepo(pool, request.params.repo), request.params.suite, request.query);
    return reply.code(204).send();
  });
}

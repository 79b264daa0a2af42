/** `/api/v1/repos/:repo/suites`: a suite is one repository + one branch, the unit that builds. */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ApiDeps } from '../../app';
import { conflict, validate } from '../../http';
import { uniqueViolation } from '../../store/db';
import { insertSuite, listSuites, type SuiteRow } from '../../store/suites';
import { branchName, plainText, testPattern } from './fields';
import { loadRepo } from './repos';

const CreateSuite = z.strictObject({
  branch: branchName,
  test_pattern: testPattern,
  test_command: plainText(4000).nullish(),
  workers: z.number().int().min(1).max(64).optional(),
});

export const suiteView = (s: SuiteRow) => ({
  id: s.id,
  repo_id: s.repo_id,
  branch: s.branch,
  test_pattern: s.test_pattern,
  test_command: s.test_command,
  workers: s.workers,
  last_built_commit: s.last_built_commit,
  created_at: s.created_at,
});

export function registerSuiteRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const { pool } = deps;

  app.post<{ Params: { repo: string } }>('/repos/:repo/suites', async (request, reply) => {
    const repo = await loadRepo(pool, request.params.repo);
    const body = validate(CreateSuite, request.body);
    try {
      const suite = await insertSuite(pool, {
        repo_id: repo.id,
        branch: body.branch,
        test_pattern: body.test_pattern,
        test_command: body.test_command ?? null,
        workers: body.workers ?? 1,
      });
      return reply.code(201).send(suiteView(suite));
    } catch (err) {
      if (uniqueViolation(err) === 'suites_repo_id_branch_key') throw conflict('branch', 'this repository has a suite for this branch');
      throw err;
    }
  });

  app.get<{ Params: { repo: string } }>('/repos/:repo/suites', async (request) => {
    const repo = await loadRepo(pool, request.params.repo);
    return (await listSuites(pool, repo.id)).map(suiteView);
  });
}

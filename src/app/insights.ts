/**
 * A suite's history at a glance (issue 37), as the API and the suite's page show it: its last
 * builds (status, the test span and the whole build), its pass rate, its slowest files, the
 * tests that flaked or failed most in those builds, each with the builds it was, and its muted tests.
 */
import { z } from 'zod';
import { recentBuilds, slowestFiles, testRuns, testsThat, type SlowFileRow, type TestHistoryRow } from '../db/insights';
import { listMutedTests, type MutedTestRow } from '../db/mutedTests';
import type { RepoRow } from '../db/repos';
import type { AppDeps } from './deps';
import { validate } from './errors';
import { MutedTest } from './mutes';
import { loadSuite } from './suites';

export const InsightsQuery = z.object({
  builds: z.coerce.number().int().min(2).max(100).default(30).describe('how many of its last ended builds to look at'),
});

/** Files and tests listed at most. */
const LISTED = 10;

export interface InsightBuild {
  session: number;
  status: string;
  branch: string;
  created_at: Date;
  /** exec → post_build: the tests' span; null when the build did not get that far. */
  tests_ms: number | null;
  /** From the trigger to its last timing key. */
  whole_ms: number | null;
}

export interface SuiteInsights {
  suite: { id: number; branch: string };
  /** The builds looked at, newest first. */
  builds: InsightBuild[];
  /** Passed among those that passed or failed (errors and stops are neither); null without any. */
  pass_rate: number | null;
  slowest_files: SlowFileRow[];
  flaky_tests: TestHistoryRow[];
  failing_tests: TestHistoryRow[];
  /** Its muted tests: run and reported, their failures not failing builds (app/mutes.ts). */
  muted: MutedTestRow[];
}

const span = (timing: Record<string, number>, from: string, to: string): number | null =>
  typeof timing[from] === 'number' && typeof timing[to] === 'number' ? Math.round((timing[to] - timing[from]) * 1000) : null;

/** The insights of suite `suiteRef` of `repo`; not found when it has no such suite. */
export async function suiteInsights({ pool }: Pick<AppDeps, 'pool'>, repo: RepoRow, suiteRef: string, query: unknown): Promise<SuiteInsights> {
  const suite = await loadSuite(pool, repo, suiteRef);
  const { builds: window } = validate(InsightsQuery, query, 'query');
  const rows = await recentBuilds(pool, suite.id, window);
  const ids = rows.map((r) => r.id);
  const [slowest, flaky, failing, muted] = await Promise.all([slowestFiles(pool, ids, LISTED), testsThat(pool, 'flaky', ids, LISTED), testsThat(pool, 'failing', ids, LISTED), listMutedTests(pool, suite.id)]);
  const decided = rows.filter((r) => r.status === 'passed' || r.status === 'failed');
  return {
    suite: { id: suite.id, branch: suite.branch },
    builds: rows.map((r) => {
      const keys = Object.values(r.timing ?? {}).filter((v): v is number => typeof v === 'number');
      return {
        session: r.id,
        status: r.status,
        branch: r.branch,
        created_at: r.created_at,
        tests_ms: span(r.timing ?? {}, 'exec', 'post_build'),
        whole_ms: keys.length > 0 ? Math.round(Math.max(...keys) * 1000) : null,
      };
    }),
    pass_rate: decided.length === 0 ? null : decided.filter((r) => r.status === 'passed').length / decided.length,
    slowest_files: slowest,
    flaky_tests: flaky,
    failing_tests: failing,
    muted,
  };
}

export const HistoryQuery = InsightsQuery.extend(MutedTest.shape);

export interface TestHistoryView {
  test: { classname: string; name: string };
  /** The builds looked at that ran it, newest first: its status in each. */
  runs: { session: number; status: string; duration_ms: number | null; flaky: boolean; muted: boolean }[];
  /** How many of them it failed (or erred) in, and flaked in. */
  failed: number;
  flaked: number;
  /** The builds looked at (the suite's last ended ones), whether they ran it or not. */
  builds: number;
}

/** One test's history in the suite's last builds: "failed in 3 of the last 20 builds that ran it". */
export async function testHistory({ pool }: Pick<AppDeps, 'pool'>, repo: RepoRow, suiteRef: string, query: unknown): Promise<TestHistoryView> {
  const suite = await loadSuite(pool, repo, suiteRef);
  const { builds: window, classname, name } = validate(HistoryQuery, query, 'query');
  const ids = (await recentBuilds(pool, suite.id, window)).map((r) => r.id);
  const runs = await testRuns(pool, ids, { classname, name });
  return {
    test: { classname, name },
    runs: runs.map((r) => ({ session: r.session_id, status: r.status, duration_ms: r.time === null ? null : Math.round(r.time * 1000), flaky: r.flaky, muted: r.muted })),
    failed: runs.filter((r) => r.status === 'failed' || r.status === 'error').length,
    flaked: runs.filter((r) => r.flaky).length,
    builds: ids.length,
  };
}

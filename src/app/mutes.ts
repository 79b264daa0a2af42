/**
 * Muted tests (issue 37, Buildkite's "muted", a quarantine): a maintainer marks a suite's test so
 * it still runs and reports, but its failure no longer fails a build (steps/tests/batch.ts reads
 * them as a lane starts). A test is its classname and name as its reports give them; who muted it
 * and when are kept, and the audit trail has each change (api/access/rules.ts).
 */
import { z } from 'zod';
import { nameOf, type Principal } from '../core/access';
import { testKey } from '../core/testKey';
import { listMutedTests, mutedTestsOfSession, muteTest, unmuteTest, type MutedTestRow } from '../db/mutedTests';
import type { RepoRow } from '../db/repos';
import { suiteOfSession } from '../db/sessions';
import type { Db } from '../db/transaction';
import { notFound, validate } from './errors';
import { loadSuite } from './suites';

export const MutedTest = z
  .strictObject({
    classname: z.string().max(1000).default('').describe('as the reports give it (a describe block, a class); empty when they give none'),
    name: z.string().min(1).max(1000),
  })
  .meta({ examples: [{ classname: 'Cart totals', name: 'adds up the taxes' }] });

const suiteOf = async (db: Db, repo: RepoRow, suiteRef: string): Promise<number> => (await loadSuite(db, repo, suiteRef)).id;

/** A suite's muted tests, the latest first. */
export async function mutedTestsOf(db: Db, repo: RepoRow, suiteRef: string): Promise<MutedTestRow[]> {
  return listMutedTests(db, await suiteOf(db, repo, suiteRef));
}

/** Mutes a test of a suite, from now on (a build running now read its list when it started). */
export async function mute(db: Db, repo: RepoRow, suiteRef: string, input: unknown, by: Principal): Promise<MutedTestRow> {
  const suiteId = await suiteOf(db, repo, suiteRef);
  return muteTest(db, suiteId, validate(MutedTest, input), nameOf(by));
}

/** Mutes a test of the suite a build is of: the build page's button on a failing case. */
export async function muteFromBuild(db: Db, sessionId: number, input: unknown, by: Principal): Promise<MutedTestRow> {
  const test = validate(MutedTest, input);
  const suiteId = await suiteOfSession(db, sessionId);
  if (suiteId === undefined) throw notFound('build');
  return muteTest(db, suiteId, test, nameOf(by));
}

/** Whether a test is muted in the suite of a build now: the build page's cases say so (muted since this build ran, or before). */
export async function mutedNowFor(db: Db, sessionId: number): Promise<(test: { classname: string; name: string }) => boolean> {
  const keys = new Set((await mutedTestsOfSession(db, sessionId)).map(testKey));
  return (test) => keys.has(testKey(test));
}

/** Its failures fail builds again; not found when it was not muted. */
export async function unmute(db: Db, repo: RepoRow, suiteRef: string, input: unknown): Promise<void> {
  const suiteId = await suiteOf(db, repo, suiteRef);
  if (!(await unmuteTest(db, suiteId, validate(MutedTest, input, 'query')))) throw notFound('muted test');
}

/**
 * The JSON shapes of a session and of a ci_event as the read endpoints show them. One place,
 * so the report page, its JSON twin and the admin API agree with each other and with the
 * outgoing `stop` payload (spec §2).
 */
import type { Config } from '../config';
import { emptyCounts } from '../core/counts';
import type { Counts, TriggerEvent } from '../core/types';
import type { Db } from '../db/transaction';
import { findCiEvent, findSessionWithRepo, listEventSessions, listTests, type TestRow } from '../db/sessions';
import { countCases, listFailingCases, listJUnitFiles, type CaseCounts, type FailingCaseRow, type JUnitFileRow } from '../db/testCases';
import { listPostBuildSteps, type PostBuildStepRow } from '../db/postBuildSteps';
import { reportUrl } from '../core/reportUrl';

export interface SessionView {
  session: number;
  guid: string;
  url: string;
  parent_session?: number;
  profile_name: string;
  status: string;
  reason: string | null;
  branch: string;
  ref: string | null;
  head: string;
  force: boolean;
  commit_id: string | null;
  committers: string[];
  counts: Counts;
  workers: number;
  stopped_by?: string;
  timing: Record<string, number>;
  repository: { name: string; url: string; org_name: string };
  changeset?: TriggerEvent['changeset'];
  created_at: string;
  updated_at: string;
  tests: TestRow[];
  /** Test cases read from JUnit XML reports (none unless the suite sets junit_pattern). */
  cases: CaseCounts;
  /** The failed and erroring cases, at most MAX_LISTED_CASES (store/testCases.ts). */
  failing_cases: FailingCaseRow[];
  /** The JUnit XML files read, with what was wrong with each, if anything. */
  junit_files: JUnitFileRow[];
  /** Push, chat and e-mail after the tests, in order; present once one was attempted. */
  post_build_steps?: PostBuildStepRow[];
}


/** Every count key present, so clients never meet a missing one on a queued session. */
const fullCounts = (counts: Record<string, number> | null): Counts => ({ ...emptyCounts(), ...(counts ?? {}) });

export async function loadSessionView(db: Db, config: Config, id: number, withOutput: boolean): Promise<SessionView | undefined> {
  const row = await findSessionWithRepo(db, id);
  if (!row) return undefined;
  const tests = await listTests(db, id, withOutput);
  const cases = await countCases(db, id);
  const failingCases = cases.failed + cases.error > 0 ? await listFailingCases(db, id, withOutput) : [];
  const junitFiles = await listJUnitFiles(db, id);
  const view: SessionView = {
    session: row.id,
    guid: row.guid,
    url: reportUrl(config.baseUrl, row.id, row.report_token),
    profile_name: row.profile_name,
    status: row.status,
    reason: row.reason,
    branch: row.branch,
    ref: row.ref,
    head: row.head,
    force: row.force,
    commit_id: row.commit_id,
    committers: row.committers,
    counts: fullCounts(row.counts),
    workers: row.workers,
    // Until the worker records its own timing, the receipt time is already known.
    timing: { ci_received_at: row.received_at.getTime() / 1000, ...row.timing },
    repository: { name: row.repo_name, url: row.pull_url, org_name: row.org_name },
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    tests,
    cases,
    failing_cases: failingCases,
    junit_files: junitFiles,
  };
  if (row.parent_id !== null) view.parent_session = row.parent_id;
  if (row.stopped_by !== null) view.stopped_by = row.stopped_by;
  if (row.changeset) view.changeset = row.changeset;
  const postBuild = await listPostBuildSteps(db, id);
  if (postBuild.length > 0) view.post_build_steps = postBuild;
  return view;
}

export interface CiEventView {
  guid: string;
  received_at: string;
  provider: string;
  decision: string;
  reason: string | null;
  branch: string | null;
  sessions: { session: number; status: string; url: string; commit_id: string | null; counts: Counts }[];
}

export async function loadCiEventView(db: Db, config: Config, guid: string): Promise<CiEventView | undefined> {
  const event = await findCiEvent(db, guid);
  if (!event) return undefined;
  const sessions = await listEventSessions(db, event.id);
  return {
    guid: event.guid,
    received_at: event.received_at.toISOString(),
    provider: event.provider,
    decision: event.decision,
    reason: event.reason,
    branch: event.branch,
    sessions: sessions.map((s) => ({
      session: s.id,
      status: s.status,
      url: reportUrl(config.baseUrl, s.id, s.report_token),
      commit_id: s.commit_id,
      counts: fullCounts(s.counts),
    })),
  };
}

/**
 * The JSON shapes of a session and of a ci_event as the read endpoints show them. One place,
 * so the report page, its JSON twin and the admin API agree with each other and with the
 * outgoing `stop` payload (spec §2).
 */
import type { Config } from '../config';
import { emptyCounts } from '../core/counts';
import type { Counts, TriggerEvent } from '../core/types';
import type { Db } from '../db/transaction';
import { countTests, findCiEvent, findSessionWithRepo, listEventSessions, listTests, listTestsPage, type SessionListRow, type SessionWithRepo, type TestRow } from '../db/sessions';
import { countCases, listFailingCases, listJUnitFiles, type CaseCounts, type FailingCaseRow, type JUnitFileRow } from '../db/testCases';
import { listPostBuildSteps, type PostBuildStepRow } from '../db/postBuildSteps';
import { listSessionStatusAttempts, type StatusAttemptRow } from '../db/commitStatuses';
import { reportUrl } from '../core/reportUrl';
import { listSessionArtifacts } from '../db/artifacts';
import { listSessionHooks, type HookStatus } from '../db/sessionHooks';
import { listSessionWorkers } from '../db/sessionWorkers';
import { listBatchSummaries, type BatchStatus } from '../db/testBatches';
import { FLAKY_WINDOW, listFlakyFiles } from '../db/flaky';
import { artifactUrl } from './artifacts';

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
  /** The image its hooks and tests ran in, as read and as resolved when its build started; absent: none. */
  image?: { reference: string; digest: string | null };
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
  /** Attempts to post the session's commit statuses to the hosting site, in order; present once one was made. */
  commit_statuses?: StatusAttemptRow[];
  /** The build's hooks (package setup included) in the order they started; a `running` one has no end yet. */
  hooks: HookView[];
  /** Each worker's setup: ready or failed, and its notes (what the cache restored, its services, what artifacts were left out). */
  worker_setup: WorkerSetupView[];
  /** The files the build kept, by worker and path; `url` downloads one (the report's token opens it). */
  artifacts: ArtifactView[];
  /** The processes that ran many files each (a test command with `{files}`), in the order they started; a test's `batch` is one's `id`. */
  batches: BatchView[];
  /** The files that passed only on a retry, with how often each was flaky in the suite's last FLAKY_WINDOW builds. */
  flaky_files: FlakyFileView[];
}

export interface BatchView {
  id: number;
  /** 1..N: the worker (lane) that ran it. */
  worker: number;
  runner: string | null;
  /** How many test files it ran. */
  files: number;
  status: BatchStatus;
  exit_code: number | null;
  /** The batch process's own run; files a failed batch ran again one by one come after it. */
  duration_ms: number | null;
  /** What became of a batch that did not pass whole: which files its JUnit results pinned, which ran again one by one. */
  note: string | null;
  /** The last HOOK_OUTPUT_TAIL_CHARS characters of what it printed (secrets masked). */
  output_tail: string;
  output_truncated: boolean;
  started_at: string;
  finished_at: string | null;
}

export interface FlakyFileView {
  path: string;
  /** How many runs it took in this build (the last one passed). */
  attempts: number;
  /** In how many of the suite's last `builds` builds (this one included) it was flaky, and in how many it ran. */
  flaked: number;
  ran: number;
  builds: number;
}

/** How much of a hook's output the views show: its end, where a failure says what went wrong. */
export const HOOK_OUTPUT_TAIL_CHARS = 4_000;

export interface HookView {
  name: string;
  /** 1..N; null for post_build, which runs once a build. */
  worker: number | null;
  command: string;
  status: HookStatus;
  exit_code: number | null;
  duration_ms: number | null;
  /** The last HOOK_OUTPUT_TAIL_CHARS characters of what it printed (secrets masked). */
  output_tail: string;
  /** Whether `output_tail` is only the end of the stored output. */
  output_truncated: boolean;
  /** What Sluice adds: how package setup was chosen, why a hook was skipped or killed. */
  detail: string | null;
  runner: string | null;
  started_at: string;
  finished_at: string | null;
}

export interface WorkerSetupView {
  worker: number;
  runner: string | null;
  ready_at: string | null;
  failure: string | null;
  notes: string[];
}

export interface ArtifactView {
  path: string;
  worker: number;
  size: number;
  url: string;
}

/** How many test files (with their output) one report page shows. */
export const REPORT_FILES_PER_PAGE = 100;

/**
 * The report page's view: the session as SessionView shows it (counts and everything else for
 * the whole session), but `tests` holds only one page of its files, with their output.
 */
export interface ReportView extends SessionView {
  /** This page, 1-based; past the last page, `tests` is empty. */
  page: number;
  /** How many pages the session's files fill; at least 1. */
  pages: number;
  per_page: number;
  /** How many test files the session has, on all pages. */
  total_files: number;
}

/** Every count key present, so clients never meet a missing one on a queued session. */
const fullCounts = (counts: Record<string, number> | null): Counts => ({ ...emptyCounts(), ...(counts ?? {}) });

/** A session as the builds list shows it: who, what, where, how it went, how long it took. */
export function sessionListView(r: SessionListRow, config: Config) {
  const t = r.timing;
  const started = t.queue_first_allowed_at;
  return {
    session: r.id,
    parent_session: r.parent_id,
    repository: { id: r.repo_id, name: r.repo_name, org_name: r.org_name },
    branch: r.branch,
    commit_id: r.commit_id,
    status: r.status,
    reason: r.reason,
    profile_name: r.profile_name,
    counts: fullCounts(r.counts),
    committers: r.committers,
    stopped_by: r.stopped_by,
    received_at: r.received_at,
    // From its turn to its end; null while it has not ended, or if it never ran.
    duration_ms: started !== undefined && t.done !== undefined ? Math.max(0, Math.round((t.done - started) * 1000)) : null,
    url: reportUrl(config.baseUrl, r.id, r.report_token),
  };
}

/** The session with all its test files, without output (the admin API); undefined if there is no such session. */
export async function loadSessionView(db: Db, config: Config, id: number): Promise<SessionView | undefined> {
  const row = await findSessionWithRepo(db, id);
  if (!row) return undefined;
  return buildSessionView(db, config, row, await listTests(db, id), false);
}

/** Page `page` (1-based) of a session's report; undefined if there is no such session. */
export async function loadReportView(db: Db, config: Config, id: number, page: number): Promise<ReportView | undefined> {
  const row = await findSessionWithRepo(db, id);
  if (!row) return undefined;
  const perPage = REPORT_FILES_PER_PAGE;
  const totalFiles = await countTests(db, id);
  const tests = await listTestsPage(db, id, { limit: perPage, offset: (page - 1) * perPage });
  const view = await buildSessionView(db, config, row, tests, true);
  return { ...view, page, pages: Math.max(1, Math.ceil(totalFiles / perPage)), per_page: perPage, total_files: totalFiles };
}

async function buildSessionView(db: Db, config: Config, row: SessionWithRepo, tests: TestRow[], withOutput: boolean): Promise<SessionView> {
  const id = row.id;
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
    ...(await loadSetupViews(db, config, id, row.report_token)),
  };
  if (row.parent_id !== null) view.parent_session = row.parent_id;
  if (row.stopped_by !== null) view.stopped_by = row.stopped_by;
  if (row.image !== null) view.image = { reference: row.image, digest: row.image_digest };
  if (row.changeset) view.changeset = row.changeset;
  const postBuild = await listPostBuildSteps(db, id);
  if (postBuild.length > 0) view.post_build_steps = postBuild;
  const statuses = await listSessionStatusAttempts(db, id);
  if (statuses.length > 0) view.commit_statuses = statuses;
  return view;
}

/** The last `chars` characters of `text`, never starting with half a surrogate pair. */
function tail(text: string, chars: number): string {
  if (text.length <= chars) return text;
  const end = text.slice(-chars);
  return /^[\udc00-\udfff]/.test(end) ? end.slice(1) : end;
}

/** A build's hooks, workers' setup, artifacts, batches and flaky files, as the session's views show them. */
export async function loadSetupViews(
  db: Db,
  config: Config,
  id: number,
  reportToken: string,
): Promise<Pick<SessionView, 'hooks' | 'worker_setup' | 'artifacts' | 'batches' | 'flaky_files'>> {
  const [hooks, workers, artifacts, batches, flaky] = await Promise.all([
    listSessionHooks(db, id),
    listSessionWorkers(db, id),
    loadArtifactViews(db, config, id, reportToken),
    listBatchSummaries(db, id, HOOK_OUTPUT_TAIL_CHARS),
    listFlakyFiles(db, id, FLAKY_WINDOW),
  ]);
  return {
    hooks: hooks.map((h) => ({
      name: h.name,
      worker: h.worker,
      command: h.command,
      status: h.status,
      exit_code: h.exit_code,
      duration_ms: h.duration_ms,
      output_tail: tail(h.output, HOOK_OUTPUT_TAIL_CHARS),
      output_truncated: h.output.length > HOOK_OUTPUT_TAIL_CHARS,
      detail: h.detail,
      runner: h.runner,
      started_at: h.started_at.toISOString(),
      finished_at: h.finished_at?.toISOString() ?? null,
    })),
    worker_setup: workers.map((w) => ({ worker: w.worker, runner: w.runner, ready_at: w.ready_at?.toISOString() ?? null, failure: w.failure, notes: w.notes })),
    artifacts,
    batches: batches.map((b) => ({
      id: b.id,
      worker: b.lane + 1,
      runner: b.runner,
      files: b.files,
      status: b.status,
      exit_code: b.exit_code,
      duration_ms: b.duration_ms,
      note: b.note,
      output_tail: b.output_tail,
      output_truncated: b.output_length > HOOK_OUTPUT_TAIL_CHARS,
      started_at: b.started_at.toISOString(),
      finished_at: b.finished_at?.toISOString() ?? null,
    })),
    flaky_files: flaky,
  };
}

/** The files a build kept, each with its download URL (opened by the report's token). */
export async function loadArtifactViews(db: Db, config: Config, id: number, reportToken: string): Promise<ArtifactView[]> {
  const rows = await listSessionArtifacts(db, id);
  return rows.map((a) => ({ path: a.path, worker: a.worker, size: a.size, url: artifactUrl(config.baseUrl, id, a.id, reportToken) }));
}

export interface CiEventView {
  guid: string;
  received_at: string;
  provider: string;
  decision: string;
  reason: string | null;
  branch: string | null;
  /** False while the trigger's records are on their way (accepted, not yet written). */
  recorded: boolean;
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
    recorded: true,
    sessions: sessions.map((s) => ({
      session: s.id,
      status: s.status,
      url: reportUrl(config.baseUrl, s.id, s.report_token),
      commit_id: s.commit_id,
      counts: fullCounts(s.counts),
    })),
  };
}

/**
 * Builds (sessions), as the JSON API, the web pages and the report decide about them and show
 * them: the views of a session, of its report page and of a trigger (ci_event), one place so
 * the report, its JSON twin, the admin API and the outgoing `stop` payload agree (spec §2); the
 * builds list; a build page's reads; asking a session to stop; and a rebuild. (The application
 * layer: each operation validates, checks, calls the data layer and returns plain results or
 * refusals, app/errors.ts.)
 *
 * A rebuild is the session's trigger again, at the commit it built, forced, in the image
 * digests it ran (core/rebuild.ts), decided as any trigger is (the repository's rules still
 * apply). Unlike a trigger, it answers with its session, so it records the session first
 * (db/intake.ts) and then hands it to its suite, which finds it recorded; if the orchestrator
 * does not take it, the records go again and it is refused as unavailable. The suite sends
 * its `received`.
 *
 * A stop is refused as a conflict once the session has ended, as unavailable when stopping is
 * not wired here or the session's workflow (or its suite, while it is queued) cannot be reached
 * for a while.
 */
import { mapRunCost, type MapRunCost } from '../db/dependencyMaps';
import type { AffectedSummary } from '../core/affected';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Config } from '../config';
import { decide, stoppedBy, visibleOrgs, type Principal } from '../core/access';
import { emptyCounts } from '../core/counts';
import { intakesOf, planDelivery } from '../core/intake';
import { rebuildTrigger } from '../core/rebuild';
import { reportUrl } from '../core/reportUrl';
import { hasEnded, SESSION_STATUSES, type Counts, type TriggerEvent } from '../core/types';
import { sameSecret } from '../crypto/compare';
import { findArtifact, listSessionArtifacts, type ArtifactRow } from '../db/artifacts';
import { orgOfSession } from '../db/orgOf';
import { listSessionStatusAttempts, type StatusAttemptRow } from '../db/commitStatuses';
import { FLAKY_WINDOW, listFlakyFiles } from '../db/flaky';
import { forgetTrigger, recordIntakes } from '../db/intake';
import { listPostBuildSteps, type PostBuildStepRow } from '../db/postBuildSteps';
import { listSessionHooks, type HookStatus } from '../db/sessionHooks';
import {
  countTests,
  findCiEvent,
  findSessionWithRepo,
  imageDigestsOfBuild,
  listEventSessions,
  listFailedOutputs,
  listPlanParts,
  listSessions,
  listTests,
  listTestsPage,
  reportTokenOf,
  suiteAndRepoOfSession,
  type SessionListRow,
  type SessionWithRepo,
  type TestRow,
} from '../db/sessions';
import { listSessionWorkers, setupTiming } from '../db/sessionWorkers';
import { listBatchSummaries, type BatchStatus } from '../db/testBatches';
import { countCases, listCases, listFailingCases, listJUnitFiles, type CaseCounts, type CaseRow, type FailingCaseRow, type JUnitFileRow } from '../db/testCases';
import { listOpenFiles } from '../db/testQueue';
import { findTriggerTargetById } from '../db/triggerKnowledge';
import type { Db } from '../db/transaction';
import type { AppDeps } from './deps';
import { AppError, conflict, notFound, validate } from './errors';
import { loadOrg } from './orgs';
import { loadRepo } from './repos';

// ---- The builds list ----

/** A filter of the builds list: `GET /api/v1/sessions`' query, the home page's filter form. */
export const SessionList = z.object({
  // An organization by id or name; a repository by id or `<org>/<name>`.
  org: z.string().trim().min(1).max(255).optional(),
  repo: z.string().trim().min(1).max(600).optional(),
  branch: z.string().min(1).max(1024).optional(),
  status: z.enum(SESSION_STATUSES).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  before: z.coerce.number().int().min(1).optional(),
});

export type SessionListFilter = z.output<typeof SessionList>;

/**
 * One page of the builds list, newest first, of what `viewer` may see: an organization or
 * repository the filter names that does not exist is not found. `before` (the last `session`
 * of a page) gives the next, older page.
 */
export async function listBuilds({ pool, config }: Pick<AppDeps, 'pool' | 'config'>, filter: SessionListFilter, viewer: Principal): Promise<SessionListView[]> {
  const orgId = filter.org === undefined ? undefined : (await loadOrg(pool, filter.org)).id;
  const repoId = filter.repo === undefined ? undefined : (await loadRepo(pool, filter.repo)).id;
  const rows = await listSessions(pool, { orgId, orgIds: visibleOrgs(viewer), repoId, branch: filter.branch, status: filter.status, before: filter.before, limit: filter.limit });
  return rows.map((r) => sessionListView(r, config));
}

// ---- One build ----

/** The session with all its test files, without output (that can be large, and the report page has it), or not found. */
export async function showSession({ pool, config }: Pick<AppDeps, 'pool' | 'config'>, id: number): Promise<SessionView> {
  const view = await loadSessionView(pool, config, id);
  if (!view) throw notFound('session');
  return view;
}

/** The files a build kept, each with its download URL, or not found. */
export async function sessionArtifacts({ pool, config }: Pick<AppDeps, 'pool' | 'config'>, id: number): Promise<ArtifactView[]> {
  const token = await reportTokenOf(pool, id);
  if (token === undefined) throw notFound('session');
  return loadArtifactViews(pool, config, id, token);
}

// ---- A build's test cases ----

/** Cases a page holds at most. */
export const MAX_CASES_PER_PAGE = 500;

export const CaseQuery = z.object({
  status: z.enum(['failing', 'failed', 'error', 'passed', 'skipped']).optional().describe('`failing`: failed and error'),
  q: z.string().trim().max(200).optional().describe('words of the name (suite › test) or classname, any case'),
  test_file: z.string().max(4096).optional().describe('the cases of this test file only'),
  page: z.coerce.number().int().min(1).max(100_000).default(1),
  per_page: z.coerce.number().int().min(1).max(MAX_CASES_PER_PAGE).default(100),
});

export interface CasePage {
  total: number;
  page: number;
  per_page: number;
  cases: CaseView[];
}

/** A test case as the API and the build page show it. */
export interface CaseView {
  id: number;
  worker: number;
  test_file: string | null;
  /** The report file a junit_pattern collected it from; absent for a run's own reports. */
  report?: string;
  classname: string;
  name: string;
  status: CaseRow['status'];
  duration_ms: number | null;
  message: string | null;
  output: string | null;
  /** Where the failure is, when the report or its stack trace says. */
  failure: { file: string; line: number } | null;
  /** Failed, then passed when its file ran again. */
  flaky: boolean;
  /** A failure of a test muted in its suite: it did not fail its file (app/mutes.ts). */
  muted: boolean;
}

export const caseView = (c: CaseRow): CaseView => ({
  id: c.id,
  worker: c.worker,
  test_file: c.test_file,
  ...(c.file === '' ? {} : { report: c.file }),
  classname: c.classname,
  name: c.name,
  status: c.status,
  duration_ms: c.time === null ? null : Math.round(c.time * 1000),
  message: c.message,
  output: c.output,
  failure: c.failure_file === null || c.failure_line === null ? null : { file: c.failure_file, line: c.failure_line },
  flaky: c.flaky,
  muted: c.muted,
});

/** A page of a session's test cases, failing first, filtered by status, name or file; not found when there is no such session. */
export async function sessionCases({ pool }: Pick<AppDeps, 'pool'>, id: number, query: unknown): Promise<CasePage> {
  const { status, q, test_file, page, per_page } = validate(CaseQuery, query, 'query');
  const [exists, found] = await Promise.all([reportTokenOf(pool, id), listCases(pool, id, { status, q, testFile: test_file, limit: per_page, offset: (page - 1) * per_page })]);
  if (exists === undefined) throw notFound('session');
  return { total: found.total, page, per_page, cases: found.cases.map(caseView) };
}

/** Failed files whose output the build page shows first, and how much of each (the report has it all). */
const FAILURES_SHOWN = 20;
const FAILURE_TAIL_CHARS = 4_000;

/**
 * A build as its page shows it: the session, the files of its list not done yet (while it
 * runs), a plan's parts, the failures' output, whether a rebuild would pin image digests (once
 * it ended: it or a plan's part ran in an image); undefined if there is none.
 */
export async function loadBuild({ pool, config }: Pick<AppDeps, 'pool' | 'config'>, id: number) {
  const view = await loadSessionView(pool, config, id);
  if (!view) return undefined;
  const [open, parts, failures, setup, pinned, suite] = await Promise.all([
    hasEnded(view.status) ? [] : listOpenFiles(pool, id),
    listPlanParts(pool, id),
    view.counts.failed + view.counts.error > 0 ? listFailedOutputs(pool, id, FAILURES_SHOWN, FAILURE_TAIL_CHARS) : [],
    // While it runs, the session's timing keys are written at its end: its workers' say how far setup went.
    hasEnded(view.status) ? {} : setupTiming(pool, id),
    hasEnded(view.status) ? imageDigestsOfBuild(pool, id) : {},
    suiteAndRepoOfSession(pool, id),
  ]);
  // Its suite's page: the build among its neighbours.
  const suitePath = suite ? `/repos/${suite.repoId}/suites/${suite.suiteId}` : null;
  return { view, open, parts, failures: await explainedFailures(pool, id, failures), setup, pinsImages: Object.keys(pinned).length > 0, suitePath };
}

/**
 * Failed files whose output says nothing (a framework that writes its report to a file and
 * nothing to the console: mocha's xunit reporter) get their failing cases' messages and stack
 * traces instead, where the reports had them.
 */
async function explainedFailures<F extends { path: string; output: string }>(db: Db, id: number, failures: F[]): Promise<F[]> {
  if (!failures.some((f) => f.output.trim() === '')) return failures;
  const { cases } = await listCases(db, id, { status: 'failing', limit: 200, offset: 0 });
  return failures.map((f) => {
    if (f.output.trim() !== '') return f;
    const text = cases.filter((c) => c.test_file === f.path).map(caseText).join('\n\n');
    return { ...f, output: text.length > FAILURE_TAIL_CHARS ? text.slice(0, FAILURE_TAIL_CHARS) : text };
  });
}

/** A failing case as text: its name, where it failed, its message and stack trace. */
function caseText(c: CaseRow): string {
  const where = c.failure_file === null ? '' : ` (${c.failure_file}:${c.failure_line})`;
  return [`${c.classname ? `${c.classname} › ` : ''}${c.name}${where}`, c.message, c.output].filter((t) => t).join('\n');
}

/** A build as its page shows it (loadBuild). */
export type BuildPageData = NonNullable<Awaited<ReturnType<typeof loadBuild>>>;

// ---- Stop ----

export const StopBody = z.strictObject({
  // The handle or e-mail address of who stopped it (spec §2 `stopped_by`): a person's own
  // token stops as that person, whatever this says; the admin token must name someone.
  stopped_by: z.string().trim().min(1).max(200).optional(),
}).meta({ examples: [{ stopped_by: 'dev@example.com' }] });

const STOP_RETRY_MS = 10_000;

/**
 * Asks a session to stop, queued or building, as `stoppedBy`; resolves with the session as it
 * stood when the stop was taken (its `stop` event says when it is done).
 */
export async function requestStop(deps: Pick<AppDeps, 'pool' | 'config' | 'stop'>, id: number, stoppedBy: string): Promise<SessionView> {
  if (!deps.stop) throw new AppError('unavailable', 'stopping builds is not available here');
  // A queued session has no workflow until its turn: its suite is asked then (temporal/stop.ts).
  // A plan's part is not in the queue: its parent started it, and it may not be running yet.
  const row = await findSessionWithRepo(deps.pool, id);
  if (!row) throw notFound('session');
  const target = { sessionId: id, suiteId: row.parent_id === null ? row.suite_id : null };
  const deadline = Date.now() + STOP_RETRY_MS;
  for (;;) {
    const view = await loadSessionView(deps.pool, deps.config, id);
    if (!view) throw notFound('session');
    if (hasEnded(view.status)) throw conflict('session', `session ${id} already ended (${view.status})`);
    if (await deps.stop(target, stoppedBy)) return view;
    if (Date.now() > deadline) throw new AppError('unavailable', `session ${id} could not be reached; try again`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * A stop from a body of POST /sessions/:id/stop by `principal`: a person's own token stops as
 * that person, whatever the body says; the admin token must name someone (`stopped_by`).
 */
export async function stopAsked(deps: Pick<AppDeps, 'pool' | 'config' | 'stop'>, id: number, input: unknown, principal: Principal): Promise<SessionView> {
  const { stopped_by } = validate(StopBody, input ?? {});
  const who = stoppedBy(principal) ?? stopped_by;
  if (who === undefined) throw new AppError('invalid', 'say who stops it: the admin token is nobody', 'stopped_by');
  return requestStop(deps, id, who);
}

// ---- Rebuild ----

export const RebuildBody = z.strictObject({
  // Resolve each image's tag to a digest again (the default runs the digests the session ran).
  resolve_images: z.boolean().optional(),
  /** Every test file, where the profile would run only those the change can affect (`affected:`). */
  full: z.boolean().optional(),
}).meta({ examples: [{}, { resolve_images: true }, { full: true }] });

export interface Rebuilt {
  session: number;
  guid: string;
}

export interface RebuildOptions {
  /** Resolve each image's tag to a digest again, instead of running the digests the session ran. */
  resolveImages?: boolean;
  /** Run every test file, over the profile's selection of affected ones. */
  full?: boolean;
}

/**
 * Builds a session's trigger again (see the top of this file); `log` hears why the orchestrator
 * did not take it. A plan's part or a session still running is a conflict; a trigger the
 * repository's rules no longer build is `not rebuilt`.
 */
export async function rebuildSession(deps: Pick<AppDeps, 'pool' | 'knowledge' | 'enqueue' | 'announce'>, sessionId: number, log: (err: unknown) => void, options: RebuildOptions = {}): Promise<Rebuilt> {
  const row = await findSessionWithRepo(deps.pool, sessionId);
  if (!row) throw notFound('session');
  if (row.parent_id !== null) {
    throw conflict('session', `session ${sessionId} is one profile of session ${row.parent_id}'s plan: rebuild session ${row.parent_id}`);
  }
  if (!hasEnded(row.status)) throw conflict('session', `session ${sessionId} has not ended (${row.status}); stop it first`);
  const target = await findTriggerTargetById(deps.pool, row.repo_id);
  if (!target) throw notFound('repository');
  const { repo } = target;
  const original = row.trigger;
  const digests = options.resolveImages ? {} : await imageDigestsOfBuild(deps.pool, sessionId);
  const event = rebuildTrigger(original, row.commit_id, sessionId, digests, options.full === true);
  const branches = await deps.knowledge.branches(repo.id, [event.branch]);
  const acceptedAt = Date.now();
  const guid = randomUUID();
  const suites = new Map(target.suites.map((s) => [s.branch, s]));
  const plan = planDelivery(
    { guid, provider: original.provider, acceptedAt, events: [event] },
    {
      repo: { id: repo.id, pullRequestOnly: repo.pull_request_only, branchBlacklist: repo.branch_blacklist },
      suiteFor: (branch) => suites.get(branch),
      branchState: (name) => branches.get(name) ?? null,
    },
  );
  const [carried] = intakesOf(plan, repo.id, acceptedAt).suites;
  if (plan.decision !== 'build' || !carried) {
    const why = plan.decision === 'drop' ? plan.reasons.join('; ') : plan.record.reason;
    throw new AppError('not rebuilt', `the repository's rules no longer build this trigger: ${why ?? 'no reason given'}`, 'session');
  }
  const ids = await recordIntakes(deps.pool, [carried.intake]);
  const session = ids.get(carried.session.key);
  if (session === undefined) throw notFound('suite');
  try {
    await deps.enqueue({
      suiteId: carried.session.suiteId,
      intake: carried.intake,
      queuePosition: carried.session.queuePosition,
      repoLabel: `${repo.org_name}/${repo.name}`,
      branch: carried.session.branch,
    });
  } catch (err) {
    log(err);
    await forgetTrigger(deps.pool, guid);
    throw new AppError('unavailable', 'could not queue the build; nothing was accepted, try again', undefined, 5);
  }
  deps.announce?.(carried.session.suiteId, [session]);
  return { session, guid };
}

/** A rebuild from a body of POST /sessions/:id/rebuild: the new session, its trigger's guid and its report's URL. */
export async function rebuildAsked(deps: Pick<AppDeps, 'pool' | 'config' | 'knowledge' | 'enqueue' | 'announce'>, sessionId: number, input: unknown, log: (err: unknown) => void): Promise<Rebuilt & { url: string }> {
  const { resolve_images, full } = validate(RebuildBody, input ?? {});
  const { session, guid } = await rebuildSession(deps, sessionId, log, { resolveImages: resolve_images, full });
  const view = await loadSessionView(deps.pool, deps.config, session);
  return { session, guid, url: view!.url };
}

// ---- The views ----

/** A session as the API, the report and the `stop` payload show it: what it built as its row says, and more. */
export interface SessionView extends Pick<SessionWithRepo, 'guid' | 'profile_name' | 'status' | 'reason' | 'branch' | 'ref' | 'head' | 'force' | 'commit_id' | 'committers' | 'workers'> {
  session: number;
  url: string;
  parent_session?: number;
  counts: Counts;
  stopped_by?: string;
  /** The image its hooks and tests ran in, as read and as resolved when its build started; absent: none. */
  image?: { reference: string; digest: string | null };
  /** For a profile with `affected:`: what ran and why (core/affected.ts AffectedSummary); absent: every file ran. */
  affected?: AffectedSummary;
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

export type SessionListView = ReturnType<typeof sessionListView>;

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

/**
 * Whether a request opens a session's report: the report's own token (the payloads' `url`
 * carries it), or a principal that may see its build (a viewer's Bearer token, the admin
 * token), asked for only when the token does not open it.
 */
export async function opensReport(db: Db, id: number, token: unknown, principal: () => Promise<Principal | null | undefined>): Promise<boolean> {
  const expected = await reportTokenOf(db, id);
  if (typeof token === 'string' && expected !== undefined && sameSecret(token, expected)) return true;
  const who = await principal();
  const org = who ? await orgOfSession(db, String(id)) : undefined;
  return org !== undefined && decide(who!, 'viewer', org.id, false).allowed;
}

/** One file a session kept, as its report links it; undefined when that session kept no such file. */
export const reportArtifact = (db: Db, sessionId: number, artifactId: number): Promise<ArtifactRow | undefined> => findArtifact(db, sessionId, artifactId);

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
  if (row.affected !== null) view.affected = row.affected.mode === 'map' ? { ...row.affected, ...withCost(await mapRunCost(db, id)) } : row.affected;
  if (row.changeset) view.changeset = row.changeset;
  const postBuild = await listPostBuildSteps(db, id);
  if (postBuild.length > 0) view.post_build_steps = postBuild;
  const statuses = await listSessionStatusAttempts(db, id);
  if (statuses.length > 0) view.commit_statuses = statuses;
  return view;
}

/** A mapping run's cost, when its files have run. */
const withCost = (cost: MapRunCost | null) => (cost ? { cost } : {});

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

/** Where one artifact downloads: under its session's report, opened by the same token. */
function artifactUrl(baseUrl: string, session: number, artifact: number, token: string): string {
  return `${baseUrl}/1/reports/${session}/artifacts/${artifact}?token=${encodeURIComponent(token)}`;
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

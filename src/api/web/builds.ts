/**
 * The builds list (the home page) and a build's page: live while it runs (server-sent events,
 * assets/build.js), with Stop while it runs and Rebuild once it has ended (in the image digests
 * it ran, or, with a second button, resolving its image's tag again). What they read and do is
 * the application layer's (app/builds.ts); here is what the pages show of it.
 */
import { describeSelection } from '../../core/affected';
import { decide, stoppedBy } from '../../core/access';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasEnded, SESSION_STATUSES } from '../../core/types';
import type { ApiDeps } from '../deps';
import { parseId } from '../../app/errors';
import { asHttpError, HttpError } from '../http';
import { listBuilds, loadBuild, rebuildSession, requestStop, sessionCases, SessionList, type BuildPageData, type CasePage, type SessionListView, type SessionView } from '../../app/builds';
import { sessionWorkflowLink } from '../../temporal/uiLink';
import { muteFromBuild, mutedNowFor } from '../../app/mutes';
import { ansiHtml } from './ansi';
import { formatDuration, formatTime, formFields, notFoundPage, page, type WebScope } from './pages';
import { formatBytes } from '../reportPage';
import type { SignedIn } from './signIn';
import { buildTimeline, svgMarkup } from './timeline';

/** How often an open build page's stream reads the build. */
const LIVE_POLL_MS = 1_000;

/**
 * How long the page keeps following a build after it ended: a post_build hook starts once the
 * result is recorded, and the page should show it start and end without a reload.
 */
const FOLLOW_AFTER_END_MS = 60_000;

/** Hex digits of a digest the page shows; the whole one is in its tooltip. */
const SHORT_DIGEST = 12;

/**
 * The image a build ran in, as the page shows it: the reference, its digest cut short
 * (`sha256:` and 12 hex digits, as `docker images` does) and whole (`<reference>@<digest>`,
 * what a pull takes); null: none, or none yet (it is recorded when its build starts).
 */
function imageFacts(image: SessionView['image']) {
  if (!image) return null;
  const { reference, digest } = image;
  if (digest === null) return { reference, digest: '', short: '', full: reference };
  return { reference, digest, short: digest.slice(0, digest.indexOf(':') + 1 + SHORT_DIGEST), full: `${reference}@${digest}` };
}

/** A file left out as not affected: skipped by no runner, it takes no place on the timeline. */
const notRun = (t: { status: string; runner: string | null }) => t.status === 'skipped' && t.runner === null;

/** Why a file ran, or that it did not (a build that selected), and why it ran first; '' otherwise. */
function whyRan(affected: SessionView['affected'], t: { path: string; status: string; ran_first: string | null }): string {
  const selected = affected?.mode === 'selected' ? (affected.reasons[t.path] ?? (t.status === 'skipped' ? 'not affected' : '')) : '';
  const first = t.ran_first ? `ran first: ${t.ran_first}` : '';
  return [selected, first].filter(Boolean).join('; ');
}

/** Files named in the sentence about the files that ran first, at most. */
const FIRST_NAMED = 5;

/** The files that ran ahead of the usual order as the likeliest to fail, in a sentence; null: none did. */
function firstSentence(files: ReadonlyArray<{ path: string; ran_first: string | null }>): string | null {
  const first = files.filter((f) => f.ran_first !== null);
  if (first.length === 0) return null;
  const named = first.slice(0, FIRST_NAMED).map((f) => `${f.path} (${f.ran_first})`);
  const more = first.length > FIRST_NAMED ? ` and ${first.length - FIRST_NAMED} more` : '';
  return `Ran first, as the likeliest to fail: ${named.join('; ')}${more}.`;
}

/** What the build page shows that changes while it runs, as the page renders it and its stream sends it. */
export function liveView(
  { view, open, parts, failures, setup, pinsImages }: BuildPageData,
  canStopHere: boolean,
  config: ApiDeps['config'],
  workflowIds: ApiDeps['workflowIds'],
) {
  const c = view.counts;
  const toGo = c.notstarted + c.started;
  const ended = hasEnded(view.status);
  const hookRunning = view.hooks.some((h) => h.status === 'running');
  const endedAt = view.timing.done !== undefined ? view.timing.done * 1000 : Date.parse(view.updated_at);
  const image = imageFacts(view.image);
  return {
    session: view.session,
    status: view.status,
    ended,
    // Nothing more to follow: ended, no hook running, and not just now (a post_build hook may be about to start).
    settled: ended && !hookRunning && Date.now() - endedAt > FOLLOW_AFTER_END_MS,
    commit: view.commit_id ? view.commit_id.slice(0, 10) : 'commit not known yet',
    reason: view.reason,
    canStop: !ended && canStopHere,
    canRebuild: ended && view.parent_session === undefined,
    // A build that ran only the affected files: the same commit with every file, in one click.
    canRebuildFull: ended && view.parent_session === undefined && view.affected?.mode === 'selected',
    selection: view.affected ? describeSelection(view.affected) : null,
    firstFailures: firstSentence([...view.tests, ...open]),
    image,
    // Rebuild runs the digests the build ran; this one resolves the tags again (a `node:22` that moved on).
    canRebuildResolving: ended && view.parent_session === undefined && pinsImages,
    // A queued session has no workflow yet (the suite starts it at its turn).
    workflowUrl: view.status === 'queued' ? null : sessionWorkflowLink(config, workflowIds, view.session),
    countsText: `${c.passed} passed, ${c.failed} failed, ${c.error} errors${c.skipped > 0 ? `, ${c.skipped} skipped` : ''}${toGo > 0 ? `, ${toGo} to go` : ''}`,
    // Each file as it starts and ends: the ended ones with their durations, the others as the list has them.
    tests: [
      ...view.tests.map((t) => ({
        path: t.path,
        status: t.status,
        duration: notRun(t) ? '' : formatDuration(t.duration_ms),
        runner: t.runner ?? '',
        // Which batch ran it, how many runs it took, and whether it passed only on a retry.
        batch: t.batch === null ? '' : `#${t.batch}`,
        runs: t.attempts > 1 ? String(t.attempts) : '',
        flaky: t.flaky,
        why: whyRan(view.affected, t),
      })),
      ...open.map((f) => ({ path: f.path, status: f.status, duration: formatDuration(null), runner: f.runner ?? '', batch: '', runs: '', flaky: false, why: whyRan(view.affected, f) })),
    ].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)),
    parts: parts.map((p) => ({ session: p.id, profile: p.profile_name, status: p.status })),
    failures,
    hooks: view.hooks.map((h) => ({
      // Which run this is, so the page keeps its output open across updates.
      key: `${h.name}/${h.worker ?? 'build'}/${h.started_at}`,
      name: h.name,
      where: h.worker === null ? 'the build' : `worker ${h.worker}`,
      status: h.status,
      exitCode: h.exit_code === null ? '' : String(h.exit_code),
      duration: h.status === 'running' ? 'running' : formatDuration(h.duration_ms),
      command: h.command,
      detail: h.detail ?? '',
      output: h.output_tail,
      outputLabel: h.output_truncated ? 'End of the output' : 'Output',
    })),
    workers: view.worker_setup.map((w) => ({
      worker: w.worker,
      runner: w.runner ?? '',
      // As a status the page colours: ready, failed, or still setting up.
      state: w.failure !== null ? 'failed' : w.ready_at !== null ? 'ready' : 'setting up',
      stateClass: w.failure !== null ? 'failed' : w.ready_at !== null ? 'passed' : 'running',
      failure: w.failure ?? '',
      notes: w.notes,
    })),
    artifacts: view.artifacts.map((a) => {
      const u = new URL(a.url);
      return { path: a.path, worker: a.worker, size: formatBytes(a.size), href: `${u.pathname}${u.search}` };
    }),
    // The build as a picture, and its numbers (timeline.ts).
    timeline: buildTimeline({
      session: view.session,
      timing: { ...setup, ...view.timing },
      running: !ended || hookRunning,
      queued: view.status === 'queued',
      now: Date.now(),
      hooks: view.hooks,
      batches: view.batches,
      tests: view.tests.filter((t) => !notRun(t)),
      open,
      workers: view.worker_setup,
    }),
    batches: view.batches.map((b) => ({
      id: b.id,
      worker: b.worker,
      files: b.files,
      status: b.status,
      exitCode: b.exit_code === null ? '' : String(b.exit_code),
      duration: b.status === 'running' ? 'running' : formatDuration(b.duration_ms),
      note: b.note ?? '',
    })),
    flaky: view.flaky_files.map((f) => ({
      path: f.path,
      runs: `passed on run ${f.attempts}`,
      history: `flaky in ${f.flaked} of its ${f.ran} run${f.ran === 1 ? '' : 's'} in the suite's last ${f.builds} build${f.builds === 1 ? '' : 's'}`,
    })),
  };
}


/** The build page's list of test cases: its filter (`cases`, `q`) and page. */
type CasesQuery = { cases?: string; q?: string; cases_page?: string };
const CASE_STATUSES = ['failing', 'failed', 'error', 'passed', 'skipped'] as const;
const CASES_PER_PAGE = 50;

export function registerBuildPages(web: FastifyInstance, { deps, csrf, requireUser }: WebScope): void {
  const { config } = deps;

  web.get<{ Querystring: Record<string, string | undefined> }>('/', async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    // Empty fields of the filter form mean "any".
    const query = Object.fromEntries(Object.entries(request.query).filter(([, v]) => v !== undefined && v !== ''));
    const filters = { org: query.org, repo: query.repo, branch: query.branch, status: query.status };
    const base = { title: 'Builds', section: 'builds' as const, user, statuses: SESSION_STATUSES, filters, filtered: Object.values(filters).some(Boolean) };
    const q = SessionList.safeParse(query);
    if (!q.success) {
      const issue = q.error.issues[0];
      return page(reply, 'builds', { ...base, sessions: [], older: null, error: `${String(issue?.path[0] ?? 'filter')}: ${issue?.message ?? 'invalid'}` }, 400);
    }
    let views: SessionListView[];
    try {
      views = await listBuilds(deps, q.data, user);
    } catch (caught) {
      const err = asHttpError(caught);
      if (!err) throw caught;
      return page(reply, 'builds', { ...base, sessions: [], older: null, error: err.message }, err.statusCode);
    }
    const sessions = views.map((view) => ({
      ...view,
      duration: formatDuration(view.duration_ms),
      received_iso: view.received_at.toISOString(),
      received_text: formatTime(view.received_at),
      who: view.stopped_by ? `stopped by ${view.stopped_by}` : (view.committers[0] ?? ''),
    }));
    const older =
      views.length === q.data.limit
        ? `/?${new URLSearchParams(
            Object.entries({ ...filters, before: String(views.at(-1)!.session) }).filter((e): e is [string, string] => e[1] !== undefined),
          ).toString()}`
        : null;
    return page(reply, 'builds', { ...base, sessions, older, error: null });
  });

  /**
   * The build's test cases as its page lists them: a page of CASES_PER_PAGE, failing first,
   * filtered by the form's status and words (`?cases=&q=&cases_page=`); a filter that is not
   * one is dropped rather than refused (the rest of the page is still worth showing).
   */
  const casesOf = async (id: number, query: CasesQuery): Promise<CasePage & { status: string; q: string; pages: number }> => {
    const status = CASE_STATUSES.includes(query.cases as (typeof CASE_STATUSES)[number]) ? query.cases : undefined;
    const q = typeof query.q === 'string' ? query.q.trim().slice(0, 200) : '';
    const pageNo = /^[1-9][0-9]{0,4}$/.test(query.cases_page ?? '') ? Number(query.cases_page) : 1;
    const found = await sessionCases(deps, id, { ...(status ? { status } : {}), ...(q ? { q } : {}), page: pageNo, per_page: CASES_PER_PAGE });
    return { ...found, status: status ?? '', q, pages: Math.max(1, Math.ceil(found.total / CASES_PER_PAGE)) };
  };

  /** A build: status, counts, files, timeline; Stop while it runs, Rebuild once it ended; live (assets/build.js). */
  const buildPage = async (request: FastifyRequest, reply: FastifyReply, user: SignedIn, id: number, error: string | null, status = 200) => {
    const build = await loadBuild(deps, id);
    if (!build) return notFoundPage(reply, user, `build #${id}`);
    const live = liveView(build, Boolean(deps.stop), config, deps.workflowIds);
    // Stop and Rebuild are a maintainer's: a viewer does not get the buttons (the door would refuse them).
    const mayAct = decide(user, 'maintainer', request.accessOrg?.id ?? null, true).allowed;
    const [cases, mutedNow] = await Promise.all([casesOf(id, request.query as CasesQuery), mutedNowFor(deps.pool, id)]);
    return page(reply, 'build', { title: `Build #${id}`, section: 'builds', user, session: build.view, live, mayAct, timelineSvg: svgMarkup(live.timeline.picture), error, cases, mutedNow, suitePath: build.suitePath, ansi: ansiHtml }, status);
  };

  // The build as it changes, for the open page: read every LIVE_POLL_MS, sent when it differs,
  // until it has ended or the page is closed (or the server is closing).
  let closing = false;
  web.addHook('preClose', async () => {
    closing = true;
  });
  web.get<{ Params: { id: string } }>('/builds/:id/live', { sse: 'only' }, async (request, reply) => {
    const id = parseId(request.params.id, 'build');
    let last = '';
    while (reply.sse.isConnected && !closing) {
      const build = await loadBuild(deps, id);
      if (!build) throw new HttpError(404, 'not found', `no build #${id}`);
      const live = liveView(build, Boolean(deps.stop), config, deps.workflowIds);
      const text = JSON.stringify(live);
      if (text !== last) await reply.sse.send({ event: 'build', data: live });
      last = text;
      if (live.settled) break;
      await new Promise((resolve) => setTimeout(resolve, LIVE_POLL_MS));
    }
    reply.sse.close();
  });

  web.get<{ Params: { id: string } }>('/builds/:id', async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    return buildPage(request, reply, user, parseId(request.params.id, 'build'), null);
  });

  // A failing case's Mute button: its suite's test runs on, its failures no longer fail builds.
  web.post<{ Params: { id: string } }>('/builds/:id/mute', csrf, async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const id = parseId(request.params.id, 'build');
    const v = formFields(request);
    try {
      await muteFromBuild(deps.pool, id, { classname: v.classname ?? '', name: v.name ?? '' }, user);
    } catch (caught) {
      const err = asHttpError(caught);
      if (!err) throw caught;
      return buildPage(request, reply, user, id, err.message, err.statusCode);
    }
    return reply.code(303).header('location', `/builds/${id}?cases=failing#cases`).send();
  });

  web.post<{ Params: { id: string } }>('/builds/:id/stop', csrf, async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const id = parseId(request.params.id, 'build');
    try {
      await requestStop(deps, id, stoppedBy(user) ?? user.name);
    } catch (caught) {
      const err = asHttpError(caught);
      if (!err) throw caught;
      return buildPage(request, reply, user, id, err.message, err.statusCode);
    }
    return reply.code(303).header('location', `/builds/${id}`).send();
  });

  web.post<{ Params: { id: string } }>('/builds/:id/rebuild', csrf, async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const id = parseId(request.params.id, 'build');
    try {
      // The second button's `resolve_images=1`: each image's tag resolved again, not the digests the session ran.
      const fields = formFields(request);
      const resolveImages = fields.resolve_images === '1';
      // The third's `full=1`: every test file, where the build ran only the affected ones.
      const full = fields.full === '1';
      const { session } = await rebuildSession(deps, id, (err) => request.log.warn({ err, session: id }, '`received` not sent by the API'), { resolveImages, full });
      return reply.code(303).header('location', `/builds/${session}`).send();
    } catch (caught) {
      const err = asHttpError(caught);
      if (!err) throw caught;
      return buildPage(request, reply, user, id, err.message, err.statusCode);
    }
  });
}

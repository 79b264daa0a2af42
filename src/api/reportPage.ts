/**
 * The report page of one session, `{base_url}/1/reports/<session>`: plain HTML, no scripts.
 * Its token opens it, not a sign-in, so it is drawn by views/report.eta in a layout of its own
 * (views/reportLayout.eta: no navigation, no forms). This module turns the session's view into
 * what that template prints: every choice made here, every value text, which the template
 * escapes as every page does (`<%= %>`); the route sends a Content-Security-Policy that forbids
 * scripts anyway.
 */
import { describeSelection } from '../core/affected';
import { stripVTControlCharacters } from 'node:util';
import type { ReportView, SessionView } from '../app/builds';
import { renderTemplate } from './web/pages';

/** A test's or a batch's duration: `1.23 s`. */
function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(2)} s`;
}

const plural = (n: number, one: string): string => `${n} ${one}${n === 1 ? '' : 's'}`;

/** Sizes as people read them: `812 B`, `14.2 KiB`, `3.0 MiB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let n = bytes / 1024;
  let unit = 0;
  while (n >= 1024 && unit < units.length - 1) {
    n /= 1024;
    unit += 1;
  }
  return `${n.toFixed(1)} ${units[unit]}`;
}

/** Only http(s) links: a stored changeset URL was checked on the way in, and is checked again here. */
function safeHref(url: string | undefined): string | null {
  if (!url) return null;
  try {
    const u = new URL(url);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.toString() : null;
  } catch {
    return null;
  }
}

/** The image a session ran in as a pull names it: `<reference>@<digest>`, the reference alone before it resolved. */
function imageText(image: NonNullable<SessionView['image']>): string {
  return image.digest === null ? image.reference : `${image.reference}@${image.digest}`;
}

/** A link relative to the host, so it works however the page was reached. */
const localHref = (url: string): string => {
  const u = new URL(url);
  return `${u.pathname}${u.search}`;
};

const exitText = (code: number | null): string => (code === null ? '' : `exit code ${code}`);

/**
 * What a build printed as the report shows it: its text without the terminal's escapes (colours
 * have no place in a page that may be saved, mailed or printed; the build page renders them).
 */
const plain = (text: string): string => stripVTControlCharacters(text);

/** The end of a process's output, under a summary saying whether it is the whole of it; null when it printed nothing. */
function outputOf(tail: string, truncated: boolean): { summary: string; text: string } | null {
  return tail ? { summary: truncated ? 'end of the output' : 'output', text: plain(tail) } : null;
}

/** The build's hooks: each run, its status, exit code, duration (`running` while it has none), and the end of its output. */
function hookLines(v: SessionView) {
  return v.hooks.map((h) => ({
    name: h.name,
    where: h.worker === null ? 'build' : `worker ${h.worker}`,
    status: h.status,
    exit: exitText(h.exit_code),
    duration: h.duration_ms === null ? (h.status === 'running' ? 'running' : '') : seconds(h.duration_ms),
    command: h.command,
    detail: h.detail || null,
    output: outputOf(h.output_tail, h.output_truncated),
  }));
}

/** Each worker's setup: ready, failed (and why) or still setting up, and its notes. */
function workerLines(v: SessionView) {
  return v.worker_setup.map((w) => {
    const state = w.failure ? 'failed' : w.ready_at ? 'passed' : 'running';
    const word = { failed: 'failed', passed: 'ready', running: 'setting up' }[state];
    return { worker: w.worker, runner: w.runner || null, state, word, failure: w.failure || null, notes: w.notes };
  });
}

/** The processes that ran many files each: worker, files, how it went, and what became of a failed one. */
function batchLines(v: SessionView) {
  return v.batches.map((b) => ({
    id: b.id,
    worker: b.worker,
    files: plural(b.files, 'file'),
    status: b.status,
    exit: exitText(b.exit_code),
    duration: b.duration_ms === null ? '' : seconds(b.duration_ms),
    note: b.note ?? '',
    output: outputOf(b.output_tail, b.output_truncated),
  }));
}

/** This page's files: status, path, a line of facts (duration, exit code, runs, batch, worker), output. */
function testLines(v: ReportView) {
  return v.tests.map((t) => {
    const facts = [
      seconds(t.duration_ms),
      t.exit_code === null ? '' : `, exit code ${t.exit_code}`,
      t.attempts > 1 ? `, ${t.attempts} runs` : '',
      t.batch === null ? '' : `, batch #${t.batch}`,
      t.worker === null ? '' : `, worker ${t.worker}`,
    ];
    return { status: t.status, flaky: t.flaky, path: t.path, facts: facts.join(''), output: plain(t.output ?? '') };
  });
}

/** The same report's page `page`: its own path and token (from its `url`) with `page` set. */
function pageHref(v: ReportView, page: number): string {
  const u = new URL(v.url);
  u.searchParams.set('page', String(page));
  return `${u.pathname}${u.search}`;
}

/** Which of the session's files this page shows, and links to the previous and next pages; null for a report of one page. */
function paging(v: ReportView): { summary: string; prev: string | null; next: string | null } | null {
  if (v.pages <= 1 && v.page === 1) return null;
  const first = (v.page - 1) * v.per_page + 1;
  const summary =
    v.tests.length === 0
      ? `No files on page ${v.page}: the session has ${plural(v.total_files, 'file')} on ${plural(v.pages, 'page')}.`
      : `Files ${first}–${first + v.tests.length - 1} of ${v.total_files}, page ${v.page} of ${v.pages}.`;
  return {
    summary,
    prev: v.page > 1 ? pageHref(v, Math.min(v.page - 1, v.pages)) : null,
    next: v.page < v.pages ? pageHref(v, v.page + 1) : null,
  };
}

/** JUnit test cases: counts, the failing ones (name, classname, message), and unreadable reports; null when there are none. */
function cases(v: SessionView) {
  if (v.junit_files.length === 0 && v.cases.total === 0) return null;
  const c = v.cases;
  return {
    summary: `${plural(c.total, 'test case')} from ${plural(v.junit_files.length, 'JUnit report')}: ${c.passed} passed, ${c.failed} failed, ${c.error} error, ${c.skipped} skipped.`,
    failing: v.failing_cases.map((f) => ({ status: f.status, name: f.name, classname: f.classname, message: plain(f.message ?? ''), output: f.output ? plain(f.output) : null })),
    // How many failing cases are listed, when there are more.
    listedOnly: c.failed + c.error > v.failing_cases.length ? v.failing_cases.length : null,
    notes: v.junit_files.flatMap((f) => (f.note ? [{ file: f.file, note: f.note }] : [])),
  };
}

/** The table at the top: the build's repository, commit, image, status and how it came about. */
function summary(v: ReportView) {
  const repo = `${v.repository.org_name}/${v.repository.name}`;
  const href = safeHref(v.changeset?.url);
  return {
    title: `${repo} @ ${v.branch} #${v.session}`,
    status: v.status,
    repo,
    pullUrl: v.repository.url,
    branch: v.branch,
    ref: v.ref || null,
    reason: v.reason || null,
    selection: v.affected ? describeSelection(v.affected) : null,
    commit: v.commit_id ?? `(not checked out yet; requested ${v.head})`,
    committers: v.committers.length > 0 ? v.committers.join(', ') : null,
    image: v.image ? imageText(v.image) : null,
    profile: v.profile_name,
    workers: v.workers,
    counts: Object.entries(v.counts)
      .map(([k, n]) => `${k} ${n}`)
      .join(', '),
    stoppedBy: v.stopped_by || null,
    parentSession: v.parent_session ?? null,
    changeset: v.changeset ? { text: `${v.changeset.kind} ${v.changeset.id ?? ''}`, href } : null,
  };
}

/** The session's view as views/report.eta prints it, in the page's order. */
function reportPage(v: ReportView) {
  return {
    ...summary(v),
    timing: Object.entries(v.timing)
      .filter((e): e is [string, number] => typeof e[1] === 'number')
      .sort((a, b) => a[1] - b[1]) // lifecycle order; the database keeps keys in its own order
      .map(([key, t]) => ({ key, at: new Date(t * 1000).toISOString() })),
    hooks: hookLines(v),
    workerSetup: workerLines(v),
    artifacts: v.artifacts.map((a) => ({ href: localHref(a.url), path: a.path, worker: a.worker, size: formatBytes(a.size) })),
    batches: batchLines(v),
    flaky: v.flaky_files,
    paging: paging(v),
    tests: testLines(v),
    noResults: v.tests.length === 0 && v.total_files === 0,
    cases: cases(v),
    // A failed push, chat or e-mail never changed the build's status.
    postBuild: (v.post_build_steps ?? []).map((s) => ({ step: s.step, outcome: s.ok ? 'ok' : 'failed', detail: s.detail })),
    commitStatuses: (v.commit_statuses ?? []).map((s) => ({
      context: s.context,
      provider: s.provider,
      state: s.state,
      attempt: s.attempt,
      outcomeClass: s.outcome === 'delivered' ? 'ok' : 'failed',
      outcome: `${s.outcome}${s.status_code === null ? '' : ` (HTTP ${s.status_code})`}`,
      error: s.error ?? '',
    })),
  };
}

/** The report page's HTML. */
export function renderReport(v: ReportView): string {
  return renderTemplate('report', reportPage(v));
}

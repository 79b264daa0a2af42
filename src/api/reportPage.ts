/**
 * The report page of one session, `{base_url}/1/reports/<session>`: plain HTML, no scripts.
 * Everything shown comes from repositories and test output, so every value goes through
 * escapeHtml, and the route sends a Content-Security-Policy that forbids scripts anyway.
 */
import type { ReportView, SessionView } from './views';

export function escapeHtml(value: unknown): string {
  return String(value ?? '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

const STYLE = `
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { text-align: left; padding: .25em .75em; border-bottom: 1px solid #ddd; vertical-align: top; }
pre { background: #f6f6f6; padding: .75em; overflow-x: auto; white-space: pre-wrap; }
.passed, .ok { color: #11772d; } .failed, .error { color: #b00020; } .skipped, .queued, .running { color: #666; } .flaky { color: #6a2fd0; }
`;

function row(label: string, value: unknown): string {
  return `<tr><th>${escapeHtml(label)}</th><td>${escapeHtml(value)}</td></tr>`;
}

function statusSpan(status: string): string {
  return `<span class="${escapeHtml(status)}">${escapeHtml(status)}</span>`;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(2)} s`;
}

/** Only http(s) links: a stored changeset URL was checked on the way in, and is checked again here. */
function safeHref(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    const u = new URL(url);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.toString() : undefined;
  } catch {
    return undefined;
  }
}

/** Push, chat and e-mail: what became of each (a failed one never changed the build's status). */
function renderPostBuild(v: SessionView): string {
  if (!v.post_build_steps || v.post_build_steps.length === 0) return '';
  const rows = v.post_build_steps
    .map((s) => `<tr><th>${escapeHtml(s.step)}</th><td class="${s.ok ? 'ok' : 'failed'}">${s.ok ? 'ok' : 'failed'}</td><td>${escapeHtml(s.detail)}</td></tr>`)
    .join('\n');
  return `<h2>After the tests</h2>\n<table>\n${rows}\n</table>\n`;
}

/** The commit statuses posted to the hosting site: each attempt, its state and what came of it. */
function renderCommitStatuses(v: SessionView): string {
  if (!v.commit_statuses || v.commit_statuses.length === 0) return '';
  const rows = v.commit_statuses
    .map(
      (s) =>
        `<tr><th>${escapeHtml(s.context)}</th><td>${escapeHtml(s.provider)} ${escapeHtml(s.state)}</td><td>attempt ${s.attempt}</td>` +
        `<td class="${s.outcome === 'delivered' ? 'ok' : 'failed'}">${escapeHtml(s.outcome)}${s.status_code === null ? '' : ` (HTTP ${s.status_code})`}</td><td>${escapeHtml(s.error ?? '')}</td></tr>`,
    )
    .join('\n');
  return `<h2>Commit status</h2>\n<table>\n${rows}\n</table>\n`;
}

/** The image a session ran in as a pull names it: `<reference>@<digest>`, the reference alone before it resolved. */
function imageText(image: NonNullable<SessionView['image']>): string {
  return image.digest === null ? image.reference : `${image.reference}@${image.digest}`;
}

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

/** A hook's duration, `running` while it has none. */
function hookDuration(h: SessionView['hooks'][number]): string {
  return h.duration_ms === null ? (h.status === 'running' ? 'running' : '') : seconds(h.duration_ms);
}

/** The build's hooks: each run, its status, exit code, duration, and the end of its output. */
function renderHooks(v: SessionView): string {
  if (v.hooks.length === 0) return '';
  const rows = v.hooks
    .map(
      (h) =>
        `<tr><th>${escapeHtml(h.name)}</th><td>${h.worker === null ? 'build' : `worker ${escapeHtml(h.worker)}`}</td><td>${statusSpan(h.status)}</td>` +
        `<td>${h.exit_code === null ? '' : `exit code ${escapeHtml(h.exit_code)}`}</td><td>${escapeHtml(hookDuration(h))}</td>` +
        `<td><code>${escapeHtml(h.command)}</code>${h.detail ? `<br>${escapeHtml(h.detail)}` : ''}${
          h.output_tail
            ? `<details><summary>${h.output_truncated ? 'end of the output' : 'output'}</summary><pre>${escapeHtml(h.output_tail)}</pre></details>`
            : ''
        }</td></tr>`,
    )
    .join('\n');
  return `<h2>Hooks</h2>\n<table>\n<tr><th>hook</th><th>where</th><th>status</th><th>exit</th><th>duration</th><th>command and output</th></tr>\n${rows}\n</table>\n`;
}

/** Each worker's setup: ready or failed, and its notes. */
function renderWorkerSetup(v: SessionView): string {
  if (v.worker_setup.length === 0) return '';
  const items = v.worker_setup
    .map((w) => {
      const state = w.failure ? `<span class="failed">failed</span>: ${escapeHtml(w.failure)}` : w.ready_at ? '<span class="passed">ready</span>' : '<span class="running">setting up</span>';
      const notes = w.notes.length === 0 ? '' : `<ul>${w.notes.map((n) => `<li>${escapeHtml(n)}</li>`).join('')}</ul>`;
      return `<li>worker ${escapeHtml(w.worker)}${w.runner ? ` on ${escapeHtml(w.runner)}` : ''}: ${state}${notes}</li>`;
    })
    .join('\n');
  return `<h2>Workers</h2>\n<ul>\n${items}\n</ul>\n`;
}

/** The files the build kept, each a download (an attachment, never shown in Sluice's origin). */
function renderArtifacts(v: SessionView): string {
  if (v.artifacts.length === 0) return '';
  const rows = v.artifacts
    .map((a) => {
      const u = new URL(a.url);
      return `<tr><td><a href="${escapeHtml(`${u.pathname}${u.search}`)}" download rel="noopener noreferrer">${escapeHtml(a.path)}</a></td><td>worker ${escapeHtml(a.worker)}</td><td>${escapeHtml(formatBytes(a.size))}</td></tr>`;
    })
    .join('\n');
  return `<h2>Artifacts</h2>\n<table>\n<tr><th>file</th><th>worker</th><th>size</th></tr>\n${rows}\n</table>\n`;
}

/** The processes that ran many files each: worker, files, how it went, and what became of a failed one. */
function renderBatches(v: SessionView): string {
  if (v.batches.length === 0) return '';
  const rows = v.batches
    .map(
      (b) =>
        `<tr><th>#${escapeHtml(b.id)}</th><td>worker ${escapeHtml(b.worker)}</td><td>${escapeHtml(b.files)} file${b.files === 1 ? '' : 's'}</td><td>${statusSpan(b.status)}</td>` +
        `<td>${b.exit_code === null ? '' : `exit code ${escapeHtml(b.exit_code)}`}</td><td>${b.duration_ms === null ? '' : seconds(b.duration_ms)}</td><td>${escapeHtml(b.note ?? '')}${
          b.output_tail
            ? `<details><summary>${b.output_truncated ? 'end of the output' : 'output'}</summary><pre>${escapeHtml(b.output_tail)}</pre></details>`
            : ''
        }</td></tr>`,
    )
    .join('\n');
  return `<h2>Batches</h2>\n<table>\n<tr><th>batch</th><th>worker</th><th>files</th><th>status</th><th>exit</th><th>duration</th><th>what became of it</th></tr>\n${rows}\n</table>\n`;
}

/** The files that passed only on a retry, and how often each was flaky lately. */
function renderFlaky(v: SessionView): string {
  if (v.flaky_files.length === 0) return '';
  const items = v.flaky_files
    .map(
      (f) =>
        `<li>${escapeHtml(f.path)}: passed on run ${escapeHtml(f.attempts)}; flaky in ${escapeHtml(f.flaked)} of its ${escapeHtml(f.ran)} runs in the suite's last ${escapeHtml(f.builds)} builds</li>`,
    )
    .join('\n');
  return `<h2>Flaky</h2>\n<ul>\n${items}\n</ul>\n`;
}

/** JUnit test cases: counts, the failing ones (name, classname, message), and unreadable reports. */
function renderCases(v: SessionView): string {
  if (v.junit_files.length === 0 && v.cases.total === 0) return '';
  const c = v.cases;
  const summary = `<p>${c.total} test case${c.total === 1 ? '' : 's'} from ${v.junit_files.length} JUnit report${v.junit_files.length === 1 ? '' : 's'}: ${c.passed} passed, ${c.failed} failed, ${c.error} error, ${c.skipped} skipped.</p>`;
  const failing =
    v.failing_cases.length === 0
      ? ''
      : `<table>
<tr><th>status</th><th>name</th><th>classname</th><th>message</th></tr>
${v.failing_cases
  .map(
    (f) =>
      `<tr><td>${statusSpan(f.status)}</td><td>${escapeHtml(f.name)}</td><td>${escapeHtml(f.classname)}</td><td>${escapeHtml(f.message ?? '')}${
        f.output ? `<details><summary>output</summary><pre>${escapeHtml(f.output)}</pre></details>` : ''
      }</td></tr>`,
  )
  .join('\n')}
</table>`;
  const more = c.failed + c.error > v.failing_cases.length ? `<p>Only the first ${v.failing_cases.length} failing cases are listed.</p>` : '';
  const notes = v.junit_files.filter((f) => f.note);
  const noteList =
    notes.length === 0 ? '' : `<ul>\n${notes.map((f) => `<li>${escapeHtml(f.file)}: ${escapeHtml(f.note)}</li>`).join('\n')}\n</ul>`;
  return `<h2>Test cases</h2>\n${summary}\n${failing}\n${more}${noteList}\n`;
}

/**
 * The link to another page of the same report: the report's own path and token (from its
 * `url`) with `page` set, relative to the host so it works however the page was reached.
 */
function pageHref(v: ReportView, page: number): string {
  const u = new URL(v.url);
  u.searchParams.set('page', String(page));
  return `${u.pathname}${u.search}`;
}

/** Which of the session's files this page shows, and links to the previous and next pages. */
function renderPaging(v: ReportView): { summary: string; nav: string } {
  if (v.pages <= 1 && v.page === 1) return { summary: '', nav: '' };
  const first = (v.page - 1) * v.per_page + 1;
  const summary =
    v.tests.length === 0
      ? `<p>No files on page ${v.page}: the session has ${v.total_files} file${v.total_files === 1 ? '' : 's'} on ${v.pages} page${v.pages === 1 ? '' : 's'}.</p>`
      : `<p>Files ${first}–${first + v.tests.length - 1} of ${v.total_files}, page ${v.page} of ${v.pages}.</p>`;
  const links: string[] = [];
  if (v.page > 1) links.push(`<a rel="prev" href="${escapeHtml(pageHref(v, Math.min(v.page - 1, v.pages)))}">previous page</a>`);
  if (v.page < v.pages) links.push(`<a rel="next" href="${escapeHtml(pageHref(v, v.page + 1))}">next page</a>`);
  return { summary, nav: `<nav>${links.join(' ')}</nav>` };
}

export function renderReport(v: ReportView): string {
  const repo = `${v.repository.org_name}/${v.repository.name}`;
  const title = `${repo} @ ${v.branch} #${v.session}`;
  const counts = Object.entries(v.counts)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  const timing = Object.entries(v.timing)
    .filter((e): e is [string, number] => typeof e[1] === 'number')
    .sort((a, b) => a[1] - b[1]) // lifecycle order; the database keeps keys in its own order
    .map(([k, t]) => row(k, new Date(t * 1000).toISOString()))
    .join('');
  const href = safeHref(v.changeset?.url);
  const changeset = v.changeset
    ? `<tr><th>changeset</th><td>${escapeHtml(v.changeset.kind)} ${escapeHtml(v.changeset.id ?? '')}${
        href ? ` <a href="${escapeHtml(href)}" rel="noopener noreferrer">${escapeHtml(href)}</a>` : ''
      }</td></tr>`
    : '';

  const paging = renderPaging(v);
  const tests =
    v.tests.length === 0
      ? v.total_files === 0
        ? '<p>No test results yet.</p>'
        : ''
      : v.tests
          .map(
            (t) => `<section>
<h3>${statusSpan(t.status)}${t.flaky ? ' <span class="flaky">flaky</span>' : ''} ${escapeHtml(t.path)}</h3>
<p>${seconds(t.duration_ms)}${t.exit_code === null ? '' : `, exit code ${escapeHtml(t.exit_code)}`}${t.attempts > 1 ? `, ${escapeHtml(t.attempts)} runs` : ''}${
              t.batch === null ? '' : `, batch #${escapeHtml(t.batch)}`
            }${t.worker === null ? '' : `, worker ${escapeHtml(t.worker)}`}</p>
<pre>${escapeHtml(t.output ?? '')}</pre>
</section>`,
          )
          .join('\n');

  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<h1>${escapeHtml(title)} ${statusSpan(v.status)}</h1>
<table>
${row('repository', repo)}
${row('pull URL', v.repository.url)}
${row('branch', v.branch)}
${v.ref ? row('ref', v.ref) : ''}
<tr><th>status</th><td>${statusSpan(v.status)}</td></tr>
${v.reason ? row('reason', v.reason) : ''}
${row('commit', v.commit_id ?? `(not checked out yet; requested ${v.head})`)}
${v.committers.length > 0 ? row('committers', v.committers.join(', ')) : ''}
${v.image ? row('image', imageText(v.image)) : ''}
${row('profile', v.profile_name)}
${row('workers', v.workers)}
${row('counts', counts)}
${v.stopped_by ? row('stopped by', v.stopped_by) : ''}
${v.parent_session !== undefined ? row('parent session', v.parent_session) : ''}
${changeset}
</table>
<h2>Timing</h2>
<table>
${timing}
</table>
${renderHooks(v)}${renderWorkerSetup(v)}${renderArtifacts(v)}${renderBatches(v)}${renderFlaky(v)}<h2>Tests</h2>
${paging.summary}${paging.nav}
${tests}
${paging.nav}
${renderCases(v)}${renderPostBuild(v)}${renderCommitStatuses(v)}</body>
</html>
`;
}

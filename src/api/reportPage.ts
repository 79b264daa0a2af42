/**
 * The report page of one session, `{base_url}/1/reports/<session>`: plain HTML, no scripts.
 * Everything shown comes from repositories and test output, so every value goes through
 * escapeHtml, and the route sends a Content-Security-Policy that forbids scripts anyway.
 */
import type { SessionView } from './views';

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
.passed { color: #11772d; } .failed, .error { color: #b00020; } .skipped, .queued, .running { color: #666; }
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

export function renderReport(v: SessionView): string {
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

  const tests =
    v.tests.length === 0
      ? '<p>No test results yet.</p>'
      : v.tests
          .map(
            (t) => `<section>
<h3>${statusSpan(t.status)} ${escapeHtml(t.path)}</h3>
<p>${seconds(t.duration_ms)}${t.exit_code === null ? '' : `, exit code ${escapeHtml(t.exit_code)}`}</p>
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
<h2>Tests</h2>
${tests}
</body>
</html>
`;
}

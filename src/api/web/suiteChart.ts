/**
 * The suite page's chart (issue 37): its last builds oldest to newest, a bar each, as tall as
 * the build's test span (exec → post_build; the whole build when it did not get that far),
 * coloured by status, each a link to its build with its numbers in a tooltip. SVG drawn here
 * from the data, no chart service; every text escaped.
 */
import type { InsightBuild } from '../../app/insights';
import { escapeHtml } from './pages';

const WIDTH = 720;
const HEIGHT = 160;
const AXIS = 18;

const seconds = (ms: number): string => (ms >= 10_000 ? `${Math.round(ms / 1000)} s` : `${(ms / 1000).toFixed(1)} s`);

/** The chart of `builds` (newest first, as the insights give them), or '' when there are none. */
export function suiteChartSvg(builds: readonly InsightBuild[], title: string): string {
  const shown = [...builds].reverse().map((b) => ({ ...b, ms: b.tests_ms ?? b.whole_ms ?? 0 }));
  if (shown.length === 0) return '';
  const max = Math.max(1, ...shown.map((b) => b.ms));
  const slot = WIDTH / shown.length;
  const bar = Math.max(2, Math.min(28, slot * 0.7));
  const bars = shown.map((b, i) => {
    const h = Math.max(2, Math.round((b.ms / max) * (HEIGHT - AXIS - 4)));
    const x = Math.round(i * slot + (slot - bar) / 2);
    const y = HEIGHT - AXIS - h;
    const tip = `#${b.session} ${b.status}: tests ${b.tests_ms === null ? '–' : seconds(b.tests_ms)}, whole ${b.whole_ms === null ? '–' : seconds(b.whole_ms)}`;
    return `<a href="/builds/${b.session}"><rect class="sc-bar sc-${escapeHtml(b.status)}" x="${x}" y="${y}" width="${Math.round(bar)}" height="${h}" rx="2"><title>${escapeHtml(tip)}</title></rect></a>`;
  });
  return [
    `<svg class="sc" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="${escapeHtml(title)}" width="100%">`,
    `<line class="sc-axis" x1="0" y1="${HEIGHT - AXIS}" x2="${WIDTH}" y2="${HEIGHT - AXIS}"/>`,
    `<text class="sc-label" x="0" y="${HEIGHT - 4}">#${shown[0]!.session}</text>`,
    `<text class="sc-label" x="${WIDTH}" y="${HEIGHT - 4}" text-anchor="end">#${shown[shown.length - 1]!.session}</text>`,
    `<text class="sc-label" x="4" y="12">${escapeHtml(seconds(max))}</text>`,
    ...bars,
    '</svg>',
  ].join('');
}

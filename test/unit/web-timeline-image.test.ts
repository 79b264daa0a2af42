/**
 * Getting a build's image (issue 35) on the build page's timeline (src/api/web/timeline.ts): a
 * row of session_hooks named `image`, drawn like a hook but read as "image", on its worker's
 * lane, or among the steps for the post_build hook's own (no worker).
 */
import { buildTimeline, type SvgNode, type TimelineInput } from '../../src/api/web/timeline';

const T0 = 1_700_000_000;
const at = (s: number) => new Date((T0 + s) * 1000).toISOString();

function input(hooks: TimelineInput['hooks']): TimelineInput {
  return {
    session: 7,
    timing: { ci_received_at: T0, setup: T0 + 2, exec: T0 + 5, post_build: T0 + 10, done: T0 + 11 },
    running: false,
    now: (T0 + 100) * 1000,
    hooks,
    batches: [],
    tests: [],
    open: [],
    workers: [{ worker: 1, runner: 'host-1' }],
  };
}

/** The tooltips of every bar. */
function titles(node: SvgNode): string[] {
  const [tag, , ...children] = node;
  const text = (n: SvgNode | string): string => (typeof n === 'string' ? n : n.slice(2).map((c) => text(c as SvgNode | string)).join(''));
  const own = tag === 'rect' ? children.filter((c): c is SvgNode => Array.isArray(c) && c[0] === 'title').map(text) : [];
  return [...own, ...children.filter((c): c is SvgNode => Array.isArray(c)).flatMap(titles)];
}

it('reads a worker’s image row as "image", not as a hook', () => {
  const { picture } = buildTimeline(
    input([
      { name: 'image', worker: 1, status: 'passed', started_at: at(2), finished_at: at(4.4), duration_ms: 2400 },
      { name: 'worker_setup', worker: 1, status: 'passed', started_at: at(4.4), finished_at: at(4.9), duration_ms: 500 },
    ]),
  );
  const all = titles(picture);
  expect(all).toContain('image on worker 1: passed, 2.4 s (+2.0 s to +4.4 s)');
  expect(all).toContain('worker_setup hook on worker 1: passed, 500 ms (+4.4 s to +4.9 s)');
  expect(all.join('\n')).not.toContain('image hook');
});

it('labels the post_build hook’s image step "image" among the steps', () => {
  const { picture } = buildTimeline(input([{ name: 'image', worker: null, status: 'error', started_at: at(11), finished_at: at(11.2), duration_ms: 200 }]));
  const labels = JSON.stringify(picture);
  expect(labels).toContain('"image · 200 ms"');
  expect(titles(picture)).toContain('image: error, 200 ms (+11.0 s to +11.2 s)');
});

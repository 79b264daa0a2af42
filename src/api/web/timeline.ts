/**
 * The build as a picture (issue 22), Buildkite's waterfall the anchor: an inline SVG drawn on
 * the server from what the build recorded, so the page needs no client library and keeps its
 * CSP. Top to bottom:
 *
 * - a time axis from the trigger's arrival (`ci_received_at`) to the build's end (now, while it
 *   runs), with grid lines through the whole picture;
 * - the steps of spec §6 as a waterfall: each timing key is a step that took from the key before
 *   it to its own (queue, checkout, cache restore, setup hooks, …, tests, post-build);
 * - one row per worker (lane): its hooks, its batches (one bar each, with its file count) and its
 *   files over time, a failed one in the failure colour and marked with a triangle, a flaky one
 *   marked too, and how long the worker sat idle after its last file while another still ran,
 *   so uneven lanes show at a glance.
 *
 * A build of 5,000 files stays a picture of a few hundred shapes: neighbouring files of a lane
 * with the same outcome are drawn as one segment whenever one of them is narrower than
 * MERGE_PIXELS pixels of a wide screen (a pixel is 1/QUANTA of the time shown), so a lane draws
 * at most QUANTA / MERGE_PIXELS files one by one; a lane that still has more than MAX_SEGMENTS
 * segments (failures between passes) is binned MERGE_PIXELS pixels a bin, the worst outcome of
 * each bin drawn.
 *
 * The picture is a tree of plain data (SvgNode): the server renders it into the page
 * (svgMarkup, every value escaped by escapeHtml, the templates' own escaper, pages.ts) and the
 * live page's script (assets/build.js) draws the same tree with DOM calls, text as text. Its
 * numbers are one click away in the page's table.
 */
import { escapeHtml, formatDuration } from './pages';

/** An SVG element: its tag, its attributes, its children (elements, or text). */
export type SvgNode = [tag: string, attrs: Record<string, string | number>, ...children: (SvgNode | string)[]];

export interface TimelineInput {
  session: number;
  /** Spec §6 keys, seconds since the epoch. */
  timing: Record<string, number>;
  /** Still going: the picture ends now. */
  running: boolean;
  /** Waiting for its turn in the suite's queue. */
  queued?: boolean;
  /** Milliseconds since the epoch. */
  now: number;
  hooks: readonly { name: string; worker: number | null; status: string; started_at: string; finished_at: string | null; duration_ms: number | null }[];
  batches: readonly { id: number; worker: number; files: number; status: string; exit_code: number | null; duration_ms: number | null; note: string | null; started_at: string; finished_at: string | null }[];
  tests: readonly { path: string; status: string; duration_ms: number; started_at: Date | string | null; finished_at: Date | string; worker: number | null; batch: number | null; attempts: number; flaky: boolean }[];
  /** Files not done yet; a started one with the worker holding it. */
  open: readonly { path: string; status: string; worker: number | null }[];
  workers: readonly { worker: number; runner: string | null }[];
}

/** One timing key as the table beside the picture lists it. */
export interface KeyRow {
  key: string;
  step: string;
  /** After the trigger arrived: `+12.3 s`. */
  at: string;
  /** Since the key before it. */
  took: string;
}

/** One worker as the table beside the picture lists it. */
export interface LaneRow {
  worker: string;
  runner: string;
  files: number;
  batches: number;
  failed: number;
  flaky: number;
  /** When its first test began and its last ended, after the trigger arrived. */
  from: string;
  to: string;
  took: string;
  /** How long it waited after its last file for the last worker to end. */
  idle: string;
}

export interface Timeline {
  picture: SvgNode;
  keys: KeyRow[];
  lanes: LaneRow[];
}

/** Spec §6's keys in their order (`package_setup` is listed twice there), for keys of the same instant. */
export const TIMING_ORDER = [
  'ci_received_at', 'queue_first_seen_at', 'queue_first_allowed_at', 'workers_assigned_at', 'setup', 'package_setup', 'services_setup',
  'setup_hooks', 'worker_hooks', 'exec', 'post_build', 'artifact_collect', 'done', 'setup_post_hooks', 'capture_cache', 'setup_cache',
  'worker_rendezvous', 'post_build_hook',
];
const timingRank = (key: string): number => (TIMING_ORDER.includes(key) ? TIMING_ORDER.indexOf(key) : TIMING_ORDER.length);

/** The step each key ends (docs/sluice-yml.md, "A build's setup"): what the time since the key before it went to. */
const STEP_OF: Record<string, string> = {
  queue_first_seen_at: 'queued',
  queue_first_allowed_at: 'queue',
  workers_assigned_at: 'workers',
  setup: 'checkout',
  setup_cache: 'cache restore',
  setup_hooks: 'setup hooks',
  package_setup: 'package setup',
  services_setup: 'services',
  worker_hooks: 'worker_setup',
  worker_rendezvous: 'rendezvous',
  exec: 'test start',
  post_build: 'tests',
  setup_post_hooks: 'post_worker',
  artifact_collect: 'artifacts',
  capture_cache: 'cache save',
  done: 'results',
  post_build_hook: 'post-build',
};
export const stepOf = (key: string): string => STEP_OF[key] ?? key;

/** Horizontal resolution the drawing aims at: about a pixel of a laptop's page. */
const QUANTA = 1000;
/** Neighbours of one outcome are one segment when one of them is narrower than this many pixels. */
const MERGE_PIXELS = 3;
/** Segments of one lane at most (beyond, binned by pixel). */
const MAX_SEGMENTS = 600;
/** Names a merged segment's tooltip lists. */
const NAMES_LISTED = 5;

// Vertical layout, in pixels (the horizontal one is in percent of the width, so the picture fits any screen).
const AXIS_H = 18;
const HEAD_H = 18;
const STEP_H = 18;
const LANE_LABEL_H = 24;
const TRACK_H = 16;
const LANE_GAP = 10;

type Cls = 'passed' | 'failed' | 'flaky' | 'running' | 'muted' | 'hook' | 'step';
/** Which outcome a bin shows when it holds several: the worst. */
const SEVERITY: Record<Cls, number> = { failed: 5, flaky: 4, running: 3, passed: 2, hook: 1, step: 1, muted: 0 };

interface Item {
  kind: 'hook' | 'batch' | 'file';
  cls: Cls;
  from: number;
  to: number;
  /** Tooltip lines of what it is (several when merged). */
  names: string[];
  /** How many things it stands for (files of a batch count in `files`). */
  count: number;
  files: number;
  /** Text drawn inside a batch's bar. */
  inside?: string;
  title?: string;
}

interface Lane {
  worker: number | null;
  runner: string;
  items: Item[];
  files: number;
  batches: number;
  failed: number;
  flaky: number;
  /** Its tests' span (batches and files), when it ran any. */
  testFrom: number | null;
  testTo: number | null;
}

const ms = (at: Date | string | null | undefined): number | null => (at === null || at === undefined ? null : new Date(at).getTime());
const dur = (millis: number): string => formatDuration(Math.max(0, Math.round(millis)));
const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

function fileCls(status: string, flaky: boolean): Cls {
  if (status === 'failed' || status === 'error') return 'failed';
  if (status === 'passed') return flaky ? 'flaky' : 'passed';
  if (status === 'running' || status === 'started') return 'running';
  return 'muted';
}

function hookCls(status: string): Cls {
  return status === 'passed' ? 'hook' : status === 'running' ? 'running' : status === 'failed' || status === 'error' ? 'failed' : 'muted';
}

const CLS_WORD: Record<Cls, string> = { passed: 'passed', failed: 'failed', flaky: 'flaky', running: 'running', muted: 'not run', hook: 'passed', step: '' };

/** The build's timeline: the picture, and its numbers for the table beside it. */
export function buildTimeline(input: TimelineInput): Timeline {
  const t0 = (input.timing.ci_received_at ?? Math.min(...Object.values(input.timing), input.now / 1000)) * 1000;
  const keys = Object.entries(input.timing)
    .filter((e): e is [string, number] => typeof e[1] === 'number' && Number.isFinite(e[1]))
    // By time; keys recorded in the same instant in the order spec §6 lists them.
    .sort((a, b) => a[1] - b[1] || timingRank(a[0]) - timingRank(b[0]))
    .map(([key, at]) => ({ key, at: at * 1000 }));
  const lanes = collectLanes(input);
  const buildHooks = input.hooks.filter((h) => h.worker === null).map((h) => hookItem(h, input));

  let t1 = Math.max(t0 + 1000, ...keys.map((k) => k.at), ...buildHooks.map((h) => h.to), ...lanes.flatMap((l) => l.items.map((i) => i.to)));
  if (input.running) t1 = Math.max(t1, input.now);
  const span = t1 - t0;
  const quantum = span / QUANTA;
  const mergeBelow = quantum * MERGE_PIXELS;
  for (const lane of lanes) {
    lane.items = [...mergeSegments(lane.items.filter((i) => i.kind !== 'file'), mergeBelow, quantum), ...mergeSegments(lane.items.filter((i) => i.kind === 'file'), mergeBelow, quantum)];
  }

  // The steps: each key ends the step since the key before it; a running build's current step runs to now.
  const steps: Step[] = [];
  for (let i = 1; i < keys.length; i += 1) steps.push({ label: stepOf(keys[i]!.key), key: keys[i]!.key, from: keys[i - 1]!.at, to: keys[i]!.at, cls: 'step' });
  if (input.running) {
    const last = keys.at(-1);
    const has = (k: string) => input.timing[k] !== undefined;
    const testing = has('exec') || has('worker_rendezvous') || input.batches.length > 0 || input.tests.length > 0;
    const label = input.queued ? 'queued' : has('post_build') ? 'after the tests' : testing ? 'tests' : 'setting up';
    steps.push({ label, key: '', from: last?.at ?? t0, to: input.now, cls: 'running' });
  }
  for (const h of buildHooks) steps.push({ label: h.names[0]!.replace(/:.*/s, ''), key: '', from: h.from, to: h.to, cls: h.cls, title: itemTitle(h, t0) });

  const testEnds = lanes.map((l) => l.testTo).filter((t): t is number => t !== null);
  const testsOver = !input.running || input.timing.post_build !== undefined;
  const lastEnd = testEnds.length > 0 ? Math.max(...testEnds) : null;
  const x = (t: number) => `${round(((t - t0) / span) * 100)}%`;
  const w = (from: number, to: number, min = 0.12) => `${round(Math.max(min, ((to - from) / span) * 100))}%`;

  const children: SvgNode[] = [];
  let y = AXIS_H;
  const body: SvgNode[] = [];

  if (steps.length > 0) {
    body.push(['text', { x: 0, y: y + 13, class: 'tl-head' }, 'Steps']);
    y += HEAD_H;
    for (const s of steps) {
      const mid = (s.from + s.to) / 2 - t0;
      const text = `${s.label} · ${dur(s.to - s.from)}${s.cls === 'running' ? ' so far' : ''}`;
      const left = mid > span / 2;
      body.push(
        ['rect', { x: x(s.from), y: y + 3, width: w(s.from, s.to), height: 12, rx: 2, class: `tl-${s.cls}` }, ['title', {}, s.title ?? stepTitle(s, t0)]],
        ['text', { x: left ? x(s.from) : x(s.to), dx: left ? -4 : 4, y: y + 13, 'text-anchor': left ? 'end' : 'start', class: 'tl-label' }, text],
      );
      y += STEP_H;
    }
  }

  if (lanes.length > 0) {
    y += 6;
    body.push(['text', { x: 0, y: y + 13, class: 'tl-head' }, lanes.length === 1 ? 'Worker' : 'Workers']);
    y += HEAD_H;
    for (const lane of lanes) {
      const name = lane.worker === null ? 'worker ?' : `worker ${lane.worker}`;
      const what = lane.batches > 0 ? `${plural(lane.files, 'file')} in ${plural(lane.batches, 'batch', 'batches')}` : plural(lane.files, 'file');
      body.push(['text', { x: 0, y: y + 14, class: 'tl-lane' }, `${name} · ${what}`]);
      if (lane.testFrom !== null && lane.testTo !== null) {
        // Idle only once the tests are over: while they run, every lane is still busy.
        const idle = lastEnd !== null ? lastEnd - lane.testTo : 0;
        const tail = testEnds.length > 1 && testsOver ? (idle > quantum ? ` · idle ${dur(idle)}` : ' · last') : '';
        body.push(['text', { x: '100%', y: y + 14, 'text-anchor': 'end', class: 'tl-label' }, `tests ${dur(lane.testTo - lane.testFrom)}${tail}`]);
      }
      const top = y + LANE_LABEL_H;
      body.push(['rect', { x: 0, y: top, width: '100%', height: TRACK_H, class: 'tl-track' }]);
      if (testsOver && lastEnd !== null && lane.testTo !== null && lastEnd - lane.testTo > quantum) {
        body.push([
          'rect',
          { x: x(lane.testTo), y: top + 1, width: w(lane.testTo, lastEnd, 0), height: TRACK_H - 2, class: 'tl-idle' },
          ['title', {}, `${name} idle for ${dur(lastEnd - lane.testTo)} while the last worker still ran tests`],
        ]);
      }
      const marks: SvgNode[] = [];
      // Failures and flakes drawn last, over their neighbours, and never thinner than a few pixels.
      const drawOrder = [...lane.items].sort((a, b) => Number(a.kind !== 'batch') - Number(b.kind !== 'batch') || SEVERITY[a.cls] - SEVERITY[b.cls]);
      for (const item of drawOrder) {
        const minW = item.cls === 'failed' || item.cls === 'flaky' ? 0.3 : 0.12;
        const title = item.title ?? itemTitle(item, t0);
        if (item.kind === 'batch') {
          body.push(['rect', { x: x(item.from), y: top, width: w(item.from, item.to, minW), height: TRACK_H, rx: 2, class: `tl-${item.cls} tl-batch` }, ['title', {}, title]]);
          if (item.inside) {
            // Clipped to its bar (a nested svg); the unit goes on narrow screens (layout.eta).
            const [count, ...unit] = item.inside.split(' ');
            body.push([
              'svg',
              { x: x(item.from), y: top, width: w(item.from, item.to, minW), height: TRACK_H },
              ['text', { x: 4, y: 12, class: 'tl-in' }, count!, ['tspan', { class: 'tl-in-unit' }, ` ${unit.join(' ')}`]],
            ]);
          }
        } else {
          const h = item.kind === 'hook' ? 8 : 12;
          body.push(['rect', { x: x(item.from), y: top + (TRACK_H - h) / 2, width: w(item.from, item.to, minW), height: h, rx: 1, class: `tl-${item.cls}` }, ['title', {}, title]]);
        }
        if (item.cls === 'failed' || item.cls === 'flaky') {
          marks.push(['use', { href: `#tl-mark`, x: x((item.from + item.to) / 2), y: top - 1, class: `tl-mark-${item.cls}` }, ['title', {}, title]]);
        }
      }
      // Marks last: above every bar of the lane.
      body.push(...marks);
      y = top + TRACK_H + LANE_GAP;
    }
  }

  const height = Math.max(y, AXIS_H + 10);
  // The axis: round times, a grid line each, labels kept inside the picture.
  for (const tick of ticks(span)) {
    const pos = tick / span;
    const anchor = pos < 0.04 ? 'start' : pos > 0.96 ? 'end' : 'middle';
    children.push(
      ['line', { x1: x(t0 + tick), x2: x(t0 + tick), y1: AXIS_H - 4, y2: height, class: 'tl-grid' }],
      ['text', { x: x(t0 + tick), y: 12, 'text-anchor': anchor, class: 'tl-axis' }, tickLabel(tick)],
    );
  }

  const failed = lanes.reduce((n, l) => n + l.failed, 0);
  const flaky = lanes.reduce((n, l) => n + l.flaky, 0);
  const desc = [
    `${input.running ? 'So far' : 'In all'} ${dur(span)} from the trigger${input.running ? '' : ' to the end'}.`,
    steps.length > 0 ? `Steps: ${steps.map((s) => `${s.label} ${dur(s.to - s.from)}`).join(', ')}.` : '',
    lanes.length > 0
      ? `${plural(lanes.length, 'worker')}: ${lanes.map((l) => `worker ${l.worker ?? '?'} ${plural(l.files, 'file')}${l.testFrom !== null && l.testTo !== null ? ` in ${dur(l.testTo - l.testFrom)}` : ''}`).join(', ')}.`
      : '',
    failed > 0 ? `${plural(failed, 'file')} failed.` : '',
    flaky > 0 ? `${plural(flaky, 'file')} flaky.` : '',
  ]
    .filter(Boolean)
    .join(' ');

  const picture: SvgNode = [
    'svg',
    { class: 'tl', width: '100%', height, role: 'img', 'aria-labelledby': 'tl-title tl-desc' },
    ['title', { id: 'tl-title' }, `Timeline of build #${input.session}`],
    ['desc', { id: 'tl-desc' }, desc],
    ['defs', {}, ['path', { id: 'tl-mark', d: 'M-4.5 -7 L4.5 -7 L0 0 Z' }]],
    ...children,
    ...body,
  ];

  return {
    picture,
    keys: keys.map((k, i) => ({ key: k.key, step: i === 0 ? 'trigger received' : stepOf(k.key), at: `+${dur(k.at - t0)}`, took: i === 0 ? '' : dur(k.at - keys[i - 1]!.at) })),
    lanes: lanes.map((l) => ({
      worker: l.worker === null ? '?' : String(l.worker),
      runner: l.runner,
      files: l.files,
      batches: l.batches,
      failed: l.failed,
      flaky: l.flaky,
      from: l.testFrom === null ? '' : `+${dur(l.testFrom - t0)}`,
      to: l.testTo === null ? '' : `+${dur(l.testTo - t0)}`,
      took: l.testFrom === null || l.testTo === null ? '' : dur(l.testTo - l.testFrom),
      idle: !testsOver || lastEnd === null || l.testTo === null ? '' : dur(lastEnd - l.testTo),
    })),
  };
}

const round = (n: number): number => Math.round(n * 1000) / 1000;

/** How a row of the hooks reads: `worker_setup hook`, but getting the image (steps/image/) is no hook. */
const stepWord = (name: string): string => (name === 'image' ? 'image' : `${name} hook`);

function hookItem(h: TimelineInput['hooks'][number], input: TimelineInput): Item {
  const from = ms(h.started_at)!;
  const to = ms(h.finished_at) ?? (h.status === 'running' ? input.now : from + (h.duration_ms ?? 0));
  const where = h.worker === null ? '' : ` on worker ${h.worker}`;
  const took = h.status === 'running' ? `running for ${dur(input.now - from)}` : dur(h.duration_ms ?? to - from);
  return { kind: 'hook', cls: hookCls(h.status), from, to, names: [`${stepWord(h.name)}${where}: ${h.status}, ${took}`], count: 1, files: 0 };
}

/** Each worker's hooks, batches and files, and its numbers. */
function collectLanes(input: TimelineInput): Lane[] {
  const lanes = new Map<number | null, Lane>();
  const laneOf = (worker: number | null): Lane => {
    let lane = lanes.get(worker);
    if (!lane) {
      const runner = input.workers.find((w) => w.worker === worker)?.runner ?? '';
      lane = { worker, runner, items: [], files: 0, batches: 0, failed: 0, flaky: 0, testFrom: null, testTo: null };
      lanes.set(worker, lane);
    }
    return lane;
  };
  for (const w of input.workers) laneOf(w.worker);
  const spanTests = (lane: Lane, from: number, to: number) => {
    lane.testFrom = lane.testFrom === null ? from : Math.min(lane.testFrom, from);
    lane.testTo = lane.testTo === null ? to : Math.max(lane.testTo, to);
  };

  for (const h of input.hooks) if (h.worker !== null) laneOf(h.worker).items.push(hookItem(h, input));

  // A batch's own process; files it ran again one by one (or retried) come after it, drawn as files.
  const batchRun = new Map<number, { from: number; to: number }>();
  for (const b of input.batches) {
    const from = ms(b.started_at)!;
    const to = b.duration_ms !== null ? from + b.duration_ms : b.status === 'running' ? input.now : (ms(b.finished_at) ?? from);
    batchRun.set(b.id, { from, to });
    const lane = laneOf(b.worker);
    lane.batches += 1;
    const how = b.status === 'running' ? `running for ${dur(input.now - from)}` : `${b.status}${b.exit_code !== null && b.status !== 'passed' ? ` (exit code ${b.exit_code})` : ''}, ${dur(to - from)}`;
    lane.items.push({
      kind: 'batch',
      cls: b.status === 'running' ? 'running' : fileCls(b.status, false),
      from,
      to,
      names: [`batch ${b.id} on worker ${b.worker}: ${plural(b.files, 'file')}, ${how}${b.note ? `. ${b.note}` : ''}`],
      count: 1,
      files: b.files,
      inside: plural(b.files, 'file'),
    });
    spanTests(lane, from, to);
  }

  for (const t of input.tests) {
    const lane = laneOf(t.worker);
    lane.files += 1;
    const cls = fileCls(t.status, t.flaky);
    if (cls === 'failed') lane.failed += 1;
    if (cls === 'flaky') lane.flaky += 1;
    const end = ms(t.finished_at)!;
    const from = ms(t.started_at) ?? end - t.duration_ms;
    const to = from + t.duration_ms;
    const run = t.batch === null ? undefined : batchRun.get(t.batch);
    // In its batch's process: the batch's bar stands for it.
    if (run && from < run.to) continue;
    const runs = t.attempts > 1 ? `, ${t.attempts} runs` : '';
    lane.items.push({ kind: 'file', cls, from, to, names: [`${t.path}: ${t.status}${t.flaky ? ' (flaky)' : ''}${runs}, ${dur(t.duration_ms)}`], count: 1, files: 1 });
    spanTests(lane, from, to);
  }

  // What a lane holds and has not finished: from its last end (or the first start of any) to now.
  const holding = new Map<number, string[]>();
  for (const f of input.open) if (f.status === 'started' && f.worker !== null) holding.set(f.worker, [...(holding.get(f.worker) ?? []), f.path]);
  for (const [worker, paths] of holding) {
    const lane = laneOf(worker);
    if (input.batches.some((b) => b.worker === worker && b.status === 'running')) continue;
    const from = lane.testTo ?? (input.timing.exec !== undefined ? input.timing.exec * 1000 : input.now);
    if (from >= input.now) continue;
    lane.items.push({
      kind: 'file',
      cls: 'running',
      from,
      to: input.now,
      names: [`worker ${worker} running ${plural(paths.length, 'file')}: ${listNames(paths)}`],
      count: paths.length,
      files: paths.length,
    });
    spanTests(lane, from, input.now);
  }

  for (const lane of lanes.values()) lane.items.sort((a, b) => a.from - b.from || a.to - b.to);
  return [...lanes.values()].sort((a, b) => (a.worker ?? Infinity) - (b.worker ?? Infinity));
}

const listNames = (names: readonly string[]): string =>
  names.length <= NAMES_LISTED ? names.join(', ') : `${names.slice(0, NAMES_LISTED).join(', ')} and ${names.length - NAMES_LISTED} more`;

/**
 * A lane's bars of one kind, neighbours with the same outcome drawn as one when either is
 * narrower than `below` and no more than `gap` apart; beyond MAX_SEGMENTS, binned by `below`,
 * each bin its worst outcome.
 */
export function mergeSegments(items: readonly Item[], below: number, gap: number): Item[] {
  const out: Item[] = [];
  for (const item of items) {
    const cur = out.at(-1);
    if (cur && cur.cls === item.cls && cur.kind === item.kind && item.from - cur.to <= gap && (cur.to - cur.from < below || item.to - item.from < below)) {
      cur.to = Math.max(cur.to, item.to);
      cur.names.push(...item.names);
      cur.count += item.count;
      cur.files += item.files;
      cur.inside = cur.kind === 'batch' ? `${plural(cur.count, 'batch', 'batches')}, ${plural(cur.files, 'file')}` : undefined;
      cur.title = undefined;
    } else {
      out.push({ ...item, names: [...item.names] });
    }
  }
  if (out.length <= MAX_SEGMENTS) return out;
  const bins = new Map<number, Item>();
  for (const item of out) {
    const at = Math.floor(item.from / below);
    const bin = bins.get(at);
    if (!bin) {
      bins.set(at, item);
      continue;
    }
    bin.to = Math.max(bin.to, item.to);
    if (SEVERITY[item.cls] > SEVERITY[bin.cls]) bin.cls = item.cls;
    bin.names.push(...item.names);
    bin.count += item.count;
    bin.files += item.files;
    bin.title = undefined;
  }
  return [...bins.values()];
}

function itemTitle(item: Item, t0: number): string {
  const when = `+${dur(item.from - t0)} to +${dur(item.to - t0)}`;
  if (item.names.length === 1) return `${item.names[0]} (${when})`;
  const what = item.kind === 'batch' ? `${plural(item.count, 'batch', 'batches')}, ${plural(item.files, 'file')}` : plural(item.files, 'file');
  return `${what} ${CLS_WORD[item.cls]}, ${dur(item.to - item.from)} (${when}): ${listNames(item.names.map((n) => n.replace(/:.*$/s, '')))}`;
}

interface Step {
  label: string;
  /** The timing key that ended it ('' for the running step and a build's hook). */
  key: string;
  from: number;
  to: number;
  cls: Cls;
  title?: string;
}

function stepTitle(s: Step, t0: number): string {
  const key = s.key ? ` (until ${s.key})` : '';
  return `${s.label}${key}: ${dur(s.to - s.from)}${s.cls === 'running' ? ' so far' : ''}, +${dur(s.from - t0)} to +${dur(s.to - t0)}`;
}

/** Round times for the axis, at most six: seconds, minutes, hours. */
function ticks(span: number): number[] {
  const steps = [1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 900, 1200, 1800, 3600, 7200, 10800, 21600, 43200, 86400].map((s) => s * 1000);
  const step = steps.find((s) => span / s <= 6) ?? Math.ceil(span / 6 / 86_400_000) * 86_400_000;
  const out: number[] = [];
  for (let t = 0; t <= span + 1; t += step) out.push(t);
  return out;
}

function tickLabel(t: number): string {
  const s = Math.round(t / 1000);
  if (s === 0) return '0';
  if (s < 60) return `${s} s`;
  if (s < 3600 || s % 3600 !== 0) return `${round(s / 60)} min`;
  return `${s / 3600} h`;
}

/** The tags and the attributes the picture is made of; assets/build.js draws the same ones only. */
export const SVG_TAGS = new Set(['svg', 'g', 'rect', 'line', 'text', 'tspan', 'title', 'desc', 'defs', 'path', 'use']);

/** The picture as markup for the page, every attribute value and text escaped as the templates escape theirs. */
export function svgMarkup(node: SvgNode | string): string {
  if (typeof node === 'string') return escapeHtml(node);
  const [tag, attrs, ...children] = node;
  if (!SVG_TAGS.has(tag)) return '';
  const attributes = Object.entries(attrs)
    .filter(([name, value]) => /^[a-z][a-z0-9-]*$/i.test(name) && !/^on/i.test(name) && (name !== 'href' || String(value).startsWith('#')))
    .map(([name, value]) => ` ${name}="${escapeHtml(value)}"`)
    .join('');
  const xmlns = tag === 'svg' && attrs.class === 'tl' ? ' xmlns="http://www.w3.org/2000/svg"' : '';
  return `<${tag}${xmlns}${attributes}>${children.map(svgMarkup).join('')}</${tag}>`;
}

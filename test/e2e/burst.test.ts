/**
 * Bursts of triggers on one suite. With a low history limit the suite workflow continues-as-new
 * every few sessions, while triggers keep arriving during the hand-overs: none may be lost,
 * every `received` goes out without waiting for the queue, and builds still run one at a time,
 * in the order they were triggered. A queued session whose `received` a receiver refused has it
 * retried on schedule, not at its turn.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { eventually } from '../support/wait';
import { script, World, type Payload } from '../support/world';

let w: World;
beforeAll(async () => {
  w = await World.start({ suiteHistoryLimit: 40 });
});
afterAll(() => w?.stop());

it('keeps every trigger of a burst across continue-as-new, building them one at a time', async () => {
  const repo = await w.makeRepo({ 'a_test.sh': script('true') }, { suite: { branch: 'master', test_pattern: '*_test.sh' } });
  const BURST = 20;
  const builds = await Promise.all(Array.from({ length: BURST }, () => w.build(repo, { force: true })));

  const stops: Payload[] = [];
  for (const b of builds) stops.push((await w.eventsOf(b.session)).at(-1)!);
  expect(stops.map((s) => s.status)).toEqual(Array(BURST).fill('passed'));

  // One at a time: ordered by when their tests started, each ended before the next began.
  const windows = stops
    .map((s) => s.timing as Record<string, number>)
    .map((t) => ({ from: t.exec!, to: t.post_build! }))
    .sort((a, b) => a.from - b.from);
  for (let i = 1; i < windows.length; i++) expect(windows[i]!.from).toBeGreaterThanOrEqual(windows[i - 1]!.to);

  // The suite really did hand over to new runs on the way.
  const { rows } = await w.sluice.pool.query('SELECT suite_id FROM sessions WHERE id = $1', [builds[0]!.session]);
  let runs = 0;
  for await (const _ of w.sluice.client.workflow.list({ query: `WorkflowId = "${w.sluice.ids.suite(rows[0].suite_id)}"` })) runs += 1;
  expect(runs).toBeGreaterThan(2);
});

it('sends every `received` of a burst at once, before its builds run one at a time in trigger order', async () => {
  const release = path.join(w.tmp, 'release-burst');
  // Every build waits (bounded) until the test saw all the `received` events: the first holds the
  // suite, so they can only arrive because no `received` waits for the queue.
  const repo = await w.makeRepo(
    { 'a_test.sh': script(`for i in $(seq 1 1200); do [ -e ${release} ] && exit 0; sleep 0.05; done\nexit 1`) },
    { suite: { branch: 'master', test_pattern: '*_test.sh' } },
  );
  const BURST = 20;
  const sessions: number[] = [];
  for (let i = 0; i < BURST; i++) sessions.push((await w.build(repo, { force: true })).session);

  const of = (session: number) => w.receiver.requests.map((r) => r.json as Payload).filter((p) => p?.session === session);
  await eventually('every received event', async () => sessions.every((s) => of(s).some((p) => p.event === 'received')));
  // The first build is still waiting for the release: none has stopped yet.
  expect(sessions.filter((s) => of(s).some((p) => p.event === 'stop'))).toEqual([]);
  await writeFile(release, '');

  const stops: Payload[] = [];
  for (const s of sessions) stops.push((await w.eventsOf(s)).at(-1)!);
  expect(stops.map((s) => s.status)).toEqual(Array(BURST).fill('passed'));
  for (const s of sessions) {
    const events = of(s).map((p) => p.event);
    // Once (the API sends it; the session's lane finds it delivered), and before `start`.
    expect(events.filter((e) => e === 'received')).toHaveLength(1);
    expect(events.indexOf('received')).toBeLessThan(events.indexOf('start'));
  }
  // In trigger order, one at a time: each began after the one before it ended.
  const windows = stops.map((s) => s.timing as Record<string, number>);
  for (let i = 1; i < windows.length; i++) expect(windows[i]!.exec!).toBeGreaterThanOrEqual(windows[i - 1]!.post_build!);
});

it('retries a queued session\'s `received` on schedule while the build ahead of it still runs', async () => {
  const release = path.join(w.tmp, 'release-retry');
  const repo = await w.makeRepo(
    { 'a_test.sh': script(`for i in $(seq 1 1200); do [ -e ${release} ] && exit 0; sleep 0.05; done\nexit 1`) },
    { suite: { branch: 'master', test_pattern: '*_test.sh' } },
  );
  const first = await w.build(repo, { force: true });
  const of = (session: number) => w.receiver.requests.filter((r) => (r.json as Payload | undefined)?.session === session);
  await eventually('the first build to start', async () => of(first.session).some((r) => (r.json as Payload).event === 'start'));

  // The receiver refuses the first `received` of any other session: the API's attempt fails.
  let refused = false;
  w.receiver.respondWith((req) => {
    const p = req.json as Payload;
    if (!refused && p.event === 'received' && p.session !== first.session) {
      refused = true;
      return { status: 503, body: 'busy' };
    }
    return { status: 200, body: 'ok' };
  });
  try {
    const second = await w.build(repo, { force: true });
    // Its lane (its workflow, started early) retries while it still waits for its turn.
    await eventually('the second `received`, retried', async () => of(second.session).filter((r) => (r.json as Payload).event === 'received').length === 2);
    expect(of(first.session).some((r) => (r.json as Payload).event === 'stop')).toBe(false);
    const [a, b] = of(second.session).map((r) => r.headers['x-sluice-delivery']);
    expect(b).toBe(a); // the same event, attempt 2

    await writeFile(release, '');
    const events = (await w.eventsOf(second.session)).map((p) => p.event);
    expect(events.at(-1)).toBe('stop');
    expect(events.lastIndexOf('received')).toBeLessThan(events.indexOf('start'));
    expect((await w.eventsOf(second.session)).at(-1)).toMatchObject({ status: 'passed' });
  } finally {
    w.receiver.respondWith(() => ({ status: 200, body: 'ok' }));
    await writeFile(release, '');
  }
});

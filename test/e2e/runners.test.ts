/**
 * One build spread over runner processes, and runners lost mid-build, in the production shape:
 * a Temporal dev server started without Sluice's search attributes, the API, one worker and
 * three runners, each `node dist/<role>/main.js` as docker-compose runs them
 * (test/support/cluster.ts). Runners are killed with SIGKILL, for real.
 */
import { chmod, mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { startCluster, type Cluster } from '../support/cluster';
import { eventually } from '../support/wait';
import { expectEachEventOnce, script, type Payload } from '../support/world';
import { startRole } from '../support/processes';
import { isAlive } from '../support/pids';
import { reportPath } from '../support/reports';

let c: Cluster;
/** Where builds write what they tell this test: open to the build user the runners run them as. */
let shared: string;

beforeAll(async () => {
  // Without bubblewrap: the files report the runner's pid ($PPID) and their own through files of
  // this test's, which a sandbox's PID namespace and private /tmp would hide (sandbox.test.ts
  // tries the default). As root, runners still run builds as their own unprivileged user.
  c = await startCluster({ runners: 3, env: { SLUICE_SANDBOX: 'none' } });
  await chmod(c.tmp, 0o711);
  shared = path.join(c.tmp, 'shared');
  await mkdir(shared, { mode: 0o1777 });
  await chmod(shared, 0o1777);
}, 300_000);

afterAll(async () => {
  await c?.stop();
});

/** Lines a build's test files appended to `file` (they write there, outside their checkout). */
async function lines(file: string): Promise<string[]> {
  return (await readFile(file, 'utf8').catch(() => '')).split('\n').filter(Boolean);
}


async function report(session: number): Promise<{ tests: Array<{ path: string; status: string; runner: string }> }> {
  const res = await fetch(`${c.env.SLUICE_BASE_URL}${await reportPath(c.db.pool, session)}`, { headers: { accept: 'application/json' } });
  return (await res.json()) as never;
}

describe('a build of workers: 3 on three runner processes', () => {
  it('runs its files on three runners, each file once, and passes', async () => {
    const log = path.join(shared, 'spread.log');
    // Each file records the runner that started it ($PPID), then waits until three runners
    // have started one (bounded): it passes only if the build really ran on three at once.
    const barrier = (name: string) =>
      script(
        `echo "${name} $PPID" >> ${log}\n` +
          `for i in $(seq 1 600); do [ "$(cut -d' ' -f2 ${log} | sort -u | wc -l)" -ge 3 ] && exit 0; sleep 0.1; done\nexit 1`,
      );
    const repo = await c.makeRepo(
      { 'test/a_test.sh': barrier('a'), 'test/b_test.sh': barrier('b'), 'test/c_test.sh': barrier('c') },
      { branch: 'master', test_pattern: 'test/*_test.sh', workers: 3 },
    );
    const session = await c.build(repo);
    const events = await c.eventsOf(session);
    const stop = events.find((e) => e.event === 'stop')!;
    expect(stop).toMatchObject({ status: 'passed', workers: 3 });
    expect(stop.counts).toMatchObject({ passed: 3, failed: 0, error: 0, notstarted: 0, started: 0 });

    // Each file once, each on its own runner; the report says which.
    const ran = await lines(log);
    expect(ran.map((l) => l.split(' ')[0]).sort()).toEqual(['a', 'b', 'c']);
    const { tests } = await report(session);
    expect(tests.map((t) => t.path)).toEqual(['test/a_test.sh', 'test/b_test.sh', 'test/c_test.sh']);
    const runnerNames = new Set(tests.map((t) => t.runner));
    expect(runnerNames.size).toBe(3);
    const pids = c.runners.map((r) => String(r.pid));
    for (const name of runnerNames) expect(pids).toContain(name.slice(name.lastIndexOf('-') + 1));
  });
});

describe('a runner killed with SIGKILL while it runs a file', () => {
  it('the build still passes, every file counted once, and its test process is gone', async () => {
    const dir = shared;
    const slowPid = path.join(dir, 'slow.pid');
    const runs = path.join(dir, 'killed.log');
    // The first run of slow_test.sh records itself and hangs; the one after the kill passes.
    const repo = await c.makeRepo(
      {
        'test/slow_test.sh': script(
          `echo "slow $PPID" >> ${runs}\nif [ ! -e ${slowPid} ]; then echo "$$ $PPID" > ${slowPid}.tmp; mv ${slowPid}.tmp ${slowPid}; sleep 600; fi\nexit 0`,
        ),
        ...Object.fromEntries(['1', '2', '3', '4'].map((n) => [`test/quick${n}_test.sh`, script(`echo "quick${n} $PPID" >> ${runs}\nsleep 0.2`)])),
      },
      { branch: 'master', test_pattern: 'test/*_test.sh', workers: 2 },
    );
    const session = await c.build(repo);

    const [testPid, runnerPid] = (
      await eventually('the slow test to start', async () => {
        const text = await readFile(slowPid, 'utf8').catch(() => '');
        return /^\d+ \d+\n$/.test(text) && text;
      })
    )
      .trim()
      .split(' ')
      .map(Number) as [number, number];
    const victim = c.runners.find((r) => r.pid === runnerPid)!;
    expect(victim).toBeDefined();
    victim.kill('SIGKILL');
    await victim.exited;

    // The test's process group died with its runner (the reaper saw it go).
    await eventually('the killed runner\'s test process to be gone', async () => !isAlive(testPid), 15_000);

    const events = await c.eventsOf(session);
    const stop = events.find((e) => e.event === 'stop')!;
    expect(stop).toMatchObject({ status: 'passed' });
    expect(stop.counts).toMatchObject({ passed: 5, failed: 0, error: 0, notstarted: 0, started: 0 });
    expect(events.some((e) => e.event === 'first-fail')).toBe(false);

    // slow_test.sh ran twice (the second time on a live runner), every other file once; the
    // report has each file once.
    const ran = (await lines(runs)).map((l) => l.split(' '));
    const slowRuns = ran.filter(([name]) => name === 'slow').map(([, pid]) => Number(pid));
    expect(slowRuns).toHaveLength(2);
    expect(slowRuns[0]).toBe(runnerPid);
    expect(slowRuns[1]).not.toBe(runnerPid);
    for (const n of ['1', '2', '3', '4']) expect(ran.filter(([name]) => name === `quick${n}`)).toHaveLength(1);
    const { tests } = await report(session);
    expect(tests.map((t) => [t.path, t.status])).toEqual([
      ['test/quick1_test.sh', 'passed'],
      ['test/quick2_test.sh', 'passed'],
      ['test/quick3_test.sh', 'passed'],
      ['test/quick4_test.sh', 'passed'],
      ['test/slow_test.sh', 'passed'],
    ]);
    expect(tests.find((t) => t.path === 'test/slow_test.sh')!.runner).not.toMatch(new RegExp(`-${runnerPid}$`));

    // Back to three runners for whatever runs next.
    c.runners.splice(c.runners.indexOf(victim), 1);
    await c.addRunner();
  });
});

describe('a burst of builds wider than the runners’ slots (issue 49)', () => {
  it('four builds of workers: 2 on three one-slot runners all end, one runner killed mid-build, each file counted once', async () => {
    const log = path.join(shared, 'burst.log');
    // Each file records its build and runner, then takes a moment: lanes hold their slots while
    // the others wait for one. A lane never waits for its partner, so no slot is held idle.
    const file = (build: number, name: string) => script(`echo "build${build} ${name} $PPID" >> ${log}\nsleep 0.5`);
    const repos = [];
    for (let i = 0; i < 4; i++) {
      repos.push(
        await c.makeRepo(
          Object.fromEntries(['a', 'b', 'c', 'd'].map((n) => [`test/${n}_test.sh`, file(i, n)])),
          { branch: 'master', test_pattern: 'test/*_test.sh', workers: 2 },
        ),
      );
    }
    const sessions = await Promise.all(repos.map((r) => c.build(r)));

    // The runner that started the first file is killed while it runs it, and a new one starts.
    const first = await eventually('a first file to start', async () => (await lines(log))[0]);
    const victim = c.runners.find((r) => String(r.pid) === first.split(' ')[2])!;
    expect(victim).toBeDefined();
    victim.kill('SIGKILL');
    await victim.exited;
    c.runners.splice(c.runners.indexOf(victim), 1);
    await c.addRunner();

    for (const session of sessions) {
      const stop = (await c.eventsOf(session, 180_000)).find((e) => e.event === 'stop')!;
      expect(stop).toMatchObject({ status: 'passed' });
      expect(stop.counts).toMatchObject({ passed: 4, failed: 0, error: 0, notstarted: 0, started: 0 });
      const { tests } = await report(session);
      expect(tests.map((t) => [t.path, t.status])).toEqual(['a', 'b', 'c', 'd'].map((n) => [`test/${n}_test.sh`, 'passed']));
    }
    // Every file ran; only a file the killed runner had started may have run twice.
    const ran = (await lines(log)).map((l) => l.split(' '));
    for (let i = 0; i < 4; i++) {
      for (const n of ['a', 'b', 'c', 'd']) {
        const runs = ran.filter(([b, f]) => b === `build${i}` && f === n);
        expect(runs.length).toBeGreaterThanOrEqual(1);
        if (runs.length > 1) expect(runs.slice(0, -1).every(([, , pid]) => pid === String(victim.pid))).toBe(true);
      }
    }
  }, 300_000);
});

describe('triggers while no worker runs (issue 49)', () => {
  it('get their `received` from the API at once, and build once a worker is back, each event sent once', async () => {
    c.worker.kill('SIGKILL');
    await c.worker.exited;
    const repo = await c.makeRepo({ 'test/a_test.sh': script('true') }, { branch: 'master', test_pattern: 'test/*_test.sh' });
    const sessions = [await c.build(repo, { branch: 'master', force: true }), await c.build(repo, { branch: 'master', force: true })];
    // No workflow task can run: the API recorded both sessions and sent `received` itself.
    const received = await eventually('`received` of both, with no worker', async () => {
      const got = c.receiver.requests.map((r) => r.json as Payload).filter((p) => p?.event === 'received' && sessions.includes(p.session));
      return got.length === 2 ? got : undefined;
    });
    expect(received.map((p) => [p.session, p.status])).toEqual(sessions.map((s) => [s, 'queued']));
    expect(sessions[1]).toBeGreaterThan(sessions[0]!); // ids in the order the triggers came

    // Workers get no admin token (as the cluster starts them).
    const { SLUICE_ADMIN_TOKEN: _admin, ...workerEnv } = c.env;
    c.worker = startRole('worker', workerEnv);
    await c.worker.waitForOutput(/sluice worker: serving /, 90_000);
    for (const session of sessions) {
      expect((await c.eventsOf(session, 120_000)).find((e) => e.event === 'stop')).toMatchObject({ status: 'passed' });
      expectEachEventOnce(c.receiver, session); // the suite's own record of it sent no second `received`
    }
  }, 240_000);
});

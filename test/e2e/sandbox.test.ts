/**
 * A hostile test file in a real build, as a test would try to reach what it should not: the
 * runner's environment (database URL, secret key, admin token) and any process's command line,
 * its working directory and memory (the ptrace check: opening /proc/<pid>/mem), other builds'
 * trees, signalling the runner, leaving a daemon behind (setsid, so outside its process group),
 * PostgreSQL's socket, the API's port.
 *
 * Against the default configuration first (issue 23: safe without configuration): nothing set,
 * the runner as root (as .ci/run runs it) runs the build as its own unprivileged user in
 * bubblewrap; it finds no secret, no process but its own, and nothing it started survives.
 * Then the levels an operator can choose, each in its own Sluice (docs/security.md):
 * - the build user without bubblewrap (SLUICE_SANDBOX=none): no secret, no memory, no directory
 *   of the runner's; it still sees the runner's process and the network, and a daemon that left
 *   its process group outlives the test (said below, not hidden);
 * - bubblewrap without network (SLUICE_SANDBOX_NETWORK=none): it also reaches no socket or port.
 * The runner runs inside this jest process, so `process.pid` is the runner's pid. The hostile
 * file is test/support/hostile.ts's; test/e2e/npm-start.test.ts runs it against `npm start`.
 */
import { execFileSync } from 'node:child_process';
import { daemonMarkerName, expectSandboxed, hostileFiles } from '../support/hostile';
import { bwrapWorks, processesMatching } from '../support/pids';
import { reportPath } from '../support/reports';
import type { RepoFiles } from '../support/gitRepo';
import { startS3Server, TEST_SECRET_ACCESS_KEY, type S3Server } from '../support/s3Server';
import { script, World } from '../support/world';

const BUILD_USER = 'sluice-build';

function buildUserUid(): number | null {
  try {
    return Number(execFileSync('id', ['-u', BUILD_USER], { encoding: 'utf8' }).trim());
  } catch {
    return null;
  }
}

const uid = buildUserUid();
const root = process.getuid?.() === 0;
// Running tests as another user needs a root runner; .ci/run runs the tests as root and creates
// the user. A developer's machine without them skips the levels that need it, saying why.
const asRoot = root && uid !== null;
if (!asRoot) console.warn(`sandbox.test.ts: the build user's levels are skipped: they need root and the user ${BUILD_USER} (.ci/run creates it)`);
// bubblewrap comes from .ci/run too; where user namespaces are not allowed, the default runs
// without it and says so (test/integration/runner-isolation.test.ts), and these levels are skipped.
const sandboxed = bwrapWorks();
if (!sandboxed) console.warn('sandbox.test.ts: the bubblewrap levels are skipped: bwrap is missing or user namespaces are not allowed here');

/** The services' admin connections the default level's runner holds (this machine's servers, as services.test.ts). */
const SERVICE_ADMINS = {
  postgresql: 'postgres://postgres@127.0.0.1:5432/postgres',
  mysql: 'mysql://root@127.0.0.1:3306',
  redis: 'redis://127.0.0.1:6379',
};

async function runHostileBuild(w: World, extra: { secrets?: string[]; files?: RepoFiles } = {}): Promise<{ output: string; daemonMarker: string }> {
  // An unusual sleep length names the daemon (sleep takes fractions).
  const daemonMarker = daemonMarkerName();
  const { config } = w.sluice;
  const repo = await w.makeRepo(
    {
      ...extra.files,
      ...hostileFiles({
        daemonMarker,
        apiPort: config.port,
        runner: { pid: process.pid, cmdline: 'jest' },
        secrets: [config.databaseUrl, config.secretKey.toString('base64'), config.adminToken, ...(extra.secrets ?? [])],
      }),
    },
    { suite: { branch: 'master', test_pattern: '*_test.sh' } },
  );
  await w.sluice.admin('PUT', `/api/v1/repos/${repo.id}/secrets/API_TOKEN`, { value: 'sk_live_sandboxed_0123' });
  const { session } = await w.build(repo);
  expect((await w.eventsOf(session)).at(-1)).toMatchObject({ status: 'passed' });
  const res = await fetch(`${w.sluice.url}${await reportPath(w.sluice.pool, session)}`, { headers: { accept: 'application/json' } });
  const report = (await res.json()) as { tests: { path: string; output: string }[] };
  return { output: report.tests.find((t) => t.path === 'hostile_test.sh')!.output, daemonMarker };
}

(sandboxed ? describe : describe.skip)('a test file under the default configuration', () => {
  let w: World;
  let s3: S3Server;
  beforeAll(async () => {
    // With what a runner holds besides: the cache store's credentials and the services' admin connections.
    s3 = await startS3Server();
    await s3.makeBucket('sluice-sandbox');
    w = await World.start({ isolation: 'default', store: s3.settings('sluice-sandbox'), services: SERVICE_ADMINS });
  });
  afterAll(async () => {
    await w?.stop();
    await s3?.stop();
  });

  it('finds no secret, process, socket or directory of the runner, and nothing it started survives', async () => {
    const { output, daemonMarker } = await runHostileBuild(w, {
      secrets: [TEST_SECRET_ACCESS_KEY, ...Object.values(SERVICE_ADMINS)],
      // Its worker's own databases: what it may have (and the runner then holds the admin connections).
      files: { 'sluice.yml': { content: 'services: [postgresql, mysql, redis]\n' }, 'own_services_test.sh': script('test -n "$DATABASE_URL" && test -n "$REDIS_URL" && echo "has its own databases"') },
    });
    // Never root: a root runner runs builds as its own unprivileged user.
    expect(output).toContain(`uid=${root ? buildUserUid() : process.getuid?.()}\n`);
    // Its checkout at the same place in every build: tools' caches keyed by path stay warm.
    expect(output).toContain('pwd=/sluice/tree\n');
    // The host's network is the default (package setup, services): the API's port answers.
    expect(output).toContain('reached the API\n');
    await expectSandboxed(output, daemonMarker);
  });

  it('runs a batch there, whose JUnit report names files by their absolute paths inside, and pins its failure on its file', async () => {
    // As mocha's xunit reporter writes them: `file` is the absolute path the process saw.
    const runner = script(`status=0; cases=""
for f in "$@"; do
  if sh "$f"; then r=""; else status=1; r="<failure message=\\"failed\\">assertion</failure>"; fi
  cases="$cases<testcase classname=\\"$f\\" name=\\"works\\" time=\\"0.01\\" file=\\"$PWD/$f\\">$r</testcase>"
done
echo "<testsuite name=\\"tiny\\">$cases</testsuite>" > "$SLUICE_REPORT_DIR/report.xml"
exit $status`);
    const repo = await w.makeRepo(
      { 'run.sh': runner, 'test/a.sh': { content: 'true\n' }, 'test/b.sh': { content: 'exit 1\n' }, 'test/c.sh': { content: 'true\n' } },
      { suite: { branch: 'master', test_pattern: 'test/*.sh', test_command: './run.sh {files}' } },
    );
    const { session } = await w.build(repo);
    expect((await w.eventsOf(session)).at(-1)).toMatchObject({ status: 'failed', counts: expect.objectContaining({ passed: 2, failed: 1 }) });
    const v = (await w.session(session)) as unknown as { tests: { path: string; status: string }[]; batches: { note: string | null }[] };
    expect(v.tests.map((t) => [t.path, t.status])).toEqual([
      ['test/a.sh', 'passed'],
      ['test/b.sh', 'failed'],
      ['test/c.sh', 'passed'],
    ]);
    // Pinned by the report (its /sluice/tree/… paths mapped back), none run again.
    expect(v.batches.map((b) => b.note)).toEqual([expect.stringMatching(/3 files by their JUnit results$/)]);
  });
});

(asRoot ? describe : describe.skip)('a test file running as the build user without bubblewrap (SLUICE_SANDBOX=none)', () => {
  let w: World;
  beforeAll(async () => {
    w = await World.start({ buildUser: BUILD_USER, sandbox: 'none' });
  });
  afterAll(() => w?.stop());

  it('cannot read the runner, its environment, memory or directories, nor signal it, but works in its tree', async () => {
    const { output, daemonMarker } = await runHostileBuild(w);
    try {
      expect(output).toContain(`uid=${uid}\n`);
      expect(output).toContain('wrote in its tree\n');
      expect(output).not.toContain('BREACH');
      // What this level does not hide (docs/security.md): the bubblewrap level does.
      expect(output).toContain('sees the runner\n');
      expect(output).toContain('reached the API\n');
    } finally {
      for (const pid of processesMatching(`sleep ${daemonMarker}`)) process.kill(Number(pid), 'SIGKILL');
    }
  });
});

(sandboxed && asRoot ? describe : describe.skip)('a test file in bubblewrap, as the build user, without network', () => {
  let w: World;
  beforeAll(async () => {
    w = await World.start({ buildUser: BUILD_USER, sandbox: 'bwrap', sandboxNetwork: false });
  });
  afterAll(() => w?.stop());

  it('sees no process, socket, network or directory of the host, and nothing it started survives', async () => {
    const { output, daemonMarker } = await runHostileBuild(w);
    expect(output).toContain(`uid=${uid}\n`);
    expect(output).not.toContain('reached the API');
    await expectSandboxed(output, daemonMarker);
  });

  it('gets a mounted cache (issue 49) it may change in place and remove: the next build restores the original', async () => {
    // Each build first checks what it restored is the original, then edits it in place, makes it
    // the world's, and removes the whole directory. (`link: true` too: where the runner can
    // mount, it mounts.) The first build's copy is what gets saved, after its tests: left alone.
    const check = script(`grep -qx original deps/a.txt || { echo "restored: $(cat deps/a.txt)"; exit 1; }
[ -e .first ] && exit 0
echo hacked > deps/a.txt && chmod 666 deps/a.txt && grep -qx hacked deps/a.txt || { echo "could not change it in place"; exit 1; }
rm -rf deps && [ ! -e deps ] || { echo "could not remove it"; exit 1; }`);
    const repo = await w.makeRepo(
      {
        'deps.lock': { content: 'v1\n' },
        'check_test.sh': check,
        'sluice.yml': {
          content: ['hooks:', '  pre_setup: "[ -d deps ] || { mkdir deps && echo original > deps/a.txt && touch .first; }"', 'cache:', '  key_paths: [deps.lock]', '  save_paths: [deps]', '  link: true', ''].join('\n'),
        },
      },
      { suite: { branch: 'master', test_pattern: '*_test.sh' } },
    );
    const notes: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { session } = await w.build(repo, { force: true });
      expect((await w.eventsOf(session)).at(-1)).toMatchObject({ status: 'passed' });
      notes.push(((await w.session(session)) as unknown as { worker_setup: { notes: string[] }[] }).worker_setup[0]!.notes.join('\n'));
    }
    expect(notes[0]).toMatch(/cache saved in master: deps/);
    expect(notes[1]).toMatch(/cache restored deps \(this key, branch master, from this runner's copy, mounted: its changes stay in this build\)/);
    expect(notes[2]).toMatch(/mounted/);
  });
});

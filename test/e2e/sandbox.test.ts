/**
 * A hostile test file in a real build, as a test would try to reach what it should not: the
 * runner's environment (database URL, secret key), its working directory and memory (the
 * ptrace check: opening /proc/<pid>/mem), other builds' trees, signalling the runner, leaving a
 * daemon behind (setsid, so outside its process group), PostgreSQL's socket, the API's port.
 *
 * Two levels (README "Security model"), each in its own Sluice:
 * - the build user (SLUICE_BUILD_USER=sluice-build, created by .ci/run): no secret, no memory,
 *   no directory of the runner's; it still sees the runner's process and the network, and a
 *   daemon that left its process group outlives the test (said below, not hidden);
 * - the build user inside bubblewrap (SLUICE_SANDBOX=bwrap, SLUICE_SANDBOX_NETWORK=none): it
 *   sees no process but its own, no socket, no network, and nothing it started survives.
 * The runner runs inside this jest process, so `process.pid` is the runner's pid.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { bwrapWorks, processesMatching } from '../support/pids';
import { reportPath } from '../support/reports';
import { eventually } from '../support/wait';
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
// Running tests as another user needs a root runner and the user: .ci/run provides both. A
// developer's machine without them skips this file, saying why.
const asRoot = process.getuid?.() === 0 && uid !== null;
if (!asRoot) console.warn(`sandbox.test.ts skipped: needs root and the user ${BUILD_USER} (.ci/run creates it)`);
// bubblewrap comes from .ci/run too; where user namespaces are not allowed the runner refuses
// SLUICE_SANDBOX=bwrap at start (tested below by its own check), so the level is skipped, saying why.
const sandboxed = asRoot && bwrapWorks();
if (asRoot && !sandboxed) console.warn('sandbox.test.ts: the bubblewrap level is skipped: bwrap is missing or user namespaces are not allowed here');

/** The hostile file: prints BREACH for what must never work, and plain words for what it saw. */
function hostileScript(daemonMarker: string, apiPort: number): string {
  const runner = process.pid;
  return [
    'echo "uid=$(id -u)"',
    // Secrets in any process's environment this user can read (the runner's holds the test database URL).
    'for p in /proc/[0-9]*; do tr "\\0" "\\n" <$p/environ 2>/dev/null; done | grep -q SLUICE_TEST_DATABASE_URL && echo "BREACH: read a Sluice environment"',
    // The runner's working directory (this project: jest.config.js), through any process's cwd link.
    'for p in /proc/[0-9]*; do [ -e $p/cwd/jest.config.js ] && echo "BREACH: reached the runner\'s working directory"; done',
    `R=${runner}`,
    'if grep -q jest /proc/$R/cmdline 2>/dev/null; then',
    '  echo "sees the runner"',
    // Opening another process's memory needs ptrace access to it.
    '  (exec 3</proc/$R/mem) 2>/dev/null && echo "BREACH: opened the runner\'s memory"',
    '  kill -0 $R 2>/dev/null && echo "BREACH: could signal the runner"',
    'fi',
    // Its own checkout and its worker's home (HOME, beside it) are all it may see there.
    'ls -A "$(dirname "$PWD")" 2>/dev/null | grep -v -x -e "$(basename "$PWD")" -e "$(basename "$HOME")" | grep -q . && echo "BREACH: listed the other checkouts"',
    'ls /root >/dev/null 2>&1 && echo "BREACH: listed /root"',
    '[ -S /run/postgresql/.s.PGSQL.5432 ] && echo "sees the database socket"',
    `bash -c 'exec 3<>/dev/tcp/127.0.0.1/${apiPort}' 2>/dev/null && echo "reached the API"`,
    // A daemon that leaves the process group and the session, as `nohup cmd &` with setsid would.
    `setsid sh -c 'exec sleep ${daemonMarker}' </dev/null >/dev/null 2>&1 &`,
    'echo work > mine.txt && cat mine.txt >/dev/null && echo "wrote in its tree"',
    'exit 0',
  ].join('\n');
}

async function runHostileBuild(w: World): Promise<{ output: string; daemonMarker: string }> {
  // An unusual sleep length names the daemon (sleep takes fractions).
  const daemonMarker = `3${randomBytes(2).readUInt16BE(0)}.${randomBytes(2).readUInt16BE(0)}7`;
  const repo = await w.makeRepo(
    { 'hostile_test.sh': script(hostileScript(daemonMarker, w.sluice.config.port)) },
    { suite: { branch: 'master', test_pattern: '*_test.sh' } },
  );
  await w.sluice.admin('PUT', `/api/v1/repos/${repo.id}/secrets/API_TOKEN`, { value: 'sk_live_sandboxed_0123' });
  const { session } = await w.build(repo);
  expect((await w.eventsOf(session)).at(-1)).toMatchObject({ status: 'passed' });
  const res = await fetch(`${w.sluice.url}${await reportPath(w.sluice.pool, session)}`, { headers: { accept: 'application/json' } });
  const report = (await res.json()) as { tests: { output: string }[] };
  return { output: report.tests[0]!.output, daemonMarker };
}

(asRoot ? describe : describe.skip)('a test file running as the build user', () => {
  let w: World;
  beforeAll(async () => {
    w = await World.start({ buildUser: BUILD_USER });
  });
  afterAll(() => w?.stop());

  it('cannot read the runner, its environment, memory or directories, nor signal it, but works in its tree', async () => {
    const { output, daemonMarker } = await runHostileBuild(w);
    try {
      expect(output).toContain(`uid=${uid}\n`);
      expect(output).toContain('wrote in its tree\n');
      expect(output).not.toContain('BREACH');
      // What this level does not hide (README "Security model"): the bubblewrap level does.
      expect(output).toContain('sees the runner\n');
      expect(output).toContain('reached the API\n');
    } finally {
      for (const pid of processesMatching(`sleep ${daemonMarker}`)) process.kill(Number(pid), 'SIGKILL');
    }
  });
});

(sandboxed ? describe : describe.skip)('a test file in bubblewrap, as the build user, without network', () => {
  let w: World;
  beforeAll(async () => {
    w = await World.start({ buildUser: BUILD_USER, sandbox: 'bwrap', sandboxNetwork: false });
  });
  afterAll(() => w?.stop());

  it('sees no process, socket, network or directory of the host, and nothing it started survives', async () => {
    const { output, daemonMarker } = await runHostileBuild(w);
    expect(output).toContain(`uid=${uid}\n`);
    expect(output).toContain('wrote in its tree\n');
    expect(output).not.toContain('BREACH');
    expect(output).not.toContain('sees the runner');
    expect(output).not.toContain('sees the database socket');
    expect(output).not.toContain('reached the API');
    // The daemon died with the sandbox's PID namespace when the test ended.
    await eventually('the daemon gone', async () => processesMatching(`sleep ${daemonMarker}`).length === 0);
  });
});

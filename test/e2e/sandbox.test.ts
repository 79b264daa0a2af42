/**
 * A hostile test file in a real build, run as the build user (SLUICE_BUILD_USER=sluice-build,
 * created by .ci/run): it tries what a test would to reach Sluice, the runner's environment
 * (database URL, secret key), its working directory and memory, other builds' trees, signalling
 * the runner; everything fails, while the test can still do its own work in its tree.
 */
import { execFileSync } from 'node:child_process';
import { reportPath } from '../support/reports';
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
const runs = process.getuid?.() === 0 && uid !== null;
if (!runs) console.warn(`sandbox.test.ts skipped: needs root and the user ${BUILD_USER} (.ci/run creates it)`);

(runs ? describe : describe.skip)('a test file running as the build user', () => {
  let w: World;
  beforeAll(async () => {
    w = await World.start({ buildUser: BUILD_USER });
  });
  afterAll(() => w?.stop());

  it('cannot read the runner, its environment or its directories, nor signal it, but works in its tree', async () => {
    const hostile = script(
      [
        'echo "uid=$(id -u)"',
        // The runner is the test's parent.
        'cat /proc/$PPID/environ >/dev/null 2>&1 && echo "BREACH: read the runner\'s environment"',
        'for p in /proc/[0-9]*; do [ "$(stat -c %u $p)" = "$(id -u)" ] && continue; cat $p/environ >/dev/null 2>&1 && echo "BREACH: read $p/environ"; done',
        'ls /proc/$PPID/cwd/ >/dev/null 2>&1 && echo "BREACH: listed the runner\'s working directory"',
        'cat /proc/$PPID/mem >/dev/null 2>&1 && echo "BREACH: read the runner\'s memory"',
        'ls "$(dirname "$PWD")" >/dev/null 2>&1 && echo "BREACH: listed the other checkouts"',
        'kill -0 $PPID 2>/dev/null && echo "BREACH: could signal the runner"',
        'echo work > mine.txt && echo "wrote in its tree"',
        'exit 0',
      ].join('\n'),
    );
    const repo = await w.makeRepo({ 'hostile_test.sh': hostile }, { suite: { branch: 'master', test_pattern: '*_test.sh' } });
    await w.sluice.admin('PUT', `/api/v1/repos/${repo.id}/secrets/API_TOKEN`, { value: 'sk_live_sandboxed_0123' });
    const { session } = await w.build(repo);
    expect((await w.eventsOf(session)).at(-1)).toMatchObject({ status: 'passed' });

    const report = (await (await fetch(`${w.sluice.url}${await reportPath(w.sluice.pool, session)}`, { headers: { accept: 'application/json' } })).json()) as {
      tests: { output: string }[];
    };
    const output = report.tests[0]!.output;
    expect(output).toContain(`uid=${uid}\n`);
    expect(output).toContain('wrote in its tree\n');
    expect(output).not.toContain('BREACH');
  });
});

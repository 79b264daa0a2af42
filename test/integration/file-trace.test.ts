/**
 * Issue 40's dependency maps, as far as they go: what each test file's run reads, recorded with
 * the real strace from outside the project (no change to it, any language) and read by
 * parseFileTrace: a shell test reading fixtures, a Node.js test requiring modules, a compiled Go
 * test binary, and the same inside bubblewrap as an unprivileged user. Then the rule
 * (core/affected.ts) picks, from those maps, only what a change can affect.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { selectAffected, type TestFileDeps } from '../../src/core/affected';
import { parseFileTrace, TRACED_SYSCALLS } from '../../src/steps/tests/fileTrace';

let root: string;

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'sluice-trace-'));
  await chmod(root, 0o755);
  const files: Record<string, string> = {
    'tests/fixture_test.sh': 'cat tests/fixtures/a.txt > /dev/null\nls tests/fixtures > /dev/null\n[ -e config/local.yml ] || true\n. lib/helpers.sh\n',
    'tests/fixtures/a.txt': 'a\n',
    'lib/helpers.sh': 'helper() { :; }\n',
    'test/app.test.js': "const app = require('../lib/app');\nif (app() !== 2) process.exit(1);\n",
    'lib/app.js': "const util = require('./util');\nmodule.exports = () => util.one() + 1;\n",
    'lib/util.js': 'exports.one = () => 1;\n',
    'lib/unused.js': 'exports.never = true;\n',
    'gotest/main.go': 'package main\n\nimport "os"\n\nfunc main() {\n\tif _, err := os.ReadFile("gotest/testdata/input.txt"); err != nil {\n\t\tos.Exit(1)\n\t}\n}\n',
    'gotest/go.mod': 'module gotest\n\ngo 1.21\n',
    'gotest/testdata/input.txt': 'x\n',
  };
  for (const [f, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, f)), { recursive: true });
    await writeFile(path.join(root, f), content);
  }
  // The compiled test binary, built before the trace (its build is not its run).
  execFileSync('go', ['build', '-o', 'gotest.bin', '.'], { cwd: path.join(root, 'gotest'), env: { ...process.env, GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'local' }, stdio: 'pipe' });
  execFileSync('chmod', ['-R', 'a+rX', root]);
}, 120_000);

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Runs `argv` in the project under strace, as the runner would around a test file; what the trace says it touched. */
function traced(argv: string[], wrap: string[] = []): TestFileDeps {
  const out = path.join(tmpdir(), `sluice-trace-${process.pid}-${Math.random().toString(36).slice(2)}.txt`);
  const r = spawnSync(wrap[0] ?? 'strace', [...wrap.slice(1), ...(wrap.length ? ['strace'] : []), '-f', '-qq', '-y', '-e', `trace=${TRACED_SYSCALLS.join(',')}`, '-o', out, ...argv], { cwd: root, encoding: 'utf8' });
  expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
  const text = execFileSync('cat', [out], { encoding: 'utf8' });
  execFileSync('rm', ['-f', out]);
  return parseFileTrace(text, root);
}

it('a shell test: the script, the fixture it reads, the directory it lists, the file it looks for and the file it sources', () => {
  const d = traced(['sh', 'tests/fixture_test.sh']);
  expect(d.reads).toEqual(['lib/helpers.sh', 'tests/fixture_test.sh', 'tests/fixtures/a.txt']);
  expect(d.lists).toEqual(['tests/fixtures']);
  expect(d.probes).toContain('config/local.yml');
});

it('a Node.js test: the modules it requires, one through another, and none it does not', () => {
  const d = traced([process.execPath, 'test/app.test.js']);
  expect(d.reads).toEqual(expect.arrayContaining(['lib/app.js', 'lib/util.js', 'test/app.test.js']));
  expect([...d.reads, ...d.lists, ...d.probes].filter((f) => f.includes('unused'))).toEqual([]);
});

it('a compiled test binary: the program and the test data it opens', () => {
  const d = traced(['gotest/gotest.bin']);
  expect(d.reads).toEqual(['gotest/gotest.bin', 'gotest/testdata/input.txt']);
});

it('works inside bubblewrap, as a user without privileges, and the rule then runs only what a change reaches', () => {
  const sandbox = ['bwrap', '--unshare-all', '--die-with-parent', '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp', '--ro-bind', root, root, '--bind', tmpdir(), tmpdir(), '--chdir', root, '--uid', '65534', '--gid', '65534'];
  const maps = new Map<string, TestFileDeps>([
    ['tests/fixture_test.sh', traced(['sh', 'tests/fixture_test.sh'], sandbox)],
    ['test/app.test.js', traced([process.execPath, 'test/app.test.js'], sandbox)],
    ['gotest/gotest.bin', traced(['gotest/gotest.bin'], sandbox)],
  ]);
  expect(maps.get('test/app.test.js')!.reads).toContain('lib/util.js');
  const map = { commit: 'c'.repeat(40), files: maps };
  const pick = (changed: string[]) => {
    const s = selectAffected({ testFiles: [...maps.keys()], changed, map });
    return s.full ? s.reason : [...s.run.keys()];
  };
  expect(pick(['lib/util.js'])).toEqual(['test/app.test.js']);
  expect(pick(['tests/fixtures/b.txt'])).toEqual(['tests/fixture_test.sh']);
  expect(pick(['config/local.yml'])).toEqual(['tests/fixture_test.sh']);
  expect(pick(['gotest/testdata/input.txt'])).toEqual(['gotest/gotest.bin']);
  expect(pick(['lib/unused.js', 'README.md'])).toEqual([]);
  expect(pick(['gotest/go.mod'])).toBe('gotest/go.mod changed (dependencies or settings every test depends on)');
});

// Which test files a change can affect (issue 40's rule, src/core/affected.ts): by what each
// test file's run read, listed and looked for at the map's commit; everything when the map
// cannot judge.
import { describeReason, describeSelection, needsFullRun, selectAffected, selectedSummary, type DependencyMap, type TestFileDeps } from '../../src/core/affected';

const deps = (reads: string[], more: Partial<TestFileDeps> = {}): TestFileDeps => ({ reads, lists: [], probes: [], ...more });

const map: DependencyMap = {
  commit: 'a'.repeat(40),
  files: new Map([
    ['test/router.test.js', deps(['test/router.test.js', 'lib/router/index.js', 'lib/utils.js'])],
    ['test/request.test.js', deps(['test/request.test.js', 'lib/request.js', 'lib/utils.js'])],
    ['test/static.test.js', deps(['test/static.test.js', 'test/fixtures/a.txt'], { lists: ['test/fixtures'] })],
    ['test/resolve.test.js', deps(['test/resolve.test.js'], { probes: ['lib/plugins/extra.js'] })],
    ['tests/run.sh', deps(['tests/run.sh', 'bin/tool'])],
  ]),
};
const testFiles = [...map.files.keys(), 'test/new.test.js'];

it('runs what read a changed file, what changed, and what has no map; skips the rest as not affected', () => {
  const s = selectAffected({ testFiles, changed: ['lib/router/index.js', 'test/request.test.js'], map });
  expect(s).toEqual({
    full: false,
    mapCommit: map.commit,
    run: new Map([
      ['test/router.test.js', { kind: 'depends', on: ['lib/router/index.js'] }],
      ['test/request.test.js', { kind: 'changed' }],
      ['test/new.test.js', { kind: 'unmapped' }],
    ]),
    skipped: ['test/static.test.js', 'test/resolve.test.js', 'tests/run.sh'],
    causes: ['lib/router/index.js'],
  });
});

it('counts a file made where a test looked for one, or in a directory it listed, as met', () => {
  const s = selectAffected({ testFiles, changed: ['lib/plugins/extra.js', 'test/fixtures/b.txt'], map });
  expect(s.full).toBe(false);
  if (s.full) return;
  expect([...s.run.keys()]).toEqual(['test/static.test.js', 'test/resolve.test.js', 'test/new.test.js']);
  expect(s.causes).toEqual(['lib/plugins/extra.js', 'test/fixtures/b.txt']);
});

it('a file only modified in a listed directory leaves the listing as it was: the test that listed it is not affected', () => {
  const modified = selectAffected({ testFiles, changed: ['test/fixtures/b.txt'], addedOrRemoved: [], map });
  expect(modified.full === false && [...modified.run.keys()]).toEqual(['test/new.test.js']);
  const removed = selectAffected({ testFiles, changed: ['test/fixtures/b.txt', 'lib/request.js'], addedOrRemoved: ['test/fixtures/b.txt'], map });
  expect(removed.full === false && Object.fromEntries(removed.run)).toEqual({
    'test/request.test.js': { kind: 'depends', on: ['lib/request.js'] },
    'test/static.test.js': { kind: 'depends', on: ['test/fixtures/b.txt'] },
    'test/new.test.js': { kind: 'unmapped' },
  });
  // Read as well as listed: a modification meets it.
  const read = selectAffected({ testFiles, changed: ['test/fixtures/a.txt'], addedOrRemoved: [], map });
  expect(read.full === false && [...read.run.keys()]).toEqual(['test/static.test.js', 'test/new.test.js']);
});

it('a file two tests read runs both; a change nothing read runs only what has no map', () => {
  const both = selectAffected({ testFiles, changed: ['lib/utils.js'], map });
  expect(both.full === false && [...both.run.keys()]).toEqual(['test/router.test.js', 'test/request.test.js', 'test/new.test.js']);
  const none = selectAffected({ testFiles, changed: ['README.md'], map });
  expect(none.full === false && [...none.run.keys()]).toEqual(['test/new.test.js']);
  expect(none.full === false && none.causes).toEqual([]);
});

it('runs everything without a map, or when a lock file, a manifest, sluice.yml or an always_full glob changed', () => {
  expect(selectAffected({ testFiles, changed: ['lib/request.js'], map: null })).toEqual({ full: true, reason: 'no dependency map of an ancestor commit yet' });
  for (const file of ['package-lock.json', 'packages/api/package.json', 'Gemfile.lock', 'sluice.yml', 'go.sum', 'requirements-dev.txt', 'app.gemspec']) {
    expect(selectAffected({ testFiles, changed: ['lib/request.js', file], map })).toMatchObject({ full: true, reason: expect.stringContaining(file) });
  }
  const globs = ['jest.config.js', 'test/support/**'];
  expect(selectAffected({ testFiles, changed: ['test/support/db.js'], map, alwaysFull: globs })).toEqual({
    full: true,
    reason: 'test/support/db.js changed (matches always_full test/support/**)',
  });
  expect(needsFullRun('lib/package.json.md', globs)).toBeNull();
  expect(needsFullRun('docs/jest.config.js', globs)).toBeNull();
  expect(needsFullRun('jest.config.js', globs)).toBe('jest.config.js changed (matches always_full jest.config.js)');
});

it('says what ran and why, in the words the build page and the report use', () => {
  const selection = selectAffected({ testFiles, changed: ['lib/utils.js', 'test/new.test.js'], map });
  if (selection.full) throw new Error('expected a selection');
  const summary = selectedSummary(selection);
  expect(summary).toEqual({
    mode: 'selected',
    map_commit: 'a'.repeat(40),
    ran: 3,
    total: 6,
    causes: ['lib/utils.js'],
    reasons: { 'test/router.test.js': 'depends on lib/utils.js', 'test/request.test.js': 'depends on lib/utils.js', 'test/new.test.js': 'changed' },
  });
  expect(describeSelection(summary)).toBe('Ran 3 of 6 test files, affected by lib/utils.js; the rest were not affected (dependency map of aaaaaaaaaa).');
  expect(describeReason({ kind: 'unmapped' })).toBe('no map yet');
  expect(describeSelection({ mode: 'full', reason: '[ci full] in the commit message' })).toBe('Ran every test file: [ci full] in the commit message.');
  expect(describeSelection({ mode: 'map', commit: 'b'.repeat(40) })).toBe('Ran every test file, each alone under strace, and recorded the dependency map at bbbbbbbbbb.');
  const many = { ...summary, causes: Array.from({ length: 12 }, (_, i) => `lib/m${i}.js`) };
  expect(describeSelection(many)).toMatch(/lib\/m9\.js and 2 more;/);
});

it('says what a mapping run cost', () => {
  expect(describeSelection({ mode: 'map', commit: 'c'.repeat(40), cost: { files: 51, traced_ms: 86_400, usual_ms: 29_150 } })).toBe(
    'Ran every test file, each alone under strace, and recorded the dependency map at cccccccccc; tracing cost 86.4 s of test time for 51 files, which took 29.1 s in the builds before.',
  );
});

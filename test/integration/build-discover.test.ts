/**
 * discoverTests on a real tree on disk: matching, ordering, `.git`, symlinks, bad patterns.
 */
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { discoverTests, InvalidPatternError } from '../../src/steps/tests/discover';

let tmp: string;
let root: string;

async function file(rel: string, content = '#!/bin/sh\n'): Promise<void> {
  await mkdir(dirname(join(root, rel)), { recursive: true });
  await writeFile(join(root, rel), content);
}

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'sluice-discover-'));
  root = join(tmp, 'repo');
  await file('tests/b.sh');
  await file('tests/a.sh');
  await file('tests/B.sh');
  await file('tests/nested/deep/c.sh');
  await file('tests/readme.md');
  await file('tests/.hidden.sh');
  await file('tests/.dot/d.sh');
  await mkdir(join(root, 'tests/dir.sh'), { recursive: true }); // a directory that matches
  await file('tests/dir.sh/inner.txt');
  await file('.git/hooks/x.sh');
  await file('.git/tests/a.sh');
  await file('vendor/.git/z.sh');
  await file('top.sh');
  // Outside the repository, reachable only through symlinks.
  await mkdir(join(tmp, 'outside'), { recursive: true });
  await writeFile(join(tmp, 'outside', 'secret.sh'), 'secret\n');
  await symlink(join(tmp, 'outside', 'secret.sh'), join(root, 'tests/escape.sh'));
  await symlink('../../outside', join(root, 'tests/outdir'));
  await symlink('a.sh', join(root, 'tests/link-inside.sh'));
  await symlink('nested', join(root, 'tests/linkdir'));
  await symlink('missing.sh', join(root, 'tests/dangling.sh'));
  await symlink('../.git/hooks/x.sh', join(root, 'tests/into-git.sh'));
});

afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('discoverTests', () => {
  it('returns matching files only, sorted, relative to the repository root', async () => {
    expect(await discoverTests(root, 'tests/*.sh')).toEqual(['tests/B.sh', 'tests/a.sh', 'tests/b.sh']);
  });

  it('descends with **, but never into .git, dot directories or symlinked directories', async () => {
    expect(await discoverTests(root, '**/*.sh')).toEqual([
      'tests/B.sh',
      'tests/a.sh',
      'tests/b.sh',
      'tests/nested/deep/c.sh',
      'top.sh',
    ]);
  });

  it('matches dot paths only when the pattern names them, and still never .git', async () => {
    expect(await discoverTests(root, 'tests/.dot/*.sh')).toEqual(['tests/.dot/d.sh']);
    expect(await discoverTests(root, '.git/**/*.sh')).toEqual([]);
    expect(await discoverTests(root, '**/.git/*.sh')).toEqual([]);
  });

  it('supports braces and exact names', async () => {
    expect(await discoverTests(root, 'tests/{a,b}.sh')).toEqual(['tests/a.sh', 'tests/b.sh']);
    expect(await discoverTests(root, 'top.sh')).toEqual(['top.sh']);
    expect(await discoverTests(root, 'tests/none-*.sh')).toEqual([]);
  });

  it('does not expand a directory name into its contents', async () => {
    expect(await discoverTests(root, 'tests/dir.sh')).toEqual([]);
    expect(await discoverTests(root, 'tests')).toEqual([]);
  });

  it('never returns or follows symlinks, so none can lead out of the repository (or into .git)', async () => {
    const all = await discoverTests(root, 'tests/**');
    expect(all).not.toContain('tests/link-inside.sh');
    expect(all.some((p) => p.startsWith('tests/linkdir'))).toBe(false);
    expect(all).not.toContain('tests/escape.sh');
    expect(all).not.toContain('tests/into-git.sh');
    expect(all).not.toContain('tests/dangling.sh');
    expect(all.some((p) => p.startsWith('tests/outdir'))).toBe(false);
    expect(await discoverTests(root, 'tests/outdir/*.sh')).toEqual([]);
    expect(await discoverTests(root, 'tests/escape.sh')).toEqual([]);
  });

  it.each(['../outside/*.sh', 'tests/../../outside/*.sh', '{tests,..}/outside/*.sh', '/etc/*', '/tmp/**/*.sh', ''])(
    'rejects the pattern %j',
    async (pattern) => {
      await expect(discoverTests(root, pattern)).rejects.toThrow(InvalidPatternError);
    },
  );

  it('fails when the working tree does not exist', async () => {
    await expect(discoverTests(join(tmp, 'nope'), '*.sh')).rejects.toThrow(/ENOENT/);
  });
});

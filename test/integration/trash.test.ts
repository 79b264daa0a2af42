/**
 * Old checkouts and cache copies leave at low priority (steps/trash.ts): the name is free the
 * moment removeTree or the sweep returns, and the files are deleted afterwards by `rm` at nice 19
 * and idle I/O class, so a sweep landing in another build's test span does not take its cores.
 * Real files, real `nice`/`ionice`/`rm`; an `rm` wrapper first on PATH records the priority it
 * was started at, then runs the real one.
 */
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { holdTree, homeDir, removeTree, sweepTrees, treeDir } from '../../src/steps/checkout/tree';
import type { BuildRecords } from '../../src/steps/records';
import { discard, emptyTrash, trashSettled } from '../../src/steps/trash';

let tmp: string;
let priorities: string;
const savedPath = process.env.PATH;

/** A checkout as a build leaves it: files, a node_modules, the marker, the worker's home. */
async function plantTree(workdir: string): Promise<void> {
  await mkdir(join(workdir, 'node_modules', 'left-pad'), { recursive: true });
  await writeFile(join(workdir, 'node_modules', 'left-pad', 'index.js'), 'module.exports = 1;\n');
  await writeFile(join(workdir, 'a.test.js'), '\n');
  await writeFile(`${workdir}.json`, '{"commitId":"abc","pristine":false}');
  await mkdir(join(homeDir(workdir), '.npm'), { recursive: true });
}

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'sluice-trash-'));
  const bin = join(tmp, 'bin');
  priorities = join(tmp, 'priorities.log');
  await mkdir(bin);
  // Field 19 of /proc/<pid>/stat is the process's nice value.
  await writeFile(join(bin, 'rm'), `#!/bin/sh\necho "$(awk '{print $19}' /proc/$$/stat) $(ionice -p $$)" >> '${priorities}'\nexec /bin/rm "$@"\n`);
  await chmod(join(bin, 'rm'), 0o755);
  process.env.PATH = `${bin}:${savedPath}`;
});

afterAll(async () => {
  process.env.PATH = savedPath;
  await rm(tmp, { recursive: true, force: true });
});

const records = (ended: number[]) => ({ endedSessions: async (ids: number[]) => ids.filter((id) => ended.includes(id)) }) as unknown as BuildRecords;

describe('removing trees at low priority', () => {
  test('removeTree frees the name at once; the files go afterwards, by an rm at nice 19 and idle I/O', async () => {
    const ws = join(tmp, 'ws1');
    const workdir = treeDir(ws, 7, 1);
    await plantTree(workdir);
    await removeTree(workdir);
    // The caller may check a fresh tree out under the same name straight away.
    expect(existsSync(workdir)).toBe(false);
    expect(existsSync(`${workdir}.json`)).toBe(false);
    expect(existsSync(homeDir(workdir))).toBe(false);
    await mkdir(workdir);
    await trashSettled();
    expect(await readdir(join(ws, '.trash'))).toEqual([]);
    expect(existsSync(workdir)).toBe(true);
    const lines = (await readFile(priorities, 'utf8')).trim().split('\n');
    expect(lines.length).toBeGreaterThanOrEqual(2);
    for (const line of lines) expect(line).toBe('19 idle');
  });

  test('the sweep frees the trees of ended sessions only, never one a step still holds', async () => {
    const ws = join(tmp, 'ws2');
    for (const [id, lane] of [[1, 0], [1, 1], [2, 0], [3, 0]] as const) await plantTree(treeDir(ws, id, lane));
    const release = holdTree(treeDir(ws, 3));
    // Besides the trash, the place where trees wait while they are retired (tree.ts), empty once the sweep is done.
    const listing = async () => {
      expect(await readdir(join(ws, '.retiring')).catch(() => [])).toEqual([]);
      return (await readdir(ws)).filter((n) => n !== '.retiring').sort();
    };
    await sweepTrees({ records: records([1, 3]), workspaceDir: ws });
    // Session 1 ended: both lanes gone. 2 runs on. 3 ended but its tree is held (a push in flight).
    expect(await listing()).toEqual(['.trash', 'session-2', 'session-2.home', 'session-2.json', 'session-3', 'session-3.home', 'session-3.json']);
    release();
    await sweepTrees({ records: records([1, 3]), workspaceDir: ws });
    expect(await listing()).toEqual(['.trash', 'session-2', 'session-2.home', 'session-2.json']);
    await trashSettled();
    expect(await readdir(join(ws, '.trash'))).toEqual([]);
  });

  test('trash a runner left when it died is deleted by the next one', async () => {
    const trash = join(tmp, 'ws3', '.trash');
    await mkdir(join(trash, '999-1-session-4', 'node_modules'), { recursive: true });
    // Not yet abandoned: a live runner sharing the workspace may be deleting it.
    await emptyTrash(trash);
    await trashSettled();
    expect(await readdir(trash)).toEqual(['999-1-session-4']);
    await emptyTrash(trash, 0);
    await trashSettled();
    expect(await readdir(trash)).toEqual([]);
  });

  test('a path that is not there is fine', async () => {
    const trash = join(tmp, 'ws4', '.trash');
    await discard([join(tmp, 'ws4', 'nothing')], trash);
    await trashSettled();
    expect(await readdir(trash)).toEqual([]);
  });
});

/**
 * Live output's writer (steps/liveOutput.ts) on real processes (steps/process.ts) and a real
 * PostgreSQL: a running process's output is in the database while it runs, masked even where a
 * secret was split between two flushes, bounded, numbered in order across processes that write
 * at once; a process that ends before the first flush writes nothing; a hook streams as its row.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runHook } from '../../src/steps/hooks';
import { liveOutput, type LiveOutputOptions } from '../../src/steps/liveOutput';
import { runProcess, type ProcessResult } from '../../src/steps/isolation/process';
import { lastOutputSeq, readOutput, type OutputSource } from '../../src/db/outputChunks';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { insertPostSession } from '../support/postSession';
import { eventually } from '../support/wait';
import { pgBuildRecords } from '../../src/db/buildRecords';

let db: TestDatabase;
let tmp: string;

beforeAll(async () => {
  db = await createTestDatabase('sluice_live');
  tmp = await mkdtemp(join(tmpdir(), 'sluice-live-'));
});
afterAll(async () => {
  await db?.drop();
  await rm(tmp, { recursive: true, force: true });
});

const session = async () => (await insertPostSession(db.pool, Buffer.alloc(32, 7))).sessionId;
const file = (path: string): OutputSource => ({ kind: 'file', worker: 1, path, attempt: 1, run: 1 });

/** Runs `sh -c script` with its output live as `source`'s; the result once the writer is done too. */
async function run(sessionId: number, script: string, opts: { secrets?: string[]; source?: OutputSource } & LiveOutputOptions = {}): Promise<ProcessResult> {
  const live = liveOutput(pgBuildRecords(db.pool, Buffer.alloc(32)), sessionId, opts.source ?? file('test/a_test.sh'), opts.secrets ?? [], opts);
  const result = await runProcess({ argv: ['/bin/sh', '-c', script], viaShell: true, cwd: tmp, env: { PATH: '/usr/bin:/bin' }, program: 'sh', dirs: { tree: tmp, home: tmp }, timeoutMs: 30_000, onOutput: live.onOutput });
  await live.end(result);
  return result;
}

const rowsOf = (sessionId: number) => readOutput(db.pool, sessionId, 0, 10_000);

describe('live output', () => {
  it('writes nothing for a process that ends before the first flush', async () => {
    const id = await session();
    const result = await run(id, 'echo quick; echo done >&2');
    expect(result.output).toBe('quick\ndone\n');
    expect(await rowsOf(id)).toEqual([]);
    expect(await lastOutputSeq(db.pool, id)).toBe(0);
  });

  it('is in the database while the process runs, then ends with its status', async () => {
    const id = await session();
    const marker = join(tmp, `go-${id}`);
    const running = run(id, `echo first line; while [ ! -e ${marker} ]; do sleep 0.05; done; echo last line; exit 3`);
    // The first line is there while the process still waits for the marker.
    await eventually('the first line, live', async () => (await rowsOf(id)).some((r) => r.text.includes('first line')), 10_000);
    expect((await rowsOf(id)).every((r) => r.end_status === null)).toBe(true);
    await writeFile(marker, '');
    const result = await running;
    expect(result).toMatchObject({ status: 'failed', exitCode: 3 });
    const rows = await rowsOf(id);
    expect(rows.map((r) => r.text).join('')).toBe('first line\nlast line\n');
    expect(rows.map((r) => r.seq)).toEqual(rows.map((_, i) => i + 1));
    expect(rows.at(-1)).toMatchObject({ kind: 'file', path: 'test/a_test.sh', worker: 1, attempt: 1, run: 1, end_status: 'failed', exit_code: 3 });
    expect(rows.slice(0, -1).every((r) => r.end_status === null)).toBe(true);
  });

  it('masks a secret split between two flushes: no row holds a piece of it', async () => {
    const id = await session();
    const secret = 'tok-4f9a8b7c6d5e';
    // The secret's first half, a pause of several flushes, then its second half.
    const result = await run(id, `echo "line one"; printf 'token=tok-4f9a'; sleep 0.8; printf '8b7c6d5e done\\n'; sleep 0.4`, { secrets: [secret] });
    expect(result.output).toContain(secret); // the process printed it whole (stored output is masked by its caller)
    const rows = await rowsOf(id);
    expect(rows.map((r) => r.text).join('')).toBe('line one\ntoken=**** done\n');
    // Written in pieces: the first line before the pause, the rest after it.
    expect(rows.length).toBeGreaterThanOrEqual(2);
    expect(rows[0]!.text).toContain('line one');
    for (const row of rows) {
      for (let at = 0; at + 4 <= secret.length; at++) expect(row.text).not.toContain(secret.slice(at, at + 4));
    }
  });

  it('streams the first maxBytes of a process and says it stopped there; the stored tail is whole', async () => {
    const id = await session();
    // 400 KB at once, then a pause so the writer has flushed before the end.
    const result = await run(id, `i=0; while [ $i -lt 4000 ]; do printf '%099d\\n' $i; i=$((i+1)); done; sleep 0.6; echo FINAL LINE`, { maxBytes: 100_000 });
    const text = (await rowsOf(id)).map((r) => r.text).join('');
    expect(text.startsWith(`${'0'.repeat(99)}\n`)).toBe(true);
    expect(text).toContain('[sluice] live output stops after the first 100000 bytes; the end of the output is kept with the result\n');
    expect(text.length).toBeLessThan(100_000 + 200);
    expect(text).not.toContain('FINAL LINE');
    expect(result.output.endsWith('FINAL LINE\n')).toBe(true);
    // Each row is bounded too (64 Ki characters).
    expect(Math.max(...(await rowsOf(id)).map((r) => r.text.length))).toBeLessThanOrEqual(64 * 1024);
  });

  it('numbers the rows of processes that write at once in one order, each process in its own order', async () => {
    const id = await session();
    const script = (name: string) => `i=0; while [ $i -lt 12 ]; do echo ${name} $i; i=$((i+1)); sleep 0.07; done`;
    await Promise.all([
      run(id, script('a'), { source: file('test/a_test.sh'), flushMs: 50 }),
      run(id, script('b'), { source: { kind: 'file', worker: 2, path: 'test/b_test.sh', attempt: 1, run: 1 }, flushMs: 50 }),
    ]);
    const rows = await rowsOf(id);
    expect(rows.map((r) => r.seq)).toEqual(rows.map((_, i) => i + 1));
    const lines = (worker: number) => rows.filter((r) => r.worker === worker).map((r) => r.text).join('');
    expect(lines(1)).toBe(Array.from({ length: 12 }, (_, i) => `a ${i}\n`).join(''));
    expect(lines(2)).toBe(Array.from({ length: 12 }, (_, i) => `b ${i}\n`).join(''));
    expect(new Set(rows.map((r) => r.worker))).toEqual(new Set([1, 2]));
  });

  it('ends as an error when what it watches throws, and writes nothing after', async () => {
    const id = await session();
    const live = liveOutput(pgBuildRecords(db.pool, Buffer.alloc(32)), id, file('test/thrown_test.sh'), []);
    live.onOutput(Buffer.from('before the throw\n'));
    const thrown = live.watch(new Promise<ProcessResult>((_, reject) => setTimeout(() => reject(new Error('no home for the file')), 400)));
    await expect(thrown).rejects.toThrow('no home for the file');
    live.onOutput(Buffer.from('after the end\n'));
    await new Promise((resolve) => setTimeout(resolve, 400));
    const rows = await rowsOf(id);
    expect(rows.map((r) => r.text).join('')).toBe('before the throw\n');
    expect(rows.at(-1)).toMatchObject({ end_status: 'error', exit_code: null });
  });

  it('streams a hook as its session_hooks row, masked with its secrets', async () => {
    const id = await session();
    const outcome = await runHook(
      { records: pgBuildRecords(db.pool, Buffer.alloc(32)), sessionId: id, worker: 2, runner: 'host-1', tree: tmp, home: tmp, env: { PATH: '/usr/bin:/bin', TOKEN: 'hook-secret-42' }, secrets: ['hook-secret-42'], timeoutMs: 30_000 },
      { name: 'worker_setup', command: 'echo "setting up with $TOKEN"; sleep 0.5; echo ready' },
    );
    expect(outcome.output).toBe('setting up with ****\nready\n');
    const rows = await rowsOf(id);
    expect(rows.map((r) => r.text).join('')).toBe('setting up with ****\nready\n');
    expect(rows.at(-1)).toMatchObject({ kind: 'hook', hook_name: 'worker_setup', hook_worker: 2, end_status: 'passed', exit_code: 0 });
  });
});

/**
 * Deleting what a build leaves (a checkout with its node_modules, a local cache copy) without
 * slowing the builds running beside it. Removing a big tree is seconds of kernel work; done by
 * the runner's own threads it ran at the tests' priority and took a fifth of a 2-core machine
 * from a jest run whenever a sweep landed in its test span. So a tree is renamed out of its place
 * at once (all a caller waits for: the name is free again) into a trash directory on the same
 * filesystem, and deleted later by one `rm -rf` at a time at the lowest CPU and I/O priority,
 * which takes the cores only when nothing else wants them.
 */
import { spawn } from 'node:child_process';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';

/** Entries older than this in a trash directory were left by a runner that died mid-delete (a live one deletes its own within seconds). */
const ABANDONED_MS = 10 * 60_000;

let serial = 0;
let queue: Promise<void> = Promise.resolve();
/** Paths this process has queued and not yet deleted. */
const pending = new Set<string>();
/** null until the first deletion finds out whether `ionice` is here. */
let haveIonice: boolean | null = null;

/**
 * Moves each of `paths` (missing ones are fine) into `trashDir` and queues its deletion. When a
 * path cannot be moved (another filesystem), it is deleted here and now, as before.
 */
export async function discard(paths: string[], trashDir: string): Promise<void> {
  // The trash is the runner's alone; whatever holds it keeps its own mode (a workspace is 0711).
  await mkdir(path.dirname(trashDir), { recursive: true });
  await mkdir(trashDir, { mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw err;
  });
  for (const p of paths) {
    const target = path.join(trashDir, `${process.pid}-${++serial}-${path.basename(p)}`);
    try {
      await rename(p, target);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') continue;
      await rm(p, { recursive: true, force: true });
      continue;
    }
    enqueue(target);
  }
}

/** Queues the deletion of trash a runner that died left in `trashDir`: what has been there `abandonedMs`. */
export async function emptyTrash(trashDir: string, abandonedMs = ABANDONED_MS): Promise<void> {
  const names = await readdir(trashDir).catch(() => [] as string[]);
  for (const name of names) {
    const at = path.join(trashDir, name);
    if (pending.has(at)) continue;
    // A rename sets the moved entry's ctime: how long it has been trash.
    const info = await stat(at).catch(() => null);
    if (info && Date.now() - info.ctimeMs >= abandonedMs) enqueue(at);
  }
}

/** Resolves once everything queued so far is deleted (for tests; a runner that stops leaves the rest to the next sweep of its workspace). */
export function trashSettled(): Promise<void> {
  return queue;
}

function enqueue(target: string): void {
  pending.add(target);
  queue = queue.then(async () => {
    try {
      await lowPriorityRemove(target);
    } catch (err) {
      console.warn(`sluice runner: could not delete ${target}: ${(err as Error).message}`);
    } finally {
      pending.delete(target);
    }
  });
}

async function lowPriorityRemove(target: string): Promise<void> {
  const rmArgs = ['-n', '19', 'rm', '-rf', '--', target];
  if (haveIonice !== false) {
    try {
      await runQuiet('ionice', ['-c', '3', 'nice', ...rmArgs]);
      haveIonice = true;
      return;
    } catch (err) {
      // Missing, or refused here (some containers): nice alone from now on.
      if (haveIonice === true) throw err;
      haveIonice = false;
    }
  }
  await runQuiet('nice', rmArgs);
}

function runQuiet(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'], env: process.env });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < 2000) stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited ${code}: ${stderr.trim()}`))));
  });
}

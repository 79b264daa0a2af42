/**
 * Artifacts: after a worker's tests, the files of its checkout that match the build's
 * `artifacts` globs are copied into the blob store and listed in the database, for the build
 * page, the report and `GET /api/v1/sessions/:id/artifacts`.
 *
 * The checkout is the build's, and build code is untrusted, while the runner reads as root. So
 * only regular files that are really inside the tree are kept: a symbolic link is never
 * followed (neither a file that is one, nor a directory on the way), nothing in `.git`, no hard
 * link to a file the build does not own, and what was opened is checked again after opening
 * (a process the build left behind could swap a file for a link in between). Bytes are copied
 * from the opened file, never by path. Store keys are `artifacts/<session>/<worker>/<id>`:
 * nothing of a path the build chose.
 *
 * Limits: one file (`maxFileBytes`), all of a build's (`maxBuildBytes`, over every worker of
 * the session, reserved in the database before copying, so workers collecting at once cannot
 * pass it together), and MAX_ARTIFACT_FILES files a build. What is left out is said in `notes`;
 * a file problem never throws.
 */
import { constants, createWriteStream } from 'node:fs';
import { lstat, mkdtemp, open, readlink, realpath, rm, stat, writeFile, type FileHandle } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { matchFiles } from './files';
import { MAX_ARTIFACT_FILES } from '../config';
import type { BlobStore } from '../store';
import type { BuildRecords } from './records';

export interface ArtifactDeps {
  records: BuildRecords;
  store: BlobStore;
  limits: { maxFileBytes: number; maxBuildBytes: number };
}

export interface ArtifactJob {
  sessionId: number;
  /** 1..N */
  worker: number;
  /** The worker's checkout. */
  tree: string;
  /** Globs relative to the checkout (sluice.yml's or the suite's `artifacts`). */
  patterns: string[];
}

export interface ArtifactResult {
  /** Files kept now, and their bytes. */
  files: number;
  bytes: number;
  /** What was left out and why, for the worker's notes on the build page; at most MAX_NOTES lines. */
  notes: string[];
}

export { MAX_ARTIFACT_FILES };
/** Lines of notes one worker's collection gives at most (the last says how many more were left out). */
export const MAX_NOTES = 20;

// `..` as a whole path segment, including inside brace alternatives like `{a,..}/x`.
const PARENT_SEGMENT = /(^|[/\\{,])\.\.($|[/\\},])/;

/** Why `pattern` is not an acceptable artifacts glob, or null when it is. */
export function checkArtifactPattern(pattern: string): string | null {
  if (pattern.trim() === '') return 'an empty pattern';
  if (pattern.includes('\0')) return 'a pattern with a NUL byte';
  if (path.isAbsolute(pattern) || pattern.startsWith('\\') || /^[a-zA-Z]:/.test(pattern) || pattern.startsWith('~')) {
    return `${JSON.stringify(pattern)} is not relative to the checkout`;
  }
  if (PARENT_SEGMENT.test(pattern)) return `${JSON.stringify(pattern)} climbs out with '..'`;
  return null;
}

const isGitPath = (rel: string): boolean => rel.split('/').includes('.git');

/** `target` relative to `root` with `/`, or null when it is not inside it. */
function inside(root: string, target: string): string | null {
  const rel = path.relative(root, target);
  if (rel === '' || rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) return null;
  return rel.split(path.sep).join('/');
}

const mib = (bytes: number): string => (bytes >= 1024 * 1024 ? `${(bytes / (1024 * 1024)).toFixed(1)} MiB` : `${bytes} bytes`);

/**
 * After a worker's tests: the files of `tree` matching `patterns` (globs relative to the
 * checkout), stored and listed. A worker collecting again (retried after its runner died)
 * first drops what it kept before. Never throws for a file problem: notes say what was left
 * out (over a limit, unreadable, a link). A store that fails ends the collection, said in the
 * notes; a database that fails throws.
 */
export async function collectArtifacts(deps: ArtifactDeps, job: ArtifactJob): Promise<ArtifactResult> {
  const notes = new Notes();
  const result = { files: 0, bytes: 0 };

  // A retried worker replaces its own earlier artifacts. Blobs that cannot be deleted now stay
  // under the session's prefix, and go with the session.
  for (const key of await deps.records.deleteWorkerArtifacts(job.sessionId, job.worker)) {
    await deps.store.delete(key).catch(() => undefined);
  }

  const patterns: string[] = [];
  for (const p of job.patterns) {
    const problem = checkArtifactPattern(p);
    if (problem) notes.add(`artifacts: pattern refused: ${problem}`);
    else patterns.push(p);
  }
  if (patterns.length === 0) return { ...result, notes: notes.lines() };

  let root: string;
  let owner: number;
  try {
    root = await realpath(job.tree);
    owner = (await stat(root)).uid;
  } catch (err) {
    notes.add(`artifacts: the checkout cannot be read (${(err as Error).message})`);
    return { ...result, notes: notes.lines() };
  }

  // Each pattern apart, so one that matches nothing can be named.
  const matched = new Set<string>();
  for (const pattern of patterns) {
    const found = await matchFiles(root, pattern).catch((err: Error) => {
      notes.add(`artifacts: ${JSON.stringify(pattern)} could not be matched (${err.message})`);
      return null;
    });
    if (found === null) continue;
    const kept = found.filter((rel) => !isGitPath(rel));
    if (kept.length === 0) {
      const isDir = await lstat(path.join(root, pattern)).then((i) => i.isDirectory(), () => false);
      notes.add(`artifacts: no file matches ${JSON.stringify(pattern)}${isDir ? ` (a directory: ${JSON.stringify(`${pattern.replace(/\/+$/, '')}/**`)} names its files)` : ''}`);
    }
    for (const rel of kept) matched.add(rel);
  }
  const files = [...matched].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  if (files.length === 0) return { ...result, notes: notes.lines() };

  const scratch = await mkdtemp(path.join(os.tmpdir(), 'sluice-artifacts-'));
  try {
    for (let i = 0; i < files.length; i++) {
      const rel = files[i]!;
      const outcome = await keepOne(deps, job, root, owner, rel, path.join(scratch, 'copy'));
      if (outcome.kind === 'kept') {
        result.files += 1;
        result.bytes += outcome.bytes;
      } else if (outcome.kind === 'skipped') {
        notes.add(`artifacts: ${rel} left out: ${outcome.why}`);
      } else {
        const rest = files.length - i;
        notes.add(`artifacts: ${outcome.why}; ${rest} file${rest === 1 ? '' : 's'} not kept`);
        break;
      }
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  return { ...result, notes: notes.lines() };
}

type Outcome = { kind: 'kept'; bytes: number } | { kind: 'skipped'; why: string } | { kind: 'stop'; why: string };

async function keepOne(deps: ArtifactDeps, job: ArtifactJob, root: string, owner: number, rel: string, copy: string): Promise<Outcome> {
  const full = path.join(root, rel);
  // Before opening anything: the file itself is no link, and no directory on the way is one
  // (its real path is where the glob saw it).
  const before = await lstat(full).catch(() => null);
  if (!before) return { kind: 'skipped', why: 'gone or unreadable' };
  if (before.isSymbolicLink()) return { kind: 'skipped', why: 'a symbolic link (never followed)' };
  if (!before.isFile()) return { kind: 'skipped', why: 'not a regular file' };
  const real = await realpath(full).catch(() => null);
  if (real === null || inside(root, real) !== rel) return { kind: 'skipped', why: 'reached through a symbolic link (never followed)' };

  let handle: FileHandle;
  try {
    // O_NOFOLLOW: a file swapped for a link since is not opened; O_NONBLOCK: nor does a FIFO hang us.
    handle = await open(full, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { kind: 'skipped', why: code === 'ELOOP' ? 'a symbolic link (never followed)' : `unreadable (${code ?? (err as Error).message})` };
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) return { kind: 'skipped', why: 'not a regular file' };
    // What was opened, wherever the path led meanwhile (Linux; elsewhere the path's real path again).
    const opened = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => realpath(full).catch(() => null));
    const openedRel = opened === null ? null : inside(root, opened);
    if (openedRel === null || isGitPath(openedRel)) return { kind: 'skipped', why: 'reached through a symbolic link (never followed)' };
    // A second name of somebody else's file (`ln /etc/shadow coverage/x`): not the build's to keep.
    if (info.nlink > 1 && info.uid !== owner) return { kind: 'skipped', why: 'a hard link to a file the build does not own' };
    const size = info.size;
    if (size > deps.limits.maxFileBytes) return { kind: 'skipped', why: `${mib(size)}, over the limit of one file (${mib(deps.limits.maxFileBytes)})` };

    const reserved = await deps.records.reserveArtifact({ sessionId: job.sessionId, worker: job.worker, path: rel, size }, { maxBuildBytes: deps.limits.maxBuildBytes, maxFiles: MAX_ARTIFACT_FILES });
    if (!reserved.ok) {
      if (reserved.why === 'gone') return { kind: 'stop', why: 'the build is gone (deleted meanwhile)' };
      if (reserved.why === 'files') return { kind: 'stop', why: `the build keeps at most ${MAX_ARTIFACT_FILES} files` };
      return { kind: 'skipped', why: `${mib(size)}, over the build's limit (${mib(deps.limits.maxBuildBytes)}, ${mib(reserved.bytes)} kept already)` };
    }

    // From the open file, at most the size reserved (a file still growing is cut there).
    try {
      if (size === 0) await writeFile(copy, '', { mode: 0o600 });
      else await pipeline(handle.createReadStream({ start: 0, end: size - 1, autoClose: false }), createWriteStream(copy, { mode: 0o600 }));
    } catch (err) {
      await deps.records.dropArtifact(reserved.id);
      return { kind: 'skipped', why: `unreadable (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` };
    }
    const copied = (await stat(copy)).size;
    try {
      await deps.store.putFile(reserved.storeKey, copy);
    } catch (err) {
      await deps.records.dropArtifact(reserved.id);
      return { kind: 'stop', why: `the store (${deps.store.description}) failed: ${(err as Error).message}` };
    } finally {
      await rm(copy, { force: true });
    }
    if (!(await deps.records.markArtifactStored(reserved.id, copied))) {
      // Its row went meanwhile (the session deleted, or a newer attempt of this worker): so does the blob.
      await deps.store.delete(reserved.storeKey).catch(() => undefined);
      return { kind: 'stop', why: 'the build is gone (deleted meanwhile)' };
    }
    return { kind: 'kept', bytes: copied };
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** Notes, at most MAX_NOTES lines: past that, the last line says how many more there were. */
class Notes {
  private readonly kept: string[] = [];
  private count = 0;

  add(line: string): void {
    this.count += 1;
    if (this.kept.length < MAX_NOTES) this.kept.push(line);
  }

  lines(): string[] {
    if (this.count <= MAX_NOTES) return [...this.kept];
    const shown = this.kept.slice(0, MAX_NOTES - 1);
    return [...shown, `artifacts: ${this.count - shown.length} more notes like these`];
  }
}

/**
 * A mapping run's side of a lane (issue 40): each test file runs alone under strace, and what its
 * run touched in the repository (fileTrace.ts) is recorded as its part of the dependency map.
 *
 * Only a run that passed is recorded, and only when its trace shows the test file itself read or
 * run: a file that failed, timed out or was killed may have stopped before reading what it
 * depends on, and a trace that never saw the file is not that file's. A file not recorded stays
 * without a map, and every selecting build runs it.
 */
import { constants } from 'node:fs';
import { access, open, realpath, rm } from 'node:fs/promises';
import path from 'node:path';
import { SANDBOX_TREE, type Sandbox } from '../isolation/sandbox';
import { straceKit } from '../isolation/straceKit';
import type { BuildRecords } from '../records';
import { parseFileTrace, STRACE } from './fileTrace';

/** Traces larger than this are not read (the file stays unmapped). */
export const MAX_TRACE_BYTES = 256 * 1024 * 1024;

export interface Tracer {
  /** Where the next file's trace goes (in the worker's home, which the test's user can write). */
  traceFile: string;
  /** The sandbox traced runs use: in an image, with the runner's strace brought in. */
  sandbox?: Sandbox;
  /** Reads the trace of `file`'s run, records it if it can be trusted, and removes it. */
  record(file: string, status: string): Promise<void>;
}

/**
 * The lane's tracer, or why it cannot trace: strace missing on this runner, or (in an image, which
 * gets the runner's: isolation/straceKit.ts) what it loads. The files then run untraced, and stay
 * unmapped.
 */
export async function laneTracer(input: { records: BuildRecords; sessionId: number; lane: number; workdir: string; home: string; sandbox?: Sandbox }): Promise<Tracer | { note: string }> {
  const present = await access(STRACE, constants.X_OK).then(() => true, () => false);
  if (!present) return { note: `not traced for the dependency map: ${STRACE} is not installed on this runner` };
  let sandbox = input.sandbox;
  if (sandbox?.image) {
    try {
      sandbox = { ...sandbox, strace: await straceKit() };
    } catch (err) {
      return { note: `not traced for the dependency map: this runner's strace cannot be brought into the image (${err instanceof Error ? err.message : String(err)})` };
    }
  }
  // strace sees the tree where the test does: the sandbox's path for it, else the real one.
  const root = input.sandbox ? SANDBOX_TREE : await realpath(input.workdir);
  const traceFile = path.join(input.home, `.sluice-trace-${input.lane + 1}.txt`);
  return {
    traceFile,
    ...(sandbox ? { sandbox } : {}),
    async record(file, status) {
      try {
        if (status !== 'passed') return;
        const text = await readTrace(traceFile);
        if (text === null) return;
        const deps = parseFileTrace(text, root);
        if (!deps.reads.includes(file)) return;
        // Not recorded (PostgreSQL away a moment): the file stays unmapped, and selecting builds run it.
        await input.records.recordFileDeps(input.sessionId, file, deps).catch(() => undefined);
      } finally {
        await rm(traceFile, { force: true });
      }
    },
  };
}

/** The trace, read without following a link the test may have put in its place; null when it is missing or too large. */
async function readTrace(file: string): Promise<string | null> {
  const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW).catch(() => null);
  if (handle === null) return null;
  try {
    const info = await handle.stat();
    if (!info.isFile() || info.size > MAX_TRACE_BYTES) return null;
    return await handle.readFile({ encoding: 'utf8' });
  } finally {
    await handle.close();
  }
}

/**
 * Collecting JUnit XML results after a session's tests ran, as a plain function the
 * `collectResults` activity wraps: find the files the suite's `junit_pattern` names in the
 * working tree (the same glob rules as test discovery: inside the tree, no symlinks), parse
 * each (src/core/junit.ts), mask secrets out of every string, and store the cases in
 * `test_cases` and one row per file in `junit_files` (with what was wrong with it, if
 * anything). Idempotent: a retried activity replaces what an earlier attempt stored.
 *
 * Caps: 500 files, 16 MiB read per file, 20,000 cases per session; what is left out is noted.
 */
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { decodeReport, parseJUnit, type JUnitCase } from '../../core/junit';
import { maskSecrets } from '../../core/mask';
import { discoverTests, InvalidPatternError } from './discover';
import type { JUnitFileResult } from '../../db/testCases';
import type { BuildRecords } from '../records';
import { readUpTo } from '../files';

export interface CollectResultsInput {
  sessionId: number;
  workdir: string;
  pattern?: string | null;
  /** Whose checkout: each lane stores (and replaces) its own reports. Default 0. */
  lane?: number;
}

export interface CollectResultsResult {
  cases: number;
  failed: number;
}

export const JUNIT_LIMITS = { maxFiles: 500, maxFileBytes: 16 * 1024 * 1024, maxSessionCases: 20_000 };

export interface CollectDeps {
  records: BuildRecords;
}

/** The first `max` bytes of a file, and whether there was more. */
export async function readCapped(path: string, max: number): Promise<{ text: string; truncated: boolean }> {
  const handle = await open(path, 'r');
  try {
    const bytes = await readUpTo(handle, max + 1);
    return { text: decodeReport(bytes.subarray(0, max)), truncated: bytes.length > max };
  } finally {
    await handle.close();
  }
}


export async function collectJUnitResults(deps: CollectDeps, input: CollectResultsInput): Promise<CollectResultsResult> {
  const pattern = input.pattern === undefined ? await deps.records.suiteJUnitPatternOfSession(input.sessionId) : input.pattern;
  if (!pattern) return { cases: 0, failed: 0 };

  const files: JUnitFileResult[] = [];
  let matched: string[] = [];
  try {
    matched = await discoverTests(input.workdir, pattern);
  } catch (err) {
    if (!(err instanceof InvalidPatternError)) throw err;
    files.push({ file: pattern, cases: [], note: `invalid JUnit pattern: ${err.message.replace(/test pattern/g, 'pattern')}` });
  }
  if (matched.length > JUNIT_LIMITS.maxFiles) {
    files.push({
      file: pattern,
      cases: [],
      note: `${matched.length} files match; only the first ${JUNIT_LIMITS.maxFiles} were read`,
    });
    matched = matched.slice(0, JUNIT_LIMITS.maxFiles);
  }

  let total = 0;
  for (const file of matched) {
    const notes: string[] = [];
    let cases: JUnitCase[] = [];
    try {
      const { text, truncated } = await readCapped(join(input.workdir, file), JUNIT_LIMITS.maxFileBytes);
      const parsed = parseJUnit(text, { maxInput: Number.MAX_SAFE_INTEGER });
      cases = parsed.cases;
      if (truncated) notes.push(`the file is larger than ${JUNIT_LIMITS.maxFileBytes} bytes; only its beginning was read`);
      notes.push(...parsed.notes);
    } catch (err) {
      notes.push(`could not read the file: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    if (total + cases.length > JUNIT_LIMITS.maxSessionCases) {
      const room = Math.max(0, JUNIT_LIMITS.maxSessionCases - total);
      notes.push(`the session holds more than ${JUNIT_LIMITS.maxSessionCases} test cases; ${cases.length - room} of this file's were left out`);
      cases = cases.slice(0, room);
    }
    total += cases.length;
    files.push({ file, cases, note: notes.length > 0 ? notes.join('; ') : null });
  }

  // Secrets are masked out of everything stored, names included (a parametrized test may
  // carry a value in its name).
  const repoId = await deps.records.repoIdOfSession(input.sessionId);
  const secrets = repoId === null ? [] : Object.values((await deps.records.buildSecrets(repoId)).values);
  const clean = (s: string) => maskSecrets(s, secrets);
  const cleanOrNull = (s: string | null) => (s === null ? null : clean(s));

  const masked = files.map((f) => ({
    file: f.file,
    note: cleanOrNull(f.note),
    cases: f.cases.map((c) => ({ ...c, classname: clean(c.classname), name: clean(c.name), message: cleanOrNull(c.message), output: cleanOrNull(c.output) })),
  }));
  await deps.records.replaceJUnitResults(input.sessionId, input.lane ?? 0, masked);

  const failed = files.reduce((n, f) => n + f.cases.filter((c) => c.status === 'failed' || c.status === 'error').length, 0);
  return { cases: total, failed };
}

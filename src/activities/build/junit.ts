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
import type { Pool } from 'pg';
import { decodeReport, parseJUnit, type JUnitCase } from '../../core/junit';
import { maskSecrets } from '../../core/mask';
import type { CollectResultsInput, CollectResultsResult } from '../types';
import { discoverTests, InvalidPatternError } from './discover';
import { loadBuildSecrets, repoIdOfSession } from './secrets';
import { withTransaction } from '../../db/transaction';
import { storableText } from '../../db/text';

export const JUNIT_LIMITS = { maxFiles: 500, maxFileBytes: 16 * 1024 * 1024, maxSessionCases: 20_000 };

export interface CollectDeps {
  pool: Pool;
  secretKey: Buffer;
}

interface FileResult {
  file: string;
  cases: JUnitCase[];
  note: string | null;
}

/** The first `max` bytes of a file, and whether there was more. */
async function readCapped(path: string, max: number): Promise<{ text: string; truncated: boolean }> {
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(max + 1);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    const truncated = length > max;
    return { text: decodeReport(buffer.subarray(0, Math.min(length, max))), truncated };
  } finally {
    await handle.close();
  }
}

/** The suite's JUnit pattern for a session, or null. */
async function suitePattern(pool: Pool, sessionId: number): Promise<string | null> {
  const { rows } = await pool.query<{ junit_pattern: string | null }>(
    'SELECT su.junit_pattern FROM sessions s JOIN suites su ON su.id = s.suite_id WHERE s.id = $1',
    [sessionId],
  );
  return rows[0]?.junit_pattern ?? null;
}

export async function collectJUnitResults(deps: CollectDeps, input: CollectResultsInput): Promise<CollectResultsResult> {
  const pattern = input.pattern === undefined ? await suitePattern(deps.pool, input.sessionId) : input.pattern;
  if (!pattern) return { cases: 0, failed: 0 };

  const files: FileResult[] = [];
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
  const repoId = await repoIdOfSession(deps.pool, input.sessionId);
  const secrets = repoId === null ? [] : Object.values((await loadBuildSecrets(deps.pool, deps.secretKey, repoId)).values);
  const clean = (s: string) => storableText(maskSecrets(s, secrets));
  const cleanOrNull = (s: string | null) => (s === null ? null : clean(s));

  await withTransaction(deps.pool, async (client) => {
    await client.query('DELETE FROM test_cases WHERE session_id = $1', [input.sessionId]);
    await client.query('DELETE FROM junit_files WHERE session_id = $1', [input.sessionId]);
    for (const f of files) {
      await client.query(
        `INSERT INTO junit_files (session_id, file, cases, note) VALUES ($1, $2, $3, $4)
         ON CONFLICT (session_id, file) DO UPDATE SET cases = junit_files.cases + EXCLUDED.cases,
           note = concat_ws('; ', junit_files.note, EXCLUDED.note)`,
        [input.sessionId, storableText(f.file), f.cases.length, cleanOrNull(f.note)],
      );
      for (let at = 0; at < f.cases.length; at += 1000) {
        const chunk = f.cases.slice(at, at + 1000);
        await client.query(
          `INSERT INTO test_cases (session_id, file, classname, name, status, time, message, output)
           SELECT $1::bigint, $2::text, * FROM unnest($3::text[], $4::text[], $5::text[], $6::float8[], $7::text[], $8::text[])`,
          [
            input.sessionId,
            storableText(f.file),
            chunk.map((c) => clean(c.classname)),
            chunk.map((c) => clean(c.name)),
            chunk.map((c) => c.status),
            chunk.map((c) => c.time),
            chunk.map((c) => cleanOrNull(c.message)),
            chunk.map((c) => cleanOrNull(c.output)),
          ],
        );
      }
    }
  });

  const failed = files.reduce((n, f) => n + f.cases.filter((c) => c.status === 'failed' || c.status === 'error').length, 0);
  return { cases: total, failed };
}

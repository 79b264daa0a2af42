/**
 * Live output (issue 22): what a running build process (a test file, a batch, a hook) prints,
 * appended to PostgreSQL while it runs (db/outputChunks.ts), so that the API and the build page
 * can follow it from whichever runner runs it.
 *
 * - Every FLUSH_MS (250 ms) what came since is masked and written as one row (more for a lot).
 *   A process that ends before the first flush writes nothing at all: its output is stored with
 *   its result, as every process's is, and a trivial test file costs no more than before.
 * - Masked before it is written, with the same values its stored output is masked with; the
 *   last (longest secret − 1) characters are held back until the next flush or the end, so a
 *   secret split between two flushes is still masked whole (core/maskStream.ts).
 * - Bounded: the first MAX_BYTES (1 MiB) of a process are streamed, then a line says the rest is
 *   not; its stored output keeps its end (the last 64 KiB), as before.
 * - A process that streamed gets an end row (its status, exit code and duration) after its last
 *   piece, when it ends.
 * - Best effort: a write that fails (PostgreSQL away for a moment) is tried again with the next
 *   flush, and nothing here ever fails the process or its result.
 */
import { StringDecoder } from 'node:string_decoder';
import { MaskingStream } from '../core/maskStream';
import type { OutputSource } from '../db/outputChunks';
import type { ProcessResult } from './isolation/process';
import type { BuildRecords } from './records';

export const FLUSH_MS = 250;
export const MAX_BYTES = 1024 * 1024;
/** Characters of one row at most: a reader pages through rows, each bounded. */
const ROW_CHARS = 64 * 1024;

export interface LiveOutputOptions {
  flushMs?: number;
  maxBytes?: number;
  /** Told of a write that failed (it is tried again with the next flush). */
  onError?: (err: unknown) => void;
}

/** Where a process's output goes while it runs: `onOutput` for runProcess, `end` once it ended. */
export interface LiveOutput {
  onOutput(chunk: Buffer): void;
  /** Writes the rest and the end, if the process streamed at all; never throws. */
  end(result: Pick<ProcessResult, 'status' | 'exitCode' | 'durationMs'>): Promise<void>;
  /** `running`'s result once its end is written; ended as an error if it throws (the writer stops either way). */
  watch<R extends Pick<ProcessResult, 'status' | 'exitCode' | 'durationMs'>>(running: Promise<R>): Promise<R>;
}

/** Starts the clock of a process about to run (its first flush is FLUSH_MS from now). */
export function liveOutput(records: BuildRecords, sessionId: number, source: OutputSource, secrets: string[], options: LiveOutputOptions = {}): LiveOutput {
  const maxBytes = options.maxBytes ?? MAX_BYTES;
  const decoder = new StringDecoder('utf8');
  const masking = new MaskingStream(secrets);
  let pending: Buffer[] = [];
  let taken = 0;
  let cut = false;
  let cutSaid = false;
  /** Masked text not written yet (a write failed). */
  let unsent = '';
  /** The first flush came: the process is in the stream from now on. */
  let streaming = false;
  let ended = false;
  let writing: Promise<void> | null = null;

  const write = async (text: string, end: Parameters<LiveOutput['end']>[0] | null) => {
    const all = unsent + text;
    unsent = '';
    if (all === '' && end === null) return;
    try {
      await records.appendOutput(sessionId, source, rows(all), end === null ? null : { status: end.status, exitCode: end.exitCode, durationMs: end.durationMs });
    } catch (err) {
      unsent = all;
      options.onError?.(err);
    }
  };

  /** What came since the last flush, masked; the note when the bound was reached. */
  const take = (final: boolean): string => {
    const bytes = pending.length === 1 ? pending[0]! : Buffer.concat(pending);
    pending = [];
    let text = masking.push(decoder.write(bytes));
    if ((final || cut) && !cutSaid) {
      text += masking.push(decoder.end()) + masking.end({ cut });
      if (cut) {
        cutSaid = true;
        text += `${text === '' || text.endsWith('\n') ? '' : '\n'}[sluice] live output stops after the first ${maxBytes} bytes; the end of the output is kept with the result\n`;
      }
    }
    return text;
  };

  const timer = setInterval(() => {
    streaming = true;
    if (writing || ended) return;
    const text = take(false);
    if (text === '' && unsent === '') return;
    writing = write(text, null).finally(() => {
      writing = null;
    });
  }, options.flushMs ?? FLUSH_MS);
  timer.unref();

  const live: LiveOutput = {
    onOutput(chunk) {
      if (ended || cut) return;
      const room = maxBytes - taken;
      if (chunk.length >= room) cut = true;
      const piece = chunk.length > room ? chunk.subarray(0, room) : chunk;
      if (piece.length === 0) return;
      pending.push(piece);
      taken += piece.length;
    },
    async end(result) {
      if (ended) return;
      ended = true;
      clearInterval(timer);
      if (!streaming) return; // ended before its first flush: nothing live
      try {
        await writing;
        await write(take(true), result);
      } catch (err) {
        options.onError?.(err);
      }
    },
    async watch(running) {
      const started = performance.now();
      let result;
      try {
        result = await running;
      } catch (err) {
        await live.end({ status: 'error', exitCode: null, durationMs: performance.now() - started });
        throw err;
      }
      await live.end(result);
      return result;
    },
  };
  return live;
}

/** `text` as rows of at most ROW_CHARS characters (never splitting a surrogate pair); [''] for none. */
function rows(text: string): string[] {
  if (text.length <= ROW_CHARS) return [text];
  const out: string[] = [];
  for (let at = 0; at < text.length; ) {
    let end = Math.min(text.length, at + ROW_CHARS);
    const code = text.charCodeAt(end - 1);
    if (end < text.length && code >= 0xd800 && code <= 0xdbff) end -= 1;
    out.push(text.slice(at, end));
    at = end;
  }
  return out;
}

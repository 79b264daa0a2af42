/**
 * A session's live output for a person: lanes run at once, so their text arrives interleaved
 * in pieces; each source's lines are printed whole, prefixed with the file, batch or hook that
 * printed them, and a line says how each process ended.
 */
import { clean, durationText } from './render';
import type { OutputEvent } from './schemas';

type Output = Extract<OutputEvent, { event: 'output' }>;

export class OutputPrinter {
  /** Each source's text after its last newline, until the rest of the line comes. */
  private partial = new Map<string, { label: string; text: string }>();

  constructor(private readonly write: (s: string) => void) {}

  add(e: Output): void {
    const label = labelOf(e.source);
    const text = (this.partial.get(e.source.key)?.text ?? '') + e.text;
    const cut = text.lastIndexOf('\n');
    if (cut >= 0) for (const line of text.slice(0, cut).split('\n')) this.line(label, line);
    const rest = text.slice(cut + 1);
    if (e.end) {
      if (rest !== '') this.line(label, rest);
      this.partial.delete(e.source.key);
      this.ended(label, e.end);
    } else if (rest === '') this.partial.delete(e.source.key);
    else this.partial.set(e.source.key, { label, text: rest });
  }

  /** Prints a process's whole stored output and its end, as if it had streamed. */
  stored(label: string, text: string, end: { status: string; exit_code: number | null; duration_ms: number | null }): void {
    const body = text.endsWith('\n') ? text.slice(0, -1) : text;
    if (body !== '') for (const line of body.split('\n')) this.line(label, line);
    this.ended(label, end);
  }

  /** Prints what is left of lines that never ended (the build is over). */
  flush(): void {
    for (const { label, text } of this.partial.values()) this.line(label, text);
    this.partial.clear();
  }

  private ended(label: string, end: { status: string; exit_code: number | null; duration_ms: number | null }): void {
    const exit = end.exit_code === null ? '' : `, exit ${end.exit_code}`;
    this.write(`-- ${clean(label)}: ${end.status}${exit}, ${durationText(end.duration_ms)}\n`);
  }

  // Test output is printed as it came (colours included), like a CI log; only the label is ours.
  private line(label: string, text: string): void {
    this.write(`${clean(label)} | ${text.replace(/\r$/, '')}\n`);
  }
}

function labelOf(source: Output['source']): string {
  switch (source.kind) {
    case 'file':
      return source.path;
    case 'batch':
      return `batch ${source.batch} (lane ${source.worker})`;
    case 'hook':
      return `hook ${source.name ?? source.hook}`;
  }
}

/**
 * What the client prints: with `--json` one JSON document on stdout (the API's answer, or the
 * command's result), otherwise plain tables and lines for a person. Cells are cleaned of control
 * characters, so nothing the API holds can move the terminal's cursor or change its colours.
 */
import { COUNT_KEYS } from '../core/types';

export type Cell = string | number | boolean | null | undefined;

/** Past this many characters a cell is cut, with `…`. */
const MAX_CELL = 60;

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

export const clean = (s: string): string => s.replace(CONTROL, ' ');

function cell(value: Cell): string {
  if (value === null || value === undefined || value === '') return '-';
  const s = clean(String(value));
  return s.length > MAX_CELL ? `${s.slice(0, MAX_CELL - 1)}…` : s;
}

/** Rows under a header, columns padded to their widest cell; a line saying so when there are none. */
export function table(header: string[], rows: Cell[][], none = '(none)'): string {
  if (rows.length === 0) return `${none}\n`;
  const cells = [header, ...rows.map((r) => r.map(cell))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n') + '\n';
}

/** `label: value` lines, labels aligned. */
export function fields(pairs: [string, Cell][]): string {
  const width = Math.max(...pairs.map(([k]) => k.length)) + 1;
  return pairs.map(([k, v]) => `${`${k}:`.padEnd(width)} ${cell(v)}`).join('\n') + '\n';
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function print(text: string): void {
  process.stdout.write(text);
}

/** `3 passed, 1 failed`: the counts that are not zero, in the spec's order. */
export function countsText(counts: Record<string, number>): string {
  const parts = COUNT_KEYS.filter((k) => (counts[k] ?? 0) > 0).map((k) => `${counts[k]} ${k}`);
  return parts.length ? parts.join(', ') : 'no tests';
}

export function durationText(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '-';
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  const s = ms / 1_000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${Math.round(s - m * 60)} s`;
}

export const shortCommit = (commit: string | null): string => (commit ? commit.slice(0, 10) : '-');

/** A time as `2026-11-26 20:27:29` (UTC), shorter than ISO in a table. */
export const timeText = (iso: string): string => (iso.length >= 19 ? `${iso.slice(0, 10)} ${iso.slice(11, 19)}` : iso);

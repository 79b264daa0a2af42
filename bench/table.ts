/** The bench's one output: rows of a figure beside its baseline from the same run, as markdown and JSON. */

export interface Row {
  /** Which figure, e.g. "P3 parallel efficiency, N = 4". */
  name: string;
  value: number;
  unit: string;
  /** What the figure is measured against, in the same run. */
  baseline: { name: string; value: number } | null;
  /** The target, e.g. "≥ 0.9"; `met` says whether this run met it. */
  target?: { text: string; met: boolean };
  note?: string;
}

const num = (v: number) => (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2));

const fmt = (v: number, unit: string) => (unit ? `${num(v)} ${unit}` : num(v));

export function markdown(title: string, machine: string, rows: Row[]): string {
  const lines = [
    `### ${title}`,
    '',
    machine,
    '',
    '| figure | value | baseline (same run) | target | note |',
    '|---|---|---|---|---|',
    ...rows.map((r) =>
      [
        r.name,
        fmt(r.value, r.unit),
        r.baseline ? `${fmt(r.baseline.value, r.unit)} (${r.baseline.name})` : '',
        r.target ? `${r.target.text} ${r.target.met ? '✔' : '✘'}` : '',
        r.note ?? '',
      ].join(' | '),
    ).map((l) => `| ${l} |`),
    '',
  ];
  return lines.join('\n');
}

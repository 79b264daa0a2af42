/**
 * `npm run bench`: Sluice's performance figures from one run on this machine, each beside a
 * baseline measured in the same run, as a markdown table (printed, and in bench/out/latest.md)
 * and JSON (bench/out/latest.json) for comparing runs. Not part of `npm test`: these machines
 * are noisy, and a figure is only worth something beside its baseline.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { Agent, setGlobalDispatcher } from 'undici';
import os from 'node:os';
import path from 'node:path';
import { startCluster } from '../test/support/cluster';
import { affectedFigures } from './affected';
import { caseFigures } from './cases';
import { checkoutFigures } from './checkout';
import { eventFigures } from './events';
import { feedbackFigures } from './feedback';
import { historyFigures } from './history';
import { imageFigures } from './image';
import { isolationFigures } from './isolation';
import { scaleFigures } from './scale';
import { setupFigures } from './setup';
import { suiteFigures } from './suite';
import { markdown, type Row } from './table';

/** The parts of the bench, in the order they run; `npm run bench -- events` runs one. */
const PARTS = {
  events: { title: 'Events: ingest, overhead, bursts (issue 11)', figures: eventFigures },
  scale: { title: 'Scale: runners (issue 9)', figures: scaleFigures },
  setup: { title: 'Setup: package setup and the dependency cache (issue 21)', figures: setupFigures },
  suite: { title: 'Real suites: Sluice beside the framework alone (issue 22)', figures: suiteFigures },
  isolation: { title: 'Isolation: bubblewrap by default (issue 23)', figures: isolationFigures },
  image: { title: 'Images: a build brings its own toolchain (issue 35)', figures: imageFigures },
  cases: { title: 'Test cases: every run’s reports kept (issue 37)', figures: caseFigures },
  checkout: { title: 'Checkouts: a runner’s mirror of each repository (issue 39)', figures: checkoutFigures },
  history: { title: 'History at scale: a year of a busy installation beside a new one (issue 39)', figures: historyFigures },
  affected: { title: 'Affected tests: real projects’ history and mutations of their code (issue 40)', figures: affectedFigures },
  feedback: { title: 'Feedback in seconds: a trivial build and a burst wider than the slots (issue 49)', figures: feedbackFigures },
} as const;

// Parts wait minutes between two calls of the API (a suite running alone): an idle connection
// the client kept for longer than the server keeps it would be closed under the next request.
setGlobalDispatcher(new Agent({ keepAliveTimeout: 5_000 }));

async function main(): Promise<void> {
  const started = Date.now();
  const log = (line: string) => process.stderr.write(`[bench ${((Date.now() - started) / 1000).toFixed(0)} s] ${line}\n`);
  const asked = process.argv.slice(2);
  const unknown = asked.filter((a) => !Object.hasOwn(PARTS, a));
  if (unknown.length > 0) throw new Error(`unknown bench part ${unknown.join(', ')}: choose from ${Object.keys(PARTS).join(', ')}`);
  const parts = (Object.keys(PARTS) as (keyof typeof PARTS)[]).filter((p) => asked.length === 0 || asked.includes(p));
  log('starting Temporal, PostgreSQL database, API, worker and 4 runner processes');
  const cluster = await startCluster({ runners: 4 });
  const sections: { title: string; rows: Row[] }[] = [];
  try {
    for (const part of parts) sections.push({ title: PARTS[part].title, rows: await PARTS[part].figures(cluster, log) });
  } finally {
    await cluster.stop();
  }
  const machine = `${os.cpus().length} cores (${os.cpus()[0]?.model.trim() ?? 'unknown'}), ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}`;
  const md = sections.map((s) => markdown(s.title, machine, s.rows)).join('\n');
  const rows = sections.flatMap((s) => s.rows);
  const out = path.join(__dirname, 'out');
  await mkdir(out, { recursive: true });
  await writeFile(path.join(out, 'latest.md'), md);
  await writeFile(path.join(out, 'latest.json'), JSON.stringify({ machine, date: new Date().toISOString(), rows }, null, 2));
  process.stdout.write(`\n${md}\n`);
  log(`done; written to ${path.relative(process.cwd(), out)}/latest.{md,json}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

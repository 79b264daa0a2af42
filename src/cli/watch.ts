/**
 * `sluice watch`: follows a build to its end with its output, and says how it ended in its exit
 * status (errors.ts), so a script can wait on a build.
 *
 * The live stream carries what a process printed while it ran; one that ended within the
 * runner's first flush (a quarter of a second) never streams, its output is stored with its
 * result only (steps/liveOutput.ts). So once the build is over, the stored output of every
 * failed test file and hook that did not stream is printed too: why a build failed is always
 * on the screen. Test files' output comes from the report's JSON (`GET /1/reports/:id`, which
 * the admin token opens), a page of files at a time; hooks' from the session's own view.
 */
import { z } from 'zod';
import type { ApiClient } from './client';
import { exitForStatus } from './errors';
import { followOutput } from './follow';
import { OutputPrinter } from './outputPrinter';
import { countsText, print, printJson } from './render';
import { Session } from './schemas';

const FAILED = new Set(['failed', 'error']);

const ReportPage = z.looseObject({
  pages: z.number().int().min(1),
  tests: z.array(z.looseObject({ path: z.string(), output: z.string().optional() })),
});
const Hooks = z.looseObject({
  hooks: z.array(z.looseObject({ name: z.string(), worker: z.number().nullable(), status: z.string(), exit_code: z.number().nullable(), duration_ms: z.number().nullable(), output_tail: z.string() })),
});

const hookKey = (name: string | null, worker: number | null | undefined) => `${name}/${worker ?? ''}`;

/**
 * Follows session `id` to its end, its output on stdout (none with `json`: the session's final
 * view is the one document); the exit status its result calls for.
 */
export async function watchSession(client: ApiClient, id: number, json: boolean): Promise<number> {
  const first = (await client.call('GET', `/api/v1/sessions/${id}`, Session)).data;
  if (!json) print(`session ${id}: ${first.repository.org_name}/${first.repository.name} @ ${first.branch}, ${first.status}\n${first.url}\n`);
  const printer = new OutputPrinter((s) => process.stdout.write(s));
  const streamedFiles = new Set<string>();
  const streamedHooks = new Set<string>();
  let status: string | undefined;
  for await (const e of followOutput(client, id)) {
    if (e.event === 'done') {
      status = e.status;
      continue;
    }
    if (e.source.kind === 'file') streamedFiles.add(e.source.path);
    if (e.source.kind === 'hook') streamedHooks.add(hookKey(e.source.name, e.source.worker));
    if (!json) printer.add(e);
  }
  printer.flush();
  const last = await client.call('GET', `/api/v1/sessions/${id}`, Session);
  if (json) {
    printJson(last.raw);
  } else {
    await printStoredHooks(client, id, last.raw, streamedHooks, printer);
    const files = last.data.tests.filter((t) => FAILED.has(t.status) && !streamedFiles.has(t.path));
    await printStoredFiles(client, id, new Map(files.map((t) => [t.path, t])), printer);
    const s = last.data;
    print(`session ${id} ${s.status}: ${countsText(s.counts)}${s.reason ? ` (${s.reason})` : ''}\n`);
  }
  return exitForStatus(status ?? last.data.status);
}

async function printStoredHooks(client: ApiClient, id: number, view: unknown, streamed: Set<string>, printer: OutputPrinter): Promise<void> {
  const { hooks } = client.check('GET', `/api/v1/sessions/${id}`, Hooks, view).data;
  for (const h of hooks) {
    if (!FAILED.has(h.status) || streamed.has(hookKey(h.name, h.worker))) continue;
    printer.stored(`hook ${h.name}`, h.output_tail, { status: h.status, exit_code: h.exit_code, duration_ms: h.duration_ms });
  }
}

/** The stored output of `wanted` files, read from the report's pages until all are found. */
async function printStoredFiles(
  client: ApiClient,
  id: number,
  wanted: Map<string, { status: string; exit_code: number | null; duration_ms: number }>,
  printer: OutputPrinter,
): Promise<void> {
  for (let page = 1, pages = 1; wanted.size > 0 && page <= pages; page++) {
    const report = (await client.call('GET', `/1/reports/${id}?page=${page}`, ReportPage)).data;
    pages = report.pages;
    for (const t of report.tests) {
      const row = wanted.get(t.path);
      if (!row) continue;
      wanted.delete(t.path);
      printer.stored(t.path, t.output ?? '', row);
    }
  }
}

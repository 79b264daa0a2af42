/**
 * Running one hook (Solano's setup hooks; Buildkite's agent hooks are the same idea): the
 * command with `sh -c` in the checkout, with the worker's environment (secrets only where the
 * build may have them), in the same sandbox as tests and under a time limit. Its row in
 * session_hooks exists from its start, so the build page shows it running; its output is
 * stored with every secret masked.
 */
import type { HookName } from '../core/buildSetup';
import { liveOutput } from './liveOutput';
import { maskOutput } from './output';
import { runProcess, type BuildUser, type ProcessGroups, type ProcessResult } from './isolation/process';
import type { BuildRecords } from './records';
import type { Sandbox } from './isolation/sandbox';

export interface HookPlace {
  records: BuildRecords;
  sessionId: number;
  /** 1..N, or null for post_build (once a build). */
  worker: number | null;
  runner: string;
  tree: string;
  home: string;
  /** The whole environment of the hook. */
  env: Record<string, string>;
  /** Values masked in what is stored. */
  secrets: string[];
  timeoutMs: number;
  signal?: AbortSignal;
  processGroups?: ProcessGroups;
  runAs?: BuildUser;
  sandbox?: Sandbox;
}

export interface HookOutcome extends ProcessResult {
  name: HookName;
  /** The stored (masked) output. */
  output: string;
}

/** How many of a failed hook's last output lines its build's reason quotes. */
const REASON_LINES = 10;
const REASON_CHARS = 2_000;

export async function runHook(
  place: HookPlace,
  hook: { name: HookName; command: string; detail?: string | null; sandbox?: Sandbox },
): Promise<HookOutcome> {
  const id = await place.records.startHook({
    sessionId: place.sessionId,
    name: hook.name,
    worker: place.worker,
    command: hook.command,
    detail: hook.detail ?? null,
    runner: place.runner,
  });
  const live = liveOutput(place.records, place.sessionId, { kind: 'hook', hookId: id }, place.secrets);
  const result = await live.watch(runProcess({
    argv: ['/bin/sh', '-c', hook.command],
    viaShell: true,
    cwd: place.tree,
    env: place.env,
    program: hook.name,
    dirs: { tree: place.tree, home: place.home },
    timeoutMs: place.timeoutMs,
    signal: place.signal,
    onOutput: live.onOutput,
    processGroups: place.processGroups,
    runAs: place.runAs,
    // Package setup reaches the registries even where tests have no network.
    sandbox: hook.sandbox ?? place.sandbox,
  }));
  const output = maskOutput(result.output, place.secrets);
  await place.records.finishHook(id, { status: result.status, exitCode: result.exitCode, durationMs: result.durationMs, output });
  return { ...result, name: hook.name, output };
}

/** A hook that is not needed this time (package setup after an exact cache hit): shown, with why. */
export async function skipHook(place: HookPlace, hook: { name: HookName; command: string; detail: string }): Promise<void> {
  const id = await place.records.startHook({ sessionId: place.sessionId, name: hook.name, worker: place.worker, command: hook.command, detail: hook.detail, runner: place.runner });
  await place.records.finishHook(id, { status: 'skipped', exitCode: null, durationMs: 0, output: '' });
}

/** What a build that a setup hook failed says: the hook, where, how, and its last lines. */
export function hookFailure(outcome: HookOutcome, worker: number | null): string {
  const how = outcome.exitCode !== null ? `exit code ${outcome.exitCode}` : 'it did not finish';
  const where = worker === null ? '' : ` on worker ${worker}`;
  const lines = outcome.output.trimEnd().split('\n').slice(-REASON_LINES).join('\n');
  const tail = lines.length > REASON_CHARS ? `…${lines.slice(-REASON_CHARS)}` : lines;
  return `the ${outcome.name} hook failed${where} (${how})${tail ? `:\n${tail}` : ''}`;
}

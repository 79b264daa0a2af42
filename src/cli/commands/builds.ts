/**
 * Builds: `trigger`, `builds`, `show`, `watch`, `rebuild`, `stop`. A trigger goes where a
 * source-control hook sends it (`POST /1/builds/<KEY>`, the repository's key read through the
 * management API); the rest are `/api/v1/sessions`. `watch` (and `--watch` on `trigger` and
 * `rebuild`) follows a build's output live and exits with its result (errors.ts).
 */
import os from 'node:os';
import type { Command } from 'commander';
import { z } from 'zod';
import { describeSelection } from '../../core/affected';
import { SESSION_STATUSES } from '../../core/types';
import { ApiClient, errorOf } from '../client';
import { commandOnId, withCommonOptions, type Options } from '../common';
import { connect } from '../connection';
import { CliError } from '../errors';
import { envPair, oneOf, orgRef, positiveId, repoRef } from '../inputs';
import { countsText, durationText, fields, print, printJson, shortCommit, table, timeText } from '../render';
import { CiEvent, Rebuilt, Repo, Session, SessionListItem, TriggerAnswer } from '../schemas';
import { watchSession } from '../watch';

const repoPath = (repo: string): string => `/api/v1/repos/${encodeURIComponent(repo)}`;

/** `<name> <session>`: a command on one build. */
const sessionCommand = (program: Command, name: string, description: string): Command => commandOnId(program, name, description, '<session>', 'the session id');

function showSession(s: z.infer<typeof Session>): string {
  const head = fields([
    ['session', s.session],
    ['status', s.status],
    ['reason', s.reason],
    ['repository', `${s.repository.org_name}/${s.repository.name}`],
    ['branch', s.branch],
    ['commit', s.commit_id],
    ['tests', countsText(s.counts)],
    ...(s.affected ? ([['tests run', describeSelection(s.affected)]] as [string, string][]) : []),
    ...(s.stopped_by ? ([['stopped by', s.stopped_by]] as [string, string][]) : []),
    ['report', s.url],
  ]);
  const tests = table(
    ['TEST', 'STATUS', 'EXIT', 'DURATION', 'LANE'],
    s.tests.map((t) => [t.path, t.flaky ? `${t.status} (flaky)` : t.status, t.exit_code, durationText(t.duration_ms), t.worker]),
    '(no test results)',
  );
  return `${head}\n${tests}`;
}

interface TriggerOptions {
  branch?: string;
  head?: string;
  force?: boolean;
  profile?: string;
  env?: Record<string, string>;
  queue?: string;
  first?: boolean;
  full?: boolean;
  watch?: boolean;
}

/** Posts a trigger to the repository's keyed URL, as a hook would; what became of it. */
async function trigger(client: ApiClient, repo: string, o: TriggerOptions) {
  const { key } = (await client.call('GET', repoPath(repo), Repo)).data;
  if (key === null) throw new CliError(`your token may not see ${repo}'s trigger key: triggering needs a maintainer's`);
  const body = {
    branch: o.branch,
    head: o.head,
    force: o.force,
    profile_name: o.profile,
    env: o.env,
    queue: o.queue,
    queue_position: o.first ? 'head' : undefined,
    full: o.full,
  };
  // The trigger URL's key is its credential: the admin token does not go with it.
  const keyed = new ApiClient(client.baseUrl, undefined);
  const res = await keyed.send('POST', `/1/builds/${encodeURIComponent(key)}`, { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  if (res.status === 422 && text.trim() === 'DROPPED') {
    throw new CliError(`dropped: ${repo} has no suite for branch ${o.branch ?? 'master'}, or the branch is switched off or excluded (422 DROPPED)`);
  }
  if (!res.ok) throw errorOf(res.status, text);
  const answer = keyed.check('POST', '/1/builds/<key>', TriggerAnswer, JSON.parse(text)).data;
  if (answer.guid === undefined) throw new CliError(`the trigger was ignored: ${answer.ignored ?? 'no reason given'}`);
  // Sluice records a trigger (and its sessions) a moment after answering it: wait for that, a while.
  const deadline = Date.now() + RECORD_WAIT_MS;
  for (;;) {
    const event = await keyed.call('GET', `/ci_events/${encodeURIComponent(answer.guid)}/guid`, CiEvent);
    if (event.data.recorded !== false || Date.now() > deadline) return event;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** How long `trigger` waits for Sluice to record what it accepted (longer while its database is away). */
const RECORD_WAIT_MS = 30_000;

export function registerBuildCommands(program: Command): void {
  withCommonOptions(
    program
      .command('trigger')
      .description('start a build of a repository, as its hook would')
      .argument('<repo>', 'the repository: <org>/<name> or its id', repoRef)
      .option('-b, --branch <branch>', 'the branch to build (default: master)')
      .option('--head <commit>', 'build this commit instead of the branch head')
      .option('-f, --force', 'build even if this head was built already')
      .option('--profile <name>', 'the suite profile to run')
      .option('-e, --env <NAME=value>', 'an environment variable for the tests (repeatable)', envPair)
      .option('--queue <name>', 'the build queue whose runners take it')
      .option('--first', "put it at the head of the suite's queue")
      .option('--full', 'run every test file, where the profile would run only those the change can affect')
      .option('-w, --watch', "follow it and exit with its result"),
  ).action(async (repo: string, opts: Options<TriggerOptions>) => {
    const client = connect(opts);
    const event = await trigger(client, repo, opts);
    const session = event.data.sessions[0];
    if (opts.watch && session) {
      if (!opts.json) print(`triggered ${event.data.guid}\n`);
      process.exitCode = await watchSession(client, session.session, !!opts.json);
      return;
    }
    if (opts.json) return printJson(event.raw);
    const e = event.data;
    print(`triggered ${e.guid}: ${e.decision}${e.reason ? ` (${e.reason})` : ''}\n`);
    for (const s of e.sessions) print(`session ${s.session} ${s.status}  ${s.url}\n`);
  });

  withCommonOptions(
    program
      .command('builds')
      .description('list builds, newest first')
      .option('--org <org>', 'only this organization’s (name or id)', orgRef)
      .option('-r, --repo <repo>', 'only this repository’s (<org>/<name> or id)', repoRef)
      .option('-b, --branch <branch>', 'only this branch’s')
      .option('-s, --status <status>', `only those with this status (${SESSION_STATUSES.join(', ')})`, oneOf(SESSION_STATUSES))
      .option('-n, --limit <n>', 'at most this many (1-200, default 50)', positiveId)
      .option('--before <session>', 'only builds older than this one (the next page)', positiveId),
  ).action(async (opts: Options<{ org?: string; repo?: string; branch?: string; status?: string; limit?: number; before?: number }>) => {
    const q = new URLSearchParams();
    for (const k of ['org', 'repo', 'branch', 'status', 'limit', 'before'] as const) if (opts[k] !== undefined) q.set(k, String(opts[k]));
    const { data, raw } = await connect(opts).call('GET', `/api/v1/sessions?${q}`, z.array(SessionListItem));
    if (opts.json) return printJson(raw);
    print(
      table(
        ['SESSION', 'STATUS', 'REPOSITORY', 'BRANCH', 'COMMIT', 'TESTS', 'DURATION', 'RECEIVED'],
        data.map((s) => [s.session, s.status, `${s.repository.org_name}/${s.repository.name}`, s.branch, shortCommit(s.commit_id), countsText(s.counts), durationText(s.duration_ms), timeText(s.received_at)]),
        '(no builds)',
      ),
    );
  });

  withCommonOptions(sessionCommand(program, 'show', 'show a build and its tests')).action(async (id: number, opts: Options) => {
    const { data, raw } = await connect(opts).call('GET', `/api/v1/sessions/${id}`, Session);
    if (opts.json) printJson(raw);
    else print(showSession(data));
  });

  withCommonOptions(
    sessionCommand(program, 'watch', 'follow a build live, with its output, and exit with its result (0 passed, 1 failed, 2 error, 3 stopped, 4 skipped)'),
  ).action(async (id: number, opts: Options) => {
    process.exitCode = await watchSession(connect(opts), id, !!opts.json);
  });

  withCommonOptions(
    sessionCommand(program, 'rebuild', 'build a session’s trigger again, at the commit it built')
      .option('--full', 'run every test file, where the build ran only those the change can affect')
      .option('-w, --watch', 'follow the new build and exit with its result'),
  ).action(async (id: number, opts: Options<{ watch?: boolean; full?: boolean }>) => {
    const client = connect(opts);
    const { data, raw } = await client.call('POST', `/api/v1/sessions/${id}/rebuild`, Rebuilt, opts.full ? { full: true } : undefined);
    if (opts.watch) {
      if (!opts.json) print(`rebuilding session ${id} as session ${data.session}\n`);
      process.exitCode = await watchSession(client, data.session, !!opts.json);
      return;
    }
    if (opts.json) printJson(raw);
    else print(`session ${data.session} queued (a rebuild of ${id})  ${data.url}\n`);
  });

  withCommonOptions(
    sessionCommand(program, 'stop', 'stop a build, queued or running')
      .option('--by <who>', 'who stops it, as its stop event says (default: your user name); a personal token always stops as its owner'),
  ).action(async (id: number, opts: Options<{ by?: string }>) => {
    const by = opts.by ?? userName();
    const { data, raw } = await connect(opts).call('POST', `/api/v1/sessions/${id}/stop`, Session, { stopped_by: by });
    if (opts.json) printJson(raw);
    else print(`asked session ${id} (${data.status}) to stop; \`sluice watch ${id}\` follows it to its end\n`);
  });
}

function userName(): string {
  try {
    return os.userInfo().username || 'sluice';
  } catch {
    return 'sluice';
  }
}

/** `repos` and `suites`: what Sluice builds, read from `/api/v1/orgs/:org/repos` and `/api/v1/repos/:repo/suites`. */
import type { Command } from 'commander';
import { z } from 'zod';
import type { ApiClient } from '../client';
import { withCommonOptions, type Options } from '../common';
import { connect } from '../connection';
import { orgRef, repoRef } from '../inputs';
import { print, printJson, shortCommit, table, type Cell } from '../render';
import { Org, Repo, Suite } from '../schemas';
import { registerGitHubAppCommands } from './githubApps';
import { registerSiteCommands } from './hostingSites';

/** The organizations named, or all of them: the API lists repositories and webhooks by organization. */
async function orgsOf(client: ApiClient, org: string | undefined): Promise<z.infer<typeof Org>[]> {
  if (org !== undefined) return [(await client.call('GET', `/api/v1/orgs/${encodeURIComponent(org)}`, Org)).data];
  return (await client.call('GET', '/api/v1/orgs', z.array(Org))).data;
}

/** How `orgListCommand` shows what it lists: each item a table row (its organization at hand), or a line saying there are none. */
interface OrgList<S extends z.ZodType> {
  item: S;
  header: string[];
  row: (item: z.output<S>, org: z.infer<typeof Org>) => Cell[];
  none: string;
}

/**
 * `<name> [org]`: lists what the API keeps by organization (`GET /api/v1/orgs/:org/<name>`), of
 * the one named or of all, in one table; with `--json`, the answers of every organization in one array.
 */
export function orgListCommand<S extends z.ZodType>(program: Command, name: 'repos' | 'webhooks', description: string, list: OrgList<S>): Command {
  return withCommonOptions(program.command(name).description(description).argument('[org]', 'an organization (name or id)', orgRef)).action(
    async (org: string | undefined, opts: Options) => {
      const client = connect(opts);
      const answers: unknown[] = [];
      const rows: Cell[][] = [];
      for (const o of await orgsOf(client, org)) {
        const { data, raw } = await client.call('GET', `/api/v1/orgs/${o.id}/${name}`, z.array(list.item));
        answers.push(...(raw as unknown[]));
        rows.push(...data.map((item) => list.row(item, o)));
      }
      if (opts.json) return printJson(answers);
      print(table(list.header, rows, list.none));
    },
  );
}

export function registerRepoCommands(program: Command): void {
  const repos = orgListCommand(program, 'repos', 'list repositories, of one organization or all (and, with its subcommands, connect hosting sites)', {
    item: Repo,
    header: ['ID', 'REPOSITORY', 'SCM', 'DEFAULT BRANCH', 'PULL URL'],
    row: (r) => [r.id, `${r.org_name}/${r.name}`, r.scm, r.default_branch, r.pull_url],
    none: '(no repositories)',
  });
  // `repos [org]` lists, `repos connect …` and its siblings act: the list's own --json and
  // --url are read only before a subcommand's name, so each subcommand gets its own.
  registerSiteCommands(repos.enablePositionalOptions());
  registerGitHubAppCommands(repos);

  withCommonOptions(
    program.command('suites').description("list a repository's suites (one per branch it builds)").argument('<repo>', '<org>/<name> or its id', repoRef),
  ).action(async (repo: string, opts: Options) => {
    const { data, raw } = await connect(opts).call('GET', `/api/v1/repos/${encodeURIComponent(repo)}/suites`, z.array(Suite));
    if (opts.json) return printJson(raw);
    print(
      table(
        ['ID', 'BRANCH', 'TEST PATTERN', 'TEST COMMAND', 'WORKERS', 'LAST BUILT'],
        data.map((s) => [s.id, s.branch, s.test_pattern, s.test_command, s.workers, shortCommit(s.last_built_commit)]),
        '(no suites)',
      ),
    );
  });
}

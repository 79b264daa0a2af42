/** `repos` and `suites`: what Sluice builds, read from `/api/v1/orgs/:org/repos` and `/api/v1/repos/:repo/suites`. */
import type { Command } from 'commander';
import { z } from 'zod';
import type { ApiClient } from '../client';
import { withCommonOptions, type Options } from '../common';
import { connect } from '../connection';
import { orgRef, repoRef } from '../inputs';
import { print, printJson, shortCommit, table } from '../render';
import { Org, Repo, Suite } from '../schemas';

/** The organizations named, or all of them: the API lists repositories and webhooks by organization. */
export async function orgsOf(client: ApiClient, org: string | undefined): Promise<z.infer<typeof Org>[]> {
  if (org !== undefined) return [(await client.call('GET', `/api/v1/orgs/${encodeURIComponent(org)}`, Org)).data];
  return (await client.call('GET', '/api/v1/orgs', z.array(Org))).data;
}

export function registerRepoCommands(program: Command): void {
  withCommonOptions(
    program.command('repos').description("list repositories, of one organization or all").argument('[org]', 'an organization (name or id)', orgRef),
  ).action(async (org: string | undefined, opts: Options) => {
    const client = connect(opts);
    const repos: unknown[] = [];
    const rows: z.infer<typeof Repo>[] = [];
    for (const o of await orgsOf(client, org)) {
      const { data, raw } = await client.call('GET', `/api/v1/orgs/${o.id}/repos`, z.array(Repo));
      repos.push(...(raw as unknown[]));
      rows.push(...data);
    }
    if (opts.json) return printJson(repos);
    print(
      table(
        ['ID', 'REPOSITORY', 'SCM', 'DEFAULT BRANCH', 'PULL URL'],
        rows.map((r) => [r.id, `${r.org_name}/${r.name}`, r.scm, r.default_branch, r.pull_url]),
        '(no repositories)',
      ),
    );
  });

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

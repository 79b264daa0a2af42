/**
 * `repos connect|token|sites|available|activate|site|repair|deactivate`: hosting sites connected once
 * (issue 38, `/api/v1/orgs/:org/connections`), their repositories activated with their webhook
 * and deploy key made by Sluice, and an activated repository's health. The site's token is read
 * from stdin or a prompt that does not echo (secretInput.ts), never from the command line.
 */
import type { Command } from 'commander';
import { z } from 'zod';
import { withCommonOptions, type Options } from '../common';
import { connect } from '../connection';
import { oneOf, orgRef, positiveId, repoRef } from '../inputs';
import { print, printJson, table, timeText } from '../render';
import { Repo } from '../schemas';
import { readSecret } from '../secretInput';

const SITES = ['github', 'gitlab', 'gitea', 'bitbucket', 'stash'] as const;

const Connection = z.looseObject({ id: z.number(), site: z.string(), api_url: z.string(), account: z.string(), repos: z.number(), created_at: z.string() });
const SiteRepo = z.looseObject({
  site_repo_id: z.string(),
  full_name: z.string(),
  default_branch: z.string().nullable(),
  admin: z.boolean(),
  repo: z.object({ id: z.number(), name: z.string(), active: z.boolean() }).nullable(),
});
const Health = z.looseObject({
  site: z.string(),
  api_url: z.string(),
  account: z.string(),
  site_name: z.string(),
  active: z.boolean(),
  hook: z.string(),
  deploy_key: z.string(),
  last_hook_at: z.string().nullable(),
  refused_hooks: z.number(),
  site_last_delivery: z.object({ at: z.string(), status: z.number().nullable(), ok: z.boolean() }).nullable(),
  site_error: z.string().nullable(),
});

const connectionsPath = (org: string, rest = '') => `/api/v1/orgs/${encodeURIComponent(org)}/connections${rest}`;

export function registerSiteCommands(repos: Command): void {
  withCommonOptions(
    repos
      .command('connect')
      .description("connect a hosting site to an organization; the site's access token is read from stdin or a prompt that does not echo")
      .argument('<org>', 'an organization (name or id)', orgRef)
      .requiredOption('--site <site>', `${SITES.join(', ')} (gitea: Gitea and Forgejo; bitbucket: Bitbucket Cloud; stash: Bitbucket Server and Data Center, its own address)`, oneOf(SITES))
      .requiredOption('--api-url <url>', "the site's API root, e.g. https://gitlab.com/api/v4 or https://codeberg.org/api/v1"),
  ).action(async (org: string, opts: Options<{ site: string; apiUrl: string }>) => {
    const client = connect(opts);
    const token = await readSecret(`Access token for ${opts.apiUrl}: `);
    const { data, raw } = await client.call('POST', connectionsPath(org), Connection, { site: opts.site, api_url: opts.apiUrl, token });
    if (opts.json) return printJson(raw);
    print(`connected ${data.api_url} as ${data.account}: connection ${data.id}\nits repositories: sluice repos available ${org} ${data.id}\n`);
  });

  withCommonOptions(
    repos
      .command('token')
      .description("replace a connection's token (the old one expired or was revoked); the new one is read from stdin or a prompt that does not echo")
      .argument('<org>', 'an organization (name or id)', orgRef)
      .argument('<connection>', 'the connection’s id (`sluice repos sites <org>`)', positiveId),
  ).action(async (org: string, connection: number, opts: Options) => {
    const client = connect(opts);
    const token = await readSecret(`New access token of connection ${connection}: `);
    const { data, raw } = await client.call('PUT', connectionsPath(org, `/${connection}/token`), Connection, { token });
    if (opts.json) return printJson(raw);
    print(`connection ${data.id} to ${data.api_url} uses the new token of ${data.account}, and so do the statuses of its ${data.repos} repositories\n`);
  });

  withCommonOptions(repos.command('sites').description("an organization's connected hosting sites").argument('<org>', 'an organization (name or id)', orgRef)).action(
    async (org: string, opts: Options) => {
      const { data, raw } = await connect(opts).call('GET', connectionsPath(org), z.array(Connection));
      if (opts.json) return printJson(raw);
      print(table(['ID', 'SITE', 'API', 'ACCOUNT', 'REPOSITORIES', 'CONNECTED'], data.map((c) => [c.id, c.site, c.api_url, c.account, c.repos, timeText(c.created_at)]), '(no hosting sites connected)'));
    },
  );

  withCommonOptions(
    repos
      .command('available')
      .description("the site's repositories a connection's account can see, and which are active in Sluice")
      .argument('<org>', 'an organization (name or id)', orgRef)
      .argument('<connection>', 'the connection’s id (`sluice repos sites <org>`)', positiveId),
  ).action(async (org: string, connection: number, opts: Options) => {
    const { data, raw } = await connect(opts).call('GET', connectionsPath(org, `/${connection}/repos`), z.array(SiteRepo));
    if (opts.json) return printJson(raw);
    const state = (r: z.infer<typeof SiteRepo>) => (r.repo ? `${r.repo.active ? 'active' : 'deactivated'} as ${r.repo.name}` : r.admin ? 'can activate' : 'not administered by the account');
    print(table(['SITE ID', 'REPOSITORY', 'DEFAULT BRANCH', 'IN SLUICE'], data.map((r) => [r.site_repo_id, r.full_name, r.default_branch ?? '', state(r)]), '(the site lists no repository)'));
  });

  withCommonOptions(
    repos
      .command('activate')
      .description("activate a site's repository: the Sluice repository, and its webhook and read-only deploy key at the site")
      .argument('<org>', 'an organization (name or id)', orgRef)
      .argument('<connection>', 'the connection’s id', positiveId)
      .argument('<site-repo-id>', 'the site’s id of the repository (`sluice repos available`)')
      .option('--name <name>', 'its name in Sluice (default: its name at the site)'),
  ).action(async (org: string, connection: number, siteRepoId: string, opts: Options<{ name?: string }>) => {
    const { data, raw } = await connect(opts).call('POST', connectionsPath(org, `/${connection}/repos`), Repo, { site_repo_id: siteRepoId, ...(opts.name ? { name: opts.name } : {}) });
    if (opts.json) return printJson(raw);
    print(`activated ${data.org_name}/${data.name} (id ${data.id}), pulled from ${data.pull_url}\nadd a suite for the branches to build\n`);
  });

  withCommonOptions(repos.command('site').description("an activated repository's hosting site: its webhook and deploy key there, and when hooks arrived").argument('<repo>', '<org>/<name> or its id', repoRef)).action(
    async (repo: string, opts: Options) => {
      const { data, raw } = await connect(opts).call('GET', `/api/v1/repos/${encodeURIComponent(repo)}/connection`, Health);
      if (opts.json) return printJson(raw);
      const delivery = data.site_last_delivery ? `${data.site_last_delivery.status ?? 'no answer'} at ${timeText(data.site_last_delivery.at)}` : 'none logged (or the site keeps no log)';
      print(
        table(
          ['SITE', 'REPOSITORY', 'WEBHOOK', 'DEPLOY KEY', 'LAST HOOK', 'REFUSED', 'SITE’S LAST DELIVERY'],
          [[`${data.site} ${data.api_url} as ${data.account}`, data.site_name, data.hook, data.deploy_key, data.last_hook_at ? timeText(data.last_hook_at) : 'never', data.refused_hooks, delivery]],
          '',
        ) + (data.site_error ? `the site could not be asked: ${data.site_error}\n` : ''),
      );
    },
  );

  withCommonOptions(repos.command('repair').description('make again whatever Sluice keeps at the site and is missing (and follow a rename)').argument('<repo>', '<org>/<name> or its id', repoRef)).action(
    async (repo: string, opts: Options) => {
      const { data, raw } = await connect(opts).call('POST', `/api/v1/repos/${encodeURIComponent(repo)}/connection/repair`, Repo);
      if (opts.json) return printJson(raw);
      print(`repaired ${data.org_name}/${data.name}: its webhook and deploy key are at the site\n`);
    },
  );

  withCommonOptions(repos.command('deactivate').description("remove the repository's webhook and deploy key at the site (the repository and its builds stay)").argument('<repo>', '<org>/<name> or its id', repoRef)).action(
    async (repo: string, opts: Options) => {
      await connect(opts).call('DELETE', `/api/v1/repos/${encodeURIComponent(repo)}/connection`, z.null());
      if (opts.json) return printJson({ repo, deactivated: true });
      print(`deactivated ${repo}: its webhook and deploy key are gone from the site\n`);
    },
  );
}

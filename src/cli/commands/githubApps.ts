/**
 * `repos apps|app|app-manifest|app-create|app-activate|app-deactivate`: Sluice as a GitHub App
 * (issue 38, `/api/v1/orgs/:org/github-apps`). GitHub makes an app only from a browser (its
 * manifest flow): `app-manifest` writes the page that starts it (`--html`), whose end is Sluice's
 * own web page; `app-create` finishes it from the command line with GitHub's `code` and `state`
 * instead. Then the installations' repositories are listed and activated.
 */
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { z } from 'zod';
import { withCommonOptions, type Options } from '../common';
import { connect } from '../connection';
import { orgRef, positiveId, repoRef } from '../inputs';
import { print, printJson, table, timeText } from '../render';
import { Repo } from '../schemas';

const App = z.looseObject({ id: z.number(), app_id: z.number(), name: z.string(), slug: z.string(), web_url: z.string(), owner: z.string().nullable(), install_url: z.string(), hook_url: z.string(), created_at: z.string() });
const Detail = App.extend({
  installations: z.array(z.looseObject({ installation_id: z.number(), account: z.string(), suspended: z.boolean() })),
  repositories: z.array(z.looseObject({ installation_id: z.number(), site_repo_id: z.number(), full_name: z.string(), private: z.boolean(), repo: z.object({ id: z.number(), name: z.string() }).nullable() })),
});
const Manifest = z.looseObject({ form_url: z.string(), manifest: z.record(z.string(), z.unknown()), state: z.string(), redirect_url: z.string() });

const appsPath = (org: string, rest = '') => `/api/v1/orgs/${encodeURIComponent(org)}/github-apps${rest}`;
const escapeHtml = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function registerGitHubAppCommands(repos: Command): void {
  withCommonOptions(repos.command('apps').description("an organization's GitHub Apps").argument('<org>', 'an organization (name or id)', orgRef)).action(async (org: string, opts: Options) => {
    const { data, raw } = await connect(opts).call('GET', appsPath(org), z.array(App));
    if (opts.json) return printJson(raw);
    print(table(['ID', 'APP', 'GITHUB', 'OWNER', 'INSTALL AT', 'MADE'], data.map((a) => [a.id, a.name, a.web_url, a.owner ?? '', a.install_url, timeText(a.created_at)]), '(no GitHub Apps: sluice repos app-manifest <org>)'));
  });

  withCommonOptions(
    repos
      .command('app')
      .description("a GitHub App's installations and their repositories, and which build in Sluice")
      .argument('<org>', 'an organization (name or id)', orgRef)
      .argument('<app>', 'the app’s id in Sluice (`sluice repos apps <org>`)', positiveId),
  ).action(async (org: string, app: number, opts: Options) => {
    const { data, raw } = await connect(opts).call('GET', appsPath(org, `/${app}`), Detail);
    if (opts.json) return printJson(raw);
    const account = new Map(data.installations.map((i) => [i.installation_id, `${i.account}${i.suspended ? ' (suspended)' : ''}`]));
    print(
      table(
        ['GITHUB ID', 'REPOSITORY', 'INSTALLATION', 'IN SLUICE'],
        data.repositories.map((r) => [r.site_repo_id, r.full_name, account.get(r.installation_id) ?? String(r.installation_id), r.repo ? r.repo.name : 'can activate']),
        `(not installed yet: ${data.install_url})`,
      ),
    );
  });

  withCommonOptions(
    repos
      .command('app-manifest')
      .description("start making a GitHub App: the manifest, and where a browser posts it (GitHub then sends it to Sluice's web page, which keeps the app)")
      .argument('<org>', 'an organization (name or id)', orgRef)
      .option('--web-url <url>', "GitHub's address (default https://github.com; a GitHub Enterprise Server's own)")
      .option('--owner <login>', 'the GitHub organization to own the app (default your own account)')
      .option('--html <file>', 'write a page with the form to open in a browser'),
  ).action(async (org: string, opts: Options<{ webUrl?: string; owner?: string; html?: string }>) => {
    const { data, raw } = await connect(opts).call('POST', appsPath(org, '/manifest'), Manifest, { ...(opts.webUrl ? { web_url: opts.webUrl } : {}), ...(opts.owner ? { owner: opts.owner } : {}) });
    if (opts.html) {
      const page = `<!doctype html><meta charset="utf-8"><title>Create ${escapeHtml(String(data.manifest.name))}</title>
<form method="post" action="${escapeHtml(data.form_url)}"><input type="hidden" name="manifest" value="${escapeHtml(JSON.stringify(data.manifest))}"><button type="submit">Create the app on GitHub</button></form>\n`;
      writeFileSync(opts.html, page, { mode: 0o600 });
    }
    if (opts.json) return printJson(raw);
    print(
      opts.html
        ? `open ${opts.html} in a browser signed in to GitHub and Sluice: GitHub makes the app, then Sluice keeps it (${data.redirect_url})\n`
        : `POST the manifest as the form field "manifest" to ${data.form_url} from a browser (or use --html <file>);\nor finish with: sluice repos app-create ${org} --code <code> --state <state from GitHub's redirect>\n`,
    );
  });

  withCommonOptions(
    repos
      .command('app-create')
      .description("keep the GitHub App GitHub made: trade the manifest flow's code (from GitHub's redirect) for it")
      .argument('<org>', 'an organization (name or id)', orgRef)
      .requiredOption('--code <code>', 'the `code` of GitHub’s redirect (good for an hour, once)')
      .requiredOption('--state <state>', 'the `state` of GitHub’s redirect'),
  ).action(async (org: string, opts: Options<{ code: string; state: string }>) => {
    const { data, raw } = await connect(opts).call('POST', appsPath(org), App, { code: opts.code, state: opts.state });
    if (opts.json) return printJson(raw);
    print(`kept GitHub App ${data.name} (id ${data.id}); install it at ${data.install_url}\n`);
  });

  withCommonOptions(
    repos
      .command('app-activate')
      .description("build one of a GitHub App's repositories: pulled with a token minted per checkout, reported through check runs")
      .argument('<org>', 'an organization (name or id)', orgRef)
      .argument('<app>', 'the app’s id in Sluice', positiveId)
      .argument('<github-id>', 'GitHub’s id of the repository (`sluice repos app <org> <app>`)', positiveId)
      .option('--name <name>', 'its name in Sluice (default: its name at GitHub)'),
  ).action(async (org: string, app: number, siteRepoId: number, opts: Options<{ name?: string }>) => {
    const { data, raw } = await connect(opts).call('POST', appsPath(org, `/${app}/repos`), Repo, { site_repo_id: siteRepoId, ...(opts.name ? { name: opts.name } : {}) });
    if (opts.json) return printJson(raw);
    print(`activated ${data.org_name}/${data.name} (id ${data.id}), pulled from ${data.pull_url} through the app\nadd a suite for the branches to build\n`);
  });

  withCommonOptions(repos.command('app-deactivate').description('stop building a repository through its GitHub App (it and its builds stay)').argument('<repo>', '<org>/<name> or its id', repoRef)).action(
    async (repo: string, opts: Options) => {
      await connect(opts).call('DELETE', `/api/v1/repos/${encodeURIComponent(repo)}/github-app`, z.null());
      if (opts.json) return printJson({ repo, deactivated: true });
      print(`${repo} no longer builds through its GitHub App\n`);
    },
  );
}

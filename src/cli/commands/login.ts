/**
 * `sluice login`: checks a token (a personal API token from the web pages' API tokens page, or
 * the admin token) against the API (a call that needs it) and keeps it
 * with the URL in the config file (configFile.ts). The token comes from SLUICE_TOKEN, stdin or
 * a hidden prompt; never from the command line. `sluice logout` forgets it.
 */
import type { Command } from 'commander';
import { z } from 'zod';
import { ApiClient } from '../client';
import { withCommonOptions, type Options } from '../common';
import { configPath, readConfig, removeConfig, writeConfig } from '../configFile';
import { givenUrl } from '../connection';
import { ApiError, CliError, EXIT } from '../errors';
import { adminToken } from '../inputs';
import { print, printJson } from '../render';
import { Org } from '../schemas';
import { readSecret } from '../secretInput';

/** The saved sign-in, or nothing when the file is missing or unreadable: login replaces it anyway. */
function savedUrl(file: string): string | undefined {
  try {
    return readConfig(file)?.url;
  } catch {
    return undefined;
  }
}

export function registerLogin(program: Command): void {
  withCommonOptions(
    program
      .command('login')
      .description('sign in: check your API token (or the admin token) and keep it (with the URL) in the config file, mode 0600')
      .addHelpText('after', '\nThe token is read from $SLUICE_TOKEN, else stdin (`sluice login --url URL < token-file`), else a prompt that does not echo.'),
  ).action(async (opts: Options) => {
    const file = configPath();
    const url = givenUrl(opts) ?? savedUrl(file);
    if (url === undefined) throw new CliError('which Sluice? give --url <url> (or set SLUICE_URL)', EXIT.usage);
    const parsed = adminToken.safeParse(process.env.SLUICE_TOKEN || (await readSecret(`API token for ${url}: `)));
    if (!parsed.success) throw new CliError(`the token ${parsed.error.issues[0]?.message ?? 'is not valid'}`, EXIT.usage);
    const token = parsed.data;
    let orgs: number;
    try {
      orgs = (await new ApiClient(url, token).call('GET', '/api/v1/orgs', z.array(Org))).data.length;
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) throw new CliError(`${url} refused this token (401 unauthorized); nothing was saved`);
      throw err;
    }
    writeConfig(file, { url, token });
    if (opts.json) printJson({ url, config_file: file, organizations: orgs });
    else print(`Signed in to ${url}; the token is kept in ${file}.\n`);
  });

  withCommonOptions(program.command('logout').description('forget the saved sign-in (deletes the config file)')).action((opts: Options) => {
    const file = configPath();
    const removed = removeConfig(file);
    if (opts.json) printJson({ config_file: file, removed });
    else print(removed ? `Signed out; ${file} is gone.\n` : 'Not signed in.\n');
  });
}

/**
 * Which Sluice a command talks to and with what token. The URL: `--url`, else SLUICE_URL, else
 * the one `sluice login` saved. The token: SLUICE_TOKEN, else the saved one, but only for the
 * URL it was saved with: pointing `--url` elsewhere never sends it to another server.
 */
import { ApiClient } from './client';
import { configPath, readConfig } from './configFile';
import { CliError } from './errors';
import { adminToken, baseUrl } from './inputs';

export interface CommonOptions {
  json?: boolean;
  url?: string;
}

function checked(schema: typeof baseUrl | typeof adminToken, value: string, where: string): string {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new CliError(`${where} ${parsed.error.issues[0]?.message ?? 'is not valid'}`);
  return parsed.data;
}

/** The base URL the options and environment name, if any (without the saved one). */
export function givenUrl(opts: CommonOptions, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (opts.url !== undefined) return checked(baseUrl, opts.url, '--url');
  if (env.SLUICE_URL) return checked(baseUrl, env.SLUICE_URL, 'SLUICE_URL');
  return undefined;
}

/** A client for the Sluice this command is for, signed in. */
export function connect(opts: CommonOptions, env: NodeJS.ProcessEnv = process.env): ApiClient {
  const given = givenUrl(opts, env);
  // Both given: the config file is not read (nor its problems reported).
  if (given !== undefined && env.SLUICE_TOKEN) return new ApiClient(given, checked(adminToken, env.SLUICE_TOKEN, 'SLUICE_TOKEN'));
  const saved = readConfig(configPath(env));
  const url = given ?? saved?.url;
  if (url === undefined) throw new CliError('no Sluice to talk to: sign in with `sluice login --url <url>`, or set SLUICE_URL');
  if (env.SLUICE_TOKEN) return new ApiClient(url, checked(adminToken, env.SLUICE_TOKEN, 'SLUICE_TOKEN'));
  if (saved && saved.url === url) return new ApiClient(url, saved.token);
  throw new CliError(`not signed in to ${url}: run \`sluice login --url ${url}\`, or set SLUICE_TOKEN`);
}

/**
 * Where `sluice login` keeps the Sluice it signed in to and its admin token:
 * `$XDG_CONFIG_HOME/sluice/config.json`, else `~/.config/sluice/config.json`. The token opens
 * the whole management API, so the file is the user's alone (mode 0600, its directory 0700),
 * written whole through a rename so no reader ever meets half of it.
 */
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { CliError } from './errors';
import { baseUrl, adminToken } from './inputs';

export const ConfigFile = z.strictObject({ url: baseUrl, token: adminToken });
export type ConfigFile = z.infer<typeof ConfigFile>;

/** The config file's path; XDG says a relative XDG_CONFIG_HOME is to be ignored. */
export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_CONFIG_HOME;
  const base = xdg && path.isAbsolute(xdg) ? xdg : path.join(env.HOME || os.homedir(), '.config');
  return path.join(base, 'sluice', 'config.json');
}

/** The saved sign-in, or undefined when there is none; a file that is not one is an error saying so. */
export function readConfig(file: string): ConfigFile | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new CliError(`cannot read ${file}: ${(err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new CliError(`${file} is not JSON: run \`sluice login\` again`);
  }
  const parsed = ConfigFile.safeParse(json);
  // The issue names the field only: the value may be the token.
  if (!parsed.success) throw new CliError(`${file} is not a sluice config (${parsed.error.issues[0]?.path.join('.') || 'root'}): run \`sluice login\` again`);
  return parsed.data;
}

export function writeConfig(file: string, config: ConfigFile): void {
  const dir = path.dirname(file);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // mkdir's mode applies only to a directory it makes: one left looser by hand is tightened.
  chmodSync(dir, 0o700);
  const temp = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(temp, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
    renameSync(temp, file);
  } catch (err) {
    rmSync(temp, { force: true });
    throw new CliError(`cannot write ${file}: ${(err as Error).message}`);
  }
}

/** Forgets the sign-in; whether there was one. */
export function removeConfig(file: string): boolean {
  try {
    rmSync(file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw new CliError(`cannot remove ${file}: ${(err as Error).message}`);
  }
}

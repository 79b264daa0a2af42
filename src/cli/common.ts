/** The options every command takes, and how a command's action reads them. */
import type { Command } from 'commander';
import type { CommonOptions } from './connection';

export function withCommonOptions(cmd: Command): Command {
  return cmd
    .option('--json', 'print one JSON document on stdout instead of tables')
    .option('--url <url>', 'the Sluice to talk to (default: $SLUICE_URL, else the one you signed in to)');
}

export type Options<T = object> = CommonOptions & T;

/** The options every command takes, how a command on one id is declared, and how a command's action reads its options. */
import type { Command } from 'commander';
import type { CommonOptions } from './connection';
import { positiveId } from './inputs';

/** Adds `--json` and `--url`; last, after the command's own options, so help lists them last. */
export function withCommonOptions(cmd: Command): Command {
  return cmd
    .option('--json', 'print one JSON document on stdout instead of tables')
    .option('--url <url>', 'the Sluice to talk to (default: $SLUICE_URL, else the one you signed in to)');
}

/** `<name> <arg>`: a command on one thing its id names (a session, a delivery), the id a positive whole number. */
export function commandOnId(parent: Command, name: string, description: string, arg: string, argDescription: string): Command {
  return parent.command(name).description(description).argument(arg, argDescription, positiveId);
}

export type Options<T = object> = CommonOptions & T;

/**
 * `sluice`, the command-line client of the management API: the commands, and how a run ends
 * (the exit statuses are in errors.ts). Errors go to stderr, with the API's message and the
 * field it names; stdout carries only what a command prints, so `--json` output stays one
 * document a script can parse.
 */
import { Command, CommanderError } from 'commander';
import { SLUICE_VERSION } from '../version';
import { registerBuildCommands } from './commands/builds';
import { registerLogin } from './commands/login';
import { registerRepoCommands } from './commands/repos';
import { registerSecretCommands } from './commands/secrets';
import { registerWebhookCommands } from './commands/webhooks';
import { ApiError, CliError, EXIT } from './errors';

export function buildProgram(): Command {
  const program = new Command('sluice')
    .description('Sluice from the command line: trigger and follow builds, manage secrets, webhooks and deliveries')
    .version(SLUICE_VERSION)
    .showHelpAfterError('(run with --help for usage)')
    // A command's options are its own: `repos [org] --json` lists, `repos site <repo> --json` is
    // the subcommand's (commands/repos.ts), which needs every parent to read its options in place.
    .enablePositionalOptions()
    .exitOverride()
    .addHelpText(
      'after',
      '\nStart with `sluice login --url <url>` (the admin token from stdin, $SLUICE_TOKEN or a prompt).\nExit status: 0 ok (a watched build passed); 1 failed, 2 error, 3 stopped, 4 skipped; 10 a request failed; 64 a usage error.',
    );
  registerLogin(program);
  registerBuildCommands(program);
  registerRepoCommands(program);
  registerSecretCommands(program);
  registerWebhookCommands(program);
  // Subcommands report usage errors through the same override as the program.
  for (const cmd of allCommands(program)) cmd.exitOverride().showHelpAfterError('(run with --help for usage)');
  return program;
}

function allCommands(cmd: Command): Command[] {
  return cmd.commands.flatMap((c) => [c, ...allCommands(c)]);
}

/** Runs the command line `argv` (as process.argv: node, script, args...); the exit status. */
export async function runCli(argv: string[]): Promise<number> {
  process.exitCode = undefined;
  try {
    await buildProgram().parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander has printed the problem (or the help) already.
      return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    report(err, argv.includes('--json'));
    return err instanceof CliError ? err.exitCode : EXIT.internal;
  }
}

function report(err: unknown, json: boolean): void {
  if (json) {
    const body =
      err instanceof ApiError
        ? { status: err.status, error: err.error, ...(err.field === undefined ? {} : { field: err.field }), message: err.message }
        : { error: err instanceof CliError ? 'failed' : 'internal', message: (err as Error).message };
    process.stderr.write(`${JSON.stringify(body)}\n`);
    return;
  }
  if (err instanceof ApiError) {
    process.stderr.write(`sluice: ${err.message}${err.field === undefined ? '' : ` [field: ${err.field}]`} (HTTP ${err.status} ${err.error})\n`);
  } else if (err instanceof CliError) {
    process.stderr.write(`sluice: ${err.message}\n`);
  } else {
    process.stderr.write(`sluice: internal error: ${(err as Error)?.stack ?? String(err)}\n`);
  }
}

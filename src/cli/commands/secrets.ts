/**
 * `secrets list|set|delete`: a repository's build secrets (`/api/v1/repos/:repo/secrets`). A
 * value is read from stdin or a hidden prompt (secretInput.ts), never from the command line,
 * and never printed: the API does not return it either.
 */
import type { Command } from 'commander';
import { z } from 'zod';
import { withCommonOptions, type Options } from '../common';
import { connect } from '../connection';
import { repoRef } from '../inputs';
import { print, printJson, table, timeText } from '../render';
import { Secret } from '../schemas';
import { readSecret } from '../secretInput';

const secretsPath = (repo: string, name?: string): string =>
  `/api/v1/repos/${encodeURIComponent(repo)}/secrets${name === undefined ? '' : `/${encodeURIComponent(name)}`}`;

export function registerSecretCommands(program: Command): void {
  const secrets = program.command('secrets').description("a repository's build secrets: list, set, delete");

  withCommonOptions(secrets.command('list').description('list the names (values are never shown)').argument('<repo>', '<org>/<name> or its id', repoRef)).action(
    async (repo: string, opts: Options) => {
      const { data, raw } = await connect(opts).call('GET', secretsPath(repo), z.array(Secret));
      if (opts.json) return printJson(raw);
      print(
        table(
          ['NAME', 'MASKED', 'UPDATED'],
          data.map((s) => [s.name, s.masked === null ? 'unreadable (set it again)' : s.masked ? 'yes' : 'no (too short to mask)', timeText(s.updated_at)]),
          '(no secrets)',
        ),
      );
    },
  );

  withCommonOptions(
    secrets
      .command('set')
      .description('set a secret; its value is read from stdin (`... < file`, `printf %s "$V" | ...`) or a prompt that does not echo')
      .argument('<repo>', '<org>/<name> or its id', repoRef)
      .argument('<name>', 'the environment variable the tests see it as'),
  ).action(async (repo: string, name: string, opts: Options) => {
    const client = connect(opts);
    const value = await readSecret(`Value of ${name}: `);
    // 201 with the new secret; 204 (no body) when one was replaced.
    const { data, raw } = await client.call('PUT', secretsPath(repo, name), Secret.nullable(), { value });
    if (opts.json) return printJson(raw ?? { name, replaced: true });
    print(`secret ${name} of ${repo} ${data ? 'set' : 'replaced'}${data?.masked === false ? ' (too short to be masked in logs)' : ''}\n`);
  });

  withCommonOptions(
    secrets.command('delete').description('delete a secret').argument('<repo>', '<org>/<name> or its id', repoRef).argument('<name>', 'its name'),
  ).action(async (repo: string, name: string, opts: Options) => {
    await connect(opts).call('DELETE', secretsPath(repo, name), z.null());
    if (opts.json) printJson({ name, deleted: true });
    else print(`secret ${name} of ${repo} deleted\n`);
  });
}

/**
 * Finds the `temporal` CLI that runs Sluice's dev server, building it with Go when nothing
 * else is there. `npm run temporal:install` runs this file and prints the path it settled on.
 *
 * Order: $TEMPORAL_CLI; `temporal` on PATH; the cached build in $SLUICE_CACHE_DIR/bin
 * (default ~/.cache/sluice/bin); `go install` into that cache when Go is present.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, mkdirSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The last CLI tag `go install` can build (later ones need `replace` directives). */
export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';

/** Where a tarball install of Go lands; often not on PATH in non-login shells. */
const WELL_KNOWN_GO = '/usr/local/go/bin/go';

export interface CliFacts {
  env: NodeJS.ProcessEnv;
  homeDir: string;
  /** Whether an executable file exists at this path. */
  isExecutable(file: string): boolean;
}

export type CliPlan =
  | { action: 'use'; path: string; source: 'TEMPORAL_CLI' | 'PATH' | 'cache' }
  | { action: 'build'; go: string; gobin: string; path: string }
  | { action: 'fail'; message: string };

export function cacheDir(env: NodeJS.ProcessEnv, homeDir: string): string {
  return env.SLUICE_CACHE_DIR || path.join(homeDir, '.cache', 'sluice');
}

/** First executable `name` in the PATH directories, like `command -v`. */
export function searchPath(name: string, facts: CliFacts): string | undefined {
  for (const dir of (facts.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (facts.isExecutable(candidate)) return candidate;
  }
  return undefined;
}

/** Decides where the CLI comes from. Pure apart from the isExecutable probe it is given. */
export function planTemporalCli(facts: CliFacts): CliPlan {
  const explicit = facts.env.TEMPORAL_CLI;
  if (explicit) {
    // Asked for by name: a wrong path is an error, not a reason to quietly use something else.
    if (facts.isExecutable(explicit)) return { action: 'use', path: explicit, source: 'TEMPORAL_CLI' };
    return { action: 'fail', message: `TEMPORAL_CLI=${explicit} is not an executable file` };
  }
  const onPath = searchPath('temporal', facts);
  if (onPath) return { action: 'use', path: onPath, source: 'PATH' };

  const gobin = path.join(cacheDir(facts.env, facts.homeDir), 'bin');
  const cached = path.join(gobin, 'temporal');
  if (facts.isExecutable(cached)) return { action: 'use', path: cached, source: 'cache' };

  const go = searchPath('go', facts) ?? (facts.isExecutable(WELL_KNOWN_GO) ? WELL_KNOWN_GO : undefined);
  if (go) return { action: 'build', go, gobin, path: cached };

  return {
    action: 'fail',
    message: [
      'The Temporal CLI (`temporal`) was not found, and Go is not installed to build it. Either:',
      '  - install the Temporal CLI (https://docs.temporal.io/cli) and put `temporal` on PATH,',
      '  - or set TEMPORAL_CLI to the path of a `temporal` binary,',
      `  - or install Go (https://go.dev/dl/) so Sluice can build it into ${gobin},`,
      '  - or set TEMPORAL_ADDRESS to a Temporal server you already run.',
    ].join('\n'),
  };
}

/** Whether `file` is an executable regular file. */
export function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

export interface FindTemporalCliOptions {
  env?: NodeJS.ProcessEnv;
  homeDir?: string;
  /** Set false to fail instead of running `go install` (default true). */
  allowBuild?: boolean;
}

/** Resolves the path of a usable `temporal` binary, building it with Go if need be. */
export async function findTemporalCli(opts: FindTemporalCliOptions = {}): Promise<string> {
  const env = opts.env ?? process.env;
  const plan = planTemporalCli({ env, homeDir: opts.homeDir ?? os.homedir(), isExecutable });
  switch (plan.action) {
    case 'use':
      return plan.path;
    case 'fail':
      throw new Error(plan.message);
    case 'build':
      if (opts.allowBuild === false) {
        throw new Error(`The Temporal CLI is not built yet; run \`npm run temporal:install\` (builds ${plan.path} with Go).`);
      }
      await goInstall(plan.go, plan.gobin, env);
      if (!isExecutable(plan.path)) throw new Error(`go install finished but ${plan.path} is not there`);
      return plan.path;
  }
}

async function goInstall(go: string, gobin: string, env: NodeJS.ProcessEnv): Promise<void> {
  mkdirSync(gobin, { recursive: true });
  process.stderr.write(
    `Building the Temporal CLI: ${go} install ${TEMPORAL_CLI_MODULE} (GOBIN=${gobin}).\n` +
      'The first build downloads modules and compiles for a few minutes; later starts reuse it.\n',
  );
  // go's own output (downloads, compile errors) goes to our stderr; our stdout stays for the path.
  const child = spawn(go, ['install', TEMPORAL_CLI_MODULE], {
    env: { ...env, GOBIN: gobin },
    stdio: ['ignore', process.stderr, process.stderr],
  });
  const status = await new Promise<string>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve(signal ?? `exit ${code}`));
  });
  if (status !== 'exit 0') throw new Error(`go install ${TEMPORAL_CLI_MODULE} failed (${status}); see the output above`);
}

if (require.main === module) {
  findTemporalCli().then(
    (cli) => process.stdout.write(`${cli}\n`),
    (err: Error) => {
      process.stderr.write(`${err.message}\n`);
      process.exitCode = 1;
    },
  );
}

/**
 * How a runner keeps builds away from itself and from each other, decided once at its start
 * (issue 23: safe without configuration):
 * - never as root: a root runner runs builds as SLUICE_BUILD_USER, or as a user of its own
 *   (buildUser.ts);
 * - in bubblewrap wherever it works (SLUICE_SANDBOX=auto, the default), checked with a real
 *   probe: a build then sees no process, file or secret of the runner's, and nothing it started
 *   outlives it.
 * Where bubblewrap does not work, `npm start` runs on and says so loudly (and the web UI shows
 * administrators a banner, from what the runner records); a runner started on its own refuses
 * to start unless SLUICE_SANDBOX=none says that this is meant.
 */
import { chmod, mkdir } from 'node:fs/promises';
import type { Config } from '../../config';
import type { BuildUser } from './process';
import { probeSandbox, type Sandbox } from './sandbox';
import { ownBuildUser, resolveBuildUser } from './buildUser';

export interface Isolation {
  /** The user builds run as; undefined: the runner's own (a runner that is not root). */
  runAs?: BuildUser;
  /** Its name, for messages. */
  runAsName: string | null;
  sandbox?: Sandbox;
  /** What builds on this runner can do that they should not, in words; empty when none. */
  gaps: string[];
}

export interface IsolationOptions {
  /**
   * Refuse to start when SLUICE_SANDBOX=auto finds no working bubblewrap (a runner on its own);
   * false: run on and warn (`npm start` on a laptop).
   */
  requireSandbox: boolean;
  /** The bwrap executable; default `bwrap` on PATH. */
  bwrap?: string;
  /**
   * Builds run as the runner's own user (root included) and without a sandbox, whatever the
   * configuration: only for the test suite's own builds, which talk to their test through files
   * outside their tree (test/support/sluice.ts). No role's entry point sets it.
   */
  trustedBuilds?: boolean;
}

export async function resolveIsolation(config: Config, options: IsolationOptions): Promise<Isolation> {
  if (options.trustedBuilds) return { runAsName: null, gaps: ['builds are trusted (the test suite’s own): no sandbox, the runner’s own user'] };
  const root = process.getuid?.() === 0;
  let runAs: BuildUser | undefined;
  let runAsName: string | null = null;
  if (config.buildUser) {
    runAs = resolveBuildUser(config.buildUser);
    runAsName = config.buildUser;
  } else if (root) {
    const own = await ownBuildUser();
    runAs = own.user;
    runAsName = own.name;
  }
  if (runAs) {
    // The build user reaches its own trees, and cannot list the others.
    await mkdir(config.workspaceDir, { recursive: true });
    await chmod(config.workspaceDir, 0o711);
  }

  const gaps: string[] = [];
  const mode = config.sandbox ?? 'auto';
  let sandbox: Sandbox | undefined;
  if (mode !== 'none') {
    const candidate: Sandbox = { bwrap: options.bwrap ?? 'bwrap', network: config.sandboxNetwork ?? true };
    const why = await probeSandbox(candidate, runAs);
    if (why === null) sandbox = candidate;
    else if (mode === 'bwrap' || options.requireSandbox) {
      throw new Error(
        `SLUICE_SANDBOX=${mode}: bubblewrap does not work here (${why}). Install it (apt-get install bubblewrap) where user namespaces are allowed, or set SLUICE_SANDBOX=none to run builds without it, knowing what they can then reach (docs/security.md)`,
      );
    } else gaps.push(`bubblewrap does not work here (${why})`);
  } else {
    gaps.push('no sandbox (SLUICE_SANDBOX=none)');
  }
  if (!sandbox) {
    if (!runAs) gaps.push("builds run as the runner's own user and can read its environment, the database URL and the secret key among it");
    gaps.push('builds see the runner’s processes and files any user may read, and a process a build started with setsid can outlive it');
  }
  return { runAs, runAsName, sandbox, gaps };
}

/** The warning a runner prints at start when builds are not isolated: hard to miss. */
export function isolationWarning(isolation: Isolation): string {
  const rule = '!'.repeat(78);
  return [
    rule,
    '!! sluice runner: builds on this runner are NOT isolated',
    ...isolation.gaps.map((g) => `!!   - ${g}`),
    '!! Install bubblewrap (apt-get install bubblewrap) where user namespaces are allowed, or run',
    '!! runners only for code you trust (docs/security.md).',
    rule,
  ].join('\n');
}

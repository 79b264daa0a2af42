/**
 * Pushing the tested commit to the repository's CI server (spec §1 step 4) over SSH with the
 * repository's own key, as a plain function the `pushToCiServer` activity wraps.
 *
 * It keeps git.ts's rules and reuses its helpers: the key lives only in a 0600 file in a fresh
 * 0700 directory while git runs, and is removed in `finally`; git runs without a shell, in a
 * minimal environment, SSH transports only, hooks and fsmonitor off; git's stderr is scrubbed
 * of anything key-like before it becomes a message.
 *
 * One more rule for pushing: git runs in a fresh, empty bare repository of its own that
 * borrows the checkout's objects (objects/info/alternates), not in the checkout. The tests of
 * the build ran in that checkout and could have planted configuration in its `.git` (a
 * `url.*.pushInsteadOf` sending the push, and our key's signature, elsewhere; a `push.*`
 * setting; a shallow file). Objects are content-addressed, so borrowing them is safe: the
 * commit pushed is the commit id asked for, or nothing.
 *
 * Only the branch's tip is pushed: right before pushing, with the same key file, git asks the
 * repository's pull URL what `refs/heads/<branch>` is now (ls-remote). If that is not the
 * tested commit (a trigger named another `head`, or the branch moved on or was deleted during
 * the build), nothing is pushed and the result says what the tip is.
 *
 * Sluice never force-pushes: if the CI server's branch has commits the tested one does not
 * contain, the push is rejected and the step says so.
 */
import { rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import {
  classifyGitFailure,
  displayUrl,
  gitEnv,
  isSafeRevision,
  isSshUrl,
  remoteBranchTip,
  runGit,
  scrubSecrets,
  summarizeGitStderr,
  withKeyFile,
  type GitContext,
  type HostKeys,
} from '../checkout/git';
import { DEFAULT_SCM_TIMEOUT_MS, makeScratch, ScmError } from '../checkout/scmProcess';

export interface PushCommitInput {
  /** `ssh://[user@]host[:port]/path` or scp-like `[user@]host:path`: the repository's ci_push_url. */
  pushUrl: string;
  /** The repository's pull_url: only the tip of `branch` there is pushed. */
  pullUrl: string;
  /** OpenSSH private key text (for both URLs). */
  privateKey: string;
  /** The checkout holding the commit. */
  workdir: string;
  /** Full commit id of the tested commit. */
  commitId: string;
  /** Pushed to `refs/heads/<branch>`. */
  branch: string;
  /** Limit for each git command. Default 10 minutes. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** The host keys the repository trusts; `learned` is set to what ssh knows after. */
  hostKeys?: HostKeys;
}

export type PushCommitResult =
  | {
      pushed: true;
      /** `refs/heads/<branch>` */
      ref: string;
      /** The ref was already at the commit: nothing was sent. */
      upToDate: boolean;
    }
  | {
      /** The commit is not the tip of the branch at the pull URL: nothing was sent. */
      pushed: false;
      ref: string;
      /** What the branch's tip is at the pull URL; null: the branch no longer exists there. */
      tip: string | null;
    };

export type GitPushFailure =
  | 'invalid-input' // bad URL, branch or commit id: retrying won't help
  | 'missing-commit' // the commit is not in the checkout
  | 'denied' // key not authorized (or host key problems)
  | 'not-found' // no repository at that path
  | 'rejected' // the server refused the update (non-fast-forward, a hook, a protected branch)
  | 'unreachable' // DNS, connection refused, timeouts: worth retrying
  | 'aborted'
  | 'failed';

/** A push failure with a message safe to show users and store. */
export class GitPushError extends ScmError<GitPushFailure> {
  override readonly name = 'GitPushError';
}

const COMMIT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/** The server refused the ref update, as opposed to the connection or the repository failing. */
function isRejection(text: string): boolean {
  return /\[rejected\]|\[remote rejected\]|non-fast-forward|fetch first|failed to update ref|protected branch|pre-receive hook declined|hook declined/i.test(
    text,
  );
}

/** Why a push of `commitId` to `branch` at `pushUrl` cannot even be tried, before any checkout or connection. */
export function pushInputProblem(input: Pick<PushCommitInput, 'pushUrl' | 'branch' | 'commitId'>): GitPushError | null {
  const what = `could not push to ${displayUrl(input.pushUrl)}`;
  if (!isSshUrl(input.pushUrl)) return new GitPushError(`${what}: not an SSH URL (ssh://host/path or user@host:path)`, 'invalid-input');
  if (!isSafeRevision(input.branch)) return new GitPushError(`${what}: invalid branch name ${JSON.stringify(input.branch)}`, 'invalid-input');
  if (!COMMIT_ID.test(input.commitId)) return new GitPushError(`${what}: ${JSON.stringify(input.commitId)} is not a full commit id`, 'invalid-input');
  return null;
}

export async function pushCommit(input: PushCommitInput): Promise<PushCommitResult> {
  const url = displayUrl(input.pushUrl);
  const what = `could not push to ${url}`;
  const problem = pushInputProblem(input);
  if (problem) throw problem;
  const ref = `refs/heads/${input.branch}`;

  const scratch = await makeScratch('push', input.privateKey);
  const { keyDir, keyFile } = scratch;
  const gitDir = join(scratch.dir, 'repo.git');
  const ctx: GitContext = {
    workdir: scratch.dir,
    timeoutMs: input.timeoutMs ?? DEFAULT_SCM_TIMEOUT_MS,
    signal: input.signal,
    secrets: scratch.secrets,
    // As git.ts's fetch, plus GIT_DIR: our own empty repository, never the checkout's .git.
    env: { ...gitEnv(scratch), GIT_DIR: gitDir },
  };

  const run = async (args: string[], failure: string): Promise<string> => {
    const result = await runGit(ctx, args);
    if (result.ok) return result.stdout;
    if (result.interrupted === 'timeout') throw new GitPushError(`${failure}: git timed out after ${ctx.timeoutMs} ms`, 'unreachable');
    if (result.interrupted === 'aborted') throw new GitPushError(`${failure}: aborted`, 'aborted');
    const stderr = scrubSecrets(result.stderr, ctx.secrets);
    throw new GitPushError(`${failure}: ${summarizeGitStderr(stderr) || 'git failed'}`, classifyPush(stderr));
  };

  try {
    await run(['init', '--quiet', '--bare', gitDir], 'could not prepare the push');
    await writeFile(join(gitDir, 'objects', 'info', 'alternates'), `${resolve(input.workdir, '.git', 'objects')}\n`);
    const present = await runGit(ctx, ['cat-file', '-e', `${input.commitId}^{commit}`]);
    if (!present.ok) throw new GitPushError(`${what}: commit ${input.commitId} is not in the checkout`, 'missing-commit');

    // Both under one key file: the check as close to the push as it can be. A failure to ask
    // the pull URL throws git.ts's GitPullError, classified as a fetch's (unreachable: retryable).
    const { tip, result } = await withKeyFile(
      keyDir,
      keyFile,
      input.privateKey,
      async () => {
        const tip = await remoteBranchTip(ctx, input.pullUrl, input.branch);
        if (tip !== input.commitId) return { tip, result: null };
        return { tip, result: await runGit(ctx, ['push', '--porcelain', '--no-verify', '--', input.pushUrl, `${input.commitId}:${ref}`]) };
      },
      input.hostKeys,
    );
    if (!result) return { pushed: false, ref, tip };
    // --porcelain: one line per ref on stdout, `<flag>\t<from>:<to>\t<summary>`; `=` means up
    // to date, `!` rejected (the reason in the summary, e.g. `[rejected] (non-fast-forward)`).
    const line = result.stdout.split('\n').find((l) => l.includes(`:${ref}\t`));
    if (result.ok) return { pushed: true, ref, upToDate: line?.startsWith('=') ?? false };
    if (result.interrupted === 'timeout') throw new GitPushError(`${what}: git timed out after ${ctx.timeoutMs} ms`, 'unreachable');
    if (result.interrupted === 'aborted') throw new GitPushError(`${what}: aborted`, 'aborted');
    if (line?.startsWith('!')) {
      const why = scrubSecrets(line.split('\t').slice(2).join(' ').trim(), ctx.secrets) || 'rejected';
      const hint = /non-fast-forward|fetch first/.test(why)
        ? `; the CI server's ${input.branch} has commits the tested commit does not contain (Sluice never force-pushes)`
        : '';
      const remote = summarizeGitStderr(
        scrubSecrets(result.stderr, ctx.secrets)
          .split('\n')
          .filter((l) => l.startsWith('remote:'))
          .join('\n'),
      );
      throw new GitPushError(`${what}: ${ref} ${why}${hint}${remote ? ` (${remote})` : ''}`, 'rejected');
    }
    const stderr = scrubSecrets(result.stderr, ctx.secrets);
    throw new GitPushError(`${what}: ${summarizeGitStderr(stderr) || 'git failed'}`, classifyPush(stderr));
  } finally {
    await rm(scratch.dir, { recursive: true, force: true });
  }
}

function classifyPush(stderr: string): GitPushFailure {
  if (isRejection(stderr)) return 'rejected';
  const kind = classifyGitFailure(stderr);
  return kind === 'missing-ref' ? 'failed' : kind;
}

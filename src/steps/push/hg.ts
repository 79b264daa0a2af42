/**
 * Pushing the tested changeset of a Mercurial repository to its CI server (spec §1 step 4): the
 * hg twin of git.ts, with the same input, result and errors, and the same rules.
 *
 * - The key lives in a 0600 file only while hg talks to the servers (withKeyFile); hg runs
 *   without a shell, with no configuration but ours (hg.ts's hgContext), and its stderr is
 *   scrubbed before it becomes a message.
 * - hg never runs in the build's checkout: the tests ran there and could have planted a
 *   `.hg/hgrc` (hooks run as the runner, with the key file present). It runs in a fresh
 *   repository of its own, which pulls the pull URL's changesets first. (git can borrow the
 *   checkout's objects without reading its configuration; hg cannot, so it fetches again.)
 * - Only the branch's tip is pushed: the tip of `branch` at the pull URL (its bookmark, else its
 *   newest open head, as the checkout chose) must be the tested changeset, else nothing is.
 * - Never forced: a push that would make a new head on the CI server is refused by hg, and the
 *   step says so. A branch the CI server does not have yet is created (`--new-branch`).
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { displayUrl, scrubSecrets, sshCommand, withKeyFile } from '../checkout/git';
import { branchTip, classifyHgFailure, hgContext, hgOrThrow, isHgSshUrl, isSafeHgName, runHg, summarizeHgStderr } from '../checkout/hg';
import { makeScratch } from '../checkout/scmProcess';
import { GitPushError, type GitPushFailure, type PushCommitInput, type PushCommitResult } from './git';

const CHANGESET_ID = /^[0-9a-f]{40}$/;

/**
 * Why a push cannot even be tried, before any connection. The pull URL is checked as the
 * checkout checks it: `hg pull` from a local path would read that repository's `.hg/hgrc`
 * (its hooks run with the key file present).
 */
export function hgPushInputProblem(input: Pick<PushCommitInput, 'pushUrl' | 'pullUrl' | 'branch' | 'commitId'>): GitPushError | null {
  const what = `could not push to ${displayUrl(input.pushUrl)}`;
  if (!isHgSshUrl(input.pushUrl)) return new GitPushError(`${what}: not an SSH URL (Mercurial takes ssh://host/path or ssh://host//abs/path)`, 'invalid-input');
  if (!isHgSshUrl(input.pullUrl)) {
    return new GitPushError(`${what}: the pull URL ${displayUrl(input.pullUrl)} is not an SSH URL (Mercurial takes ssh://host/path or ssh://host//abs/path)`, 'invalid-input');
  }
  if (!isSafeHgName(input.branch)) return new GitPushError(`${what}: invalid branch name ${JSON.stringify(input.branch)}`, 'invalid-input');
  if (!CHANGESET_ID.test(input.commitId)) return new GitPushError(`${what}: ${JSON.stringify(input.commitId)} is not a full changeset id`, 'invalid-input');
  return null;
}

/** `workdir` is not read: the changeset comes from the pull URL again (see above). */
export async function pushHgCommit(input: PushCommitInput): Promise<PushCommitResult> {
  const what = `could not push to ${displayUrl(input.pushUrl)}`;
  const problem = hgPushInputProblem(input);
  if (problem) throw problem;
  const ref = `branch ${input.branch}`;
  const scratch = await makeScratch('hg-push', input.privateKey);
  const repo = join(scratch.dir, 'repo');
  try {
    const ctx = await hgContext(scratch, repo, input);
    await mkdir(repo); // hg runs in it, `init` included
    await hgOrThrow(ctx, ['init', '--', repo], 'could not prepare the push', { repository: false });
    return await withKeyFile(
      scratch.keyDir,
      scratch.keyFile,
      input.privateKey,
      async () => {
        const ssh = sshCommand(scratch.keyFile);
        // A failure here is a pull's (GitPullError), classified as the checkout's would be.
        await hgOrThrow(ctx, ['pull', '--quiet', '--ssh', ssh, '--', input.pullUrl], `could not read ${displayUrl(input.pullUrl)}`);
        const tip = await branchTip(ctx, input.branch);
        if (tip !== input.commitId) return { pushed: false, ref, tip };
        const result = await runHg(ctx, ['push', '--ssh', ssh, '--rev', input.commitId, '--new-branch', '--', input.pushUrl]);
        // hg exits 1, saying so, when the CI server has the changeset already.
        if (result.ok || (!result.interrupted && /no changes found/i.test(result.stdout + result.stderr))) {
          return { pushed: true, ref, upToDate: !result.ok };
        }
        if (result.interrupted === 'timeout') throw new GitPushError(`${what}: hg timed out after ${ctx.timeoutMs} ms`, 'unreachable');
        if (result.interrupted === 'aborted') throw new GitPushError(`${what}: aborted`, 'aborted');
        const stderr = scrubSecrets(result.stderr, ctx.secrets);
        const summary = summarizeHgStderr(stderr) || 'hg failed';
        if (isRejection(stderr)) {
          const hint = /new remote head/i.test(stderr) ? `; the CI server's ${input.branch} has changesets the tested one does not contain (Sluice never forces a push)` : '';
          throw new GitPushError(`${what}: ${summary}${hint}`, 'rejected');
        }
        throw new GitPushError(`${what}: ${summary}`, classifyPush(stderr));
      },
      input.hostKeys,
    );
  } finally {
    await rm(scratch.dir, { recursive: true, force: true });
  }
}

/** The server refused the changesets (a new head, a hook), as opposed to the connection failing. */
function isRejection(stderr: string): boolean {
  return /push creates new remote head|new remote heads|pretxnchangegroup hook|prechangegroup hook|hook .*failed|rejected/i.test(stderr);
}

function classifyPush(stderr: string): GitPushFailure {
  const kind = classifyHgFailure(stderr);
  return kind === 'missing-ref' || kind === 'invalid-input' ? 'failed' : kind;
}

/**
 * Spec §1 steps 4–6 after a build (workflow code): push the tested commit to the CI server
 * when it passed, then chat and e-mail. Each runs under its own retry policy (proxies.ts); the
 * activities record the final outcome themselves and return it rather than throw for a failed
 * step, so none of them changes the build's status.
 */
import { log } from '@temporalio/workflow';
import type { BuildSummary } from '../activities/types';
import type { ResolvedImage, SessionContext, TreeRef } from '../core/session';
import type { BuildSetup } from '../core/buildSetup';
import type { SessionSnapshot } from '../core/payload';
import { resolveBuildImage } from './image';
import { notifications, postBuildHooks, pushing } from './proxies';
import { failureMessage, now } from './status';

/**
 * On a runner: the one holding the session's checkout reuses it, any other fetches the commit.
 * Only a passed build of a push to the branch: never a pull request's (core/trust.ts).
 */
export async function pushIfPassed(ctx: SessionContext, snap: SessionSnapshot, tree: TreeRef): Promise<void> {
  if (snap.status !== 'passed' || !ctx.trust.push) return;
  // As for chat and e-mail below: a failed push is recorded by the activity and returned; an
  // activity that itself failed on its last attempt is logged, and `stop` still goes out.
  await pushing(ctx)
    .pushToCiServer(tree)
    .catch((err: unknown) => log.warn('push step failed without an outcome', { sessionId: ctx.sessionId, error: failureMessage(err) }));
}

/**
 * The build's `post_build` hook (issue 21), once a build after its results are recorded, with
 * SLUICE_BUILD_STATUS; a build stopped or skipped has none. Its outcome is recorded with the
 * build's hooks and changes nothing of the result.
 */
export async function postBuildHook(
  ctx: SessionContext,
  snap: SessionSnapshot,
  outcome: { tree: TreeRef | null; setup?: BuildSetup; env?: Record<string, string>; imageName?: string | null; image?: ResolvedImage },
): Promise<void> {
  const command = outcome.setup?.hooks.post_build;
  const status = snap.status;
  if (!command || !outcome.tree || (status !== 'passed' && status !== 'failed' && status !== 'error')) return;
  const { tree } = outcome;
  const run = async () => {
    // In the build's image: the one its tests ran in, or (a plan's parent, whose parts ran theirs) the top-level one.
    const image = outcome.image ?? (outcome.imageName ? await resolveBuildImage(ctx, outcome.imageName) : undefined);
    await postBuildHooks(ctx).postBuildHook({ tree, command, env: outcome.env ?? ctx.env, secrets: ctx.trust.secrets, status, ...(image ? { image } : {}) });
  };
  await run().catch((err: unknown) => log.warn('post_build hook failed without an outcome', { sessionId: ctx.sessionId, error: failureMessage(err) }));
}

/** Chat, then e-mail; after the suite has moved on, so a slow server holds up no build. */
export async function notify(ctx: SessionContext, snap: SessionSnapshot, reason: string | null, profileName: string): Promise<void> {
  const summary: BuildSummary = {
    session: ctx.sessionId,
    repo: { orgName: ctx.repo.orgName, name: ctx.repo.name },
    branch: ctx.branch,
    commitId: snap.commitId,
    status: snap.status,
    reason,
    counts: snap.counts,
    url: ctx.url,
    profileName,
  };
  const { postChat, sendEmail } = notifications(ctx);
  // A failed post or e-mail is recorded by the activity and returned, not thrown. What does
  // throw is the activity itself failing on its last attempt (database unreachable, worker
  // lost, time-out): then the step is not recorded, but the build is over and recorded, and
  // the e-mail and the `stop` event must still go out, so the failure is logged, not raised.
  if (ctx.notify.chat) {
    await postChat({ sessionId: ctx.sessionId, summary }).catch((err: unknown) =>
      log.warn('chat step failed without an outcome', { sessionId: ctx.sessionId, error: failureMessage(err) }),
    );
  }
  if (ctx.notify.email) {
    await sendEmail({ sessionId: ctx.sessionId, summary }).catch((err: unknown) =>
      log.warn('e-mail step failed without an outcome', { sessionId: ctx.sessionId, error: failureMessage(err) }),
    );
  }
  snap.timing.post_build_hook = now();
}

/**
 * Spec §1 steps 4–6 after a build (workflow code): push the tested commit to the CI server
 * when it passed, then chat and e-mail. The activities record their own outcomes and never
 * throw for a failed step, so none of them changes the build's status.
 */
import type { BuildSummary, CheckoutResult, SessionContext } from '../activities/types';
import type { SessionSnapshot } from '../core/payload';
import { local, notifications } from './proxies';
import { now } from './status';

/** On the checkout's worker, before the checkout is cleaned up. */
export async function pushIfPassed(ctx: SessionContext, snap: SessionSnapshot, checkout: CheckoutResult): Promise<void> {
  if (snap.status !== 'passed') return;
  await local(ctx, checkout.workerQueue).pushToCiServer({
    sessionId: ctx.sessionId,
    repoId: ctx.repoId,
    workdir: checkout.workdir,
    commitId: checkout.commitId,
    branch: ctx.branch,
  });
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
  await notifications.postChat({ sessionId: ctx.sessionId, summary }).catch(() => undefined);
  await notifications.sendEmail({ sessionId: ctx.sessionId, summary }).catch(() => undefined);
  snap.timing.post_build_hook = now();
}

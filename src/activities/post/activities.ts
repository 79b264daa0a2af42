/**
 * The activities of the steps after the tests (spec §1 steps 4-6). The push runs on runners
 * (it pushes from a checkout); chat and e-mail on workers.
 *
 * pushToCiServer, postChat and sendEmail run one attempt each, under the retry policy the
 * workflow gives them (workflows/proxies.ts; the model of activities/attempt.ts, as for webhook
 * deliveries). An attempt that failed in a way another may mend (an unreachable server, a
 * time-out, a 5xx from the chat service, a 4xx SMTP reply) throws a retryable failure and
 * records nothing, unless it is the policy's last. The final outcome, success or failure, is
 * recorded once in post_build_steps and returned, never thrown, so a failing step never changes
 * the build's status. A step that is not configured (no ci_push_url, no chat_url, no SMTP_URL)
 * returns `{ <done>: false, detail }` and records nothing.
 *
 * Like checkout, they load what is secret (the SSH key, the chat URL, the SMTP password)
 * themselves, so it never enters Temporal's history; the messages of retryable failures (which
 * Temporal keeps) are scrubbed like the recorded details.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { Pool } from 'pg';
import type { ConnectionOptions } from 'node:tls';
import type { Config } from '../../config';
import { unseal } from '../../crypto/sealed';
import { activityLog, attemptsText, currentAttempt, isFinal, retryLater, type AttemptInfo } from '../attempt';
import { displayUrl, GitPullError, type HostKeys } from '../../steps/checkout/git';
import { ensureTree, holdTree, keepLearnedHostKeys, treeDeps, treeDir, withHostKeyHint } from '../../steps/checkout/tree';
import { FAILURE_TYPES, type FailureType } from '../failures';
import { withHeartbeat } from '../heartbeat';
import type { ChatInput, ChatResult, EmailInput, EmailResult, PushInput, PushResult } from '../types';
import { postChatMessage } from './chat';
import { parseSmtpUrl, sendMail } from './email';
import { hgPushInputProblem, pushHgCommit } from '../../steps/push/hg';
import { GitPushError, pushCommit, pushInputProblem } from '../../steps/push/git';
import { checkoutTokens } from '../../app/githubApps';
import { pgBuildRecords } from '../../db/buildRecords';
import { recordStep, type PostStep } from '../../db/postBuildSteps';
import { countNotification } from '../../metrics/counts';
import { loadPushTarget } from '../../db/repos';
import { listFailingTests, loadSessionTargets } from '../../db/sessions';
import { chatMessage, emailSubject, emailText } from './summary';

export interface PostDeps {
  config: Config;
  pool: Pool;
  /** Deadline of one chat attempt. Default 10 s. */
  chatTimeoutMs?: number;
  /** Deadline of each SMTP stage. Default 30 s. */
  smtpTimeoutMs?: number;
  /** Tests: extra TLS options for SMTP (a test CA); certificates are verified regardless. */
  smtpTls?: ConnectionOptions;
}

/** What one attempt of a step came to. */
interface StepAttempt {
  ok: boolean;
  /** Recorded and returned when this attempt is final. */
  detail: string;
  /** Set when another attempt may succeed: why this one failed, and the least wait a server asked for. */
  retry?: { error: string; afterMs?: number };
}

const RETRYING: Record<PostStep, FailureType> = {
  push: FAILURE_TYPES.pushRetrying,
  chat: FAILURE_TYPES.chatRetrying,
  email: FAILURE_TYPES.emailRetrying,
};

export function createPostActivities(deps: PostDeps) {
  const { config, pool } = deps;

  /**
   * Ends an attempt: a retryable failure while the policy allows another attempt and this one
   * may be mended by it; otherwise the outcome, recorded once.
   */
  async function settle(step: PostStep, sessionId: number, info: AttemptInfo, result: StepAttempt): Promise<{ ok: boolean; detail: string }> {
    const log = activityLog();
    if (result.retry && !isFinal(info)) {
      const of = info.maximumAttempts > 0 ? ` of ${info.maximumAttempts}` : '';
      const message = `${step} attempt ${info.attempt}${of} failed, to be retried: ${result.retry.error}`;
      // Info, not warn: the worker itself warns of every failed activity attempt.
      log.info(message, { sessionId, step });
      countNotification(step, 'retrying');
      throw retryLater(info, RETRYING[step], message, result.retry.afterMs);
    }
    countNotification(step, result.ok ? 'delivered' : 'failed');
    if (result.ok) log.info(`${step}: ${result.detail}`, { sessionId, step });
    else log.warn(`${step} failed: ${result.detail}`, { sessionId, step, attempt: info.attempt });
    await recordStep(pool, sessionId, step, result.ok, result.detail);
    return { ok: result.ok, detail: result.detail };
  }

  return {
    /** Spec §1 step 4, on a runner (it pushes from a checkout), only when the build passed. */
    async pushToCiServer(input: PushInput): Promise<PushResult> {
      const info = currentAttempt();
      const repo = await loadPushTarget(pool, input.repoId);
      if (!repo) throw ApplicationFailure.nonRetryable(`repository ${input.repoId} no longer exists`, FAILURE_TYPES.pushFailed);
      if (!repo.ciPushUrl) return { pushed: false, detail: 'no CI push URL configured' };
      const pushUrl = repo.ciPushUrl;
      const target = displayUrl(pushUrl);
      let pushedIt = false;
      const hg = repo.scm === 'hg';
      let release = () => {};
      const result: StepAttempt = await withHeartbeat(async (signal) => {
        try {
          const problem = (hg ? hgPushInputProblem : pushInputProblem)({ pushUrl, pullUrl: repo.pullUrl, branch: input.branch, commitId: input.commitId });
          if (problem) throw problem;
          // git pushes from the session's checkout if this runner has it, else from the commit
          // fetched afresh; hg fetches into a repository of its own (steps/push/hg.ts says why).
          const workdir = treeDir(config.workspaceDir, input.sessionId);
          // The session has ended: the runner's sweep must not take the tree from under the push.
          release = holdTree(workdir);
          if (!hg) await ensureTree(treeDeps(config, pgBuildRecords(pool, config.secretKey, checkoutTokens({ pool, config }))), input, workdir, 'objects', signal);
          // Read again: a fetch just now may have learned the pull URL's host key.
          const hostKeys: HostKeys = { known: (await loadPushTarget(pool, input.repoId))?.sshKnownHosts ?? repo.sshKnownHosts };
          const pushed = await (hg ? pushHgCommit : pushCommit)({
            pushUrl,
            pullUrl: repo.pullUrl,
            privateKey: unseal(config.secretKey, repo.sshPrivateKeySealed),
            workdir,
            commitId: input.commitId,
            branch: input.branch,
            signal,
            hostKeys,
          })
            .catch((err: unknown) => {
              // A host key refused while asking the pull URL for the tip: say what to do, as the checkout does.
              throw withHostKeyHint(err, input.repoId);
            })
            .finally(() => keepLearnedHostKeys(pgBuildRecords(pool, config.secretKey), input.repoId, hostKeys));
          if (!pushed.pushed) {
            // Recorded as ok, returned as `pushed: false`. Declining to push a commit that is not
            // (or no longer) the branch's tip is this step doing its job, not failing: a branch
            // moving on during a build is ordinary, and a red "failed" on the report page (where
            // this step shows, with the API's post_build_steps; chat and e-mail don't mention it)
            // would alarm for nothing. The detail, "not pushed: …", says nothing was and why.
            const pull = displayUrl(repo.pullUrl);
            const short = input.commitId.slice(0, 12);
            const detail = pushed.tip
              ? `not pushed: ${short} is not the tip of ${input.branch} on ${pull} (the tip is ${pushed.tip.slice(0, 12)})`
              : `not pushed: branch ${input.branch} no longer exists on ${pull}`;
            return { ok: true, detail };
          }
          pushedIt = true;
          const what = pushed.upToDate ? 'already at' : 'pushed';
          return { ok: true, detail: `${pushed.ref} ${what} ${input.commitId} on ${target}` };
        } catch (err) {
          // git.ts-style messages: already scrubbed of anything key-like.
          const message = err instanceof Error ? err.message : String(err);
          const detail = info.attempt > 1 ? `${message} ${attemptsText(info.attempt)}` : message;
          const retryable = (err instanceof GitPushError || err instanceof GitPullError) && err.retryable;
          return retryable ? { ok: false, detail, retry: { error: message } } : { ok: false, detail };
        } finally {
          release();
        }
      });
      const { detail } = await settle('push', input.sessionId, info, result);
      return { pushed: pushedIt, detail };
    },

    /** Spec §1 step 5: the summary to the repository's chat_url (or `chatUrl`). */
    async postChat(input: ChatInput): Promise<ChatResult> {
      const info = currentAttempt();
      const chatUrl = input.chatUrl ?? (await loadSessionTargets(pool, input.sessionId))?.chatUrl ?? null;
      if (!chatUrl) return { posted: false, detail: 'no chat URL configured' };
      const failing = await listFailingTests(pool, input.sessionId, 500);
      const result = await withHeartbeat(() =>
        postChatMessage({
          url: chatUrl,
          message: chatMessage(input.summary, failing),
          allow: config.webhookAllow,
          attempt: info.attempt,
          timeoutMs: deps.chatTimeoutMs,
        }),
      );
      const { ok, detail } = await settle('chat', input.sessionId, info, { ok: result.posted, detail: result.detail, retry: result.retry });
      return { posted: ok, detail };
    },

    /** Spec §1 step 6: the notification to the organization's email (or `to`) through SMTP_URL. */
    async sendEmail(input: EmailInput): Promise<EmailResult> {
      const info = currentAttempt();
      if (!config.smtpUrl) return { sent: false, detail: 'SMTP_URL not set' };
      const to = input.to ?? [(await loadSessionTargets(pool, input.sessionId))?.orgEmail].filter((a): a is string => !!a);
      let result: StepAttempt;
      const smtp = parseSmtpUrl(config.smtpUrl, config.baseUrl, { timeoutMs: deps.smtpTimeoutMs, tls: deps.smtpTls });
      if ('error' in smtp) {
        result = { ok: false, detail: smtp.error };
      } else if (to.length === 0) {
        result = { ok: false, detail: 'no recipient: the organization has no email address' };
      } else {
        const failing = await listFailingTests(pool, input.sessionId, 500);
        const sent = await withHeartbeat(() =>
          sendMail({
            smtp,
            mail: {
              to,
              subject: emailSubject(input.summary),
              text: emailText(input.summary, failing),
              headers: { 'X-Sluice-Session': String(input.summary.session), 'X-Sluice-Status': input.summary.status },
            },
            attempt: info.attempt,
          }),
        );
        result = { ok: sent.sent, detail: sent.detail, retry: sent.retry };
      }
      const { ok, detail } = await settle('email', input.sessionId, info, result);
      return { sent: ok, detail };
    },
  };
}

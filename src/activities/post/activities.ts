/**
 * The activities of the steps after the tests (spec §1 steps 4-6) and the reader of the
 * repository's sluice.yml.
 *
 * pushToCiServer, postChat and sendEmail never throw for a failed push, post or e-mail: each
 * retries what may pass (a few attempts, a few seconds apart, inside the activity), records
 * the outcome in post_build_steps, and returns it. The workflow's retry policy is then only
 * for a lost worker or an unreachable database (then the step may run again: at least once).
 * A step that is not configured (no ci_push_url, no chat_url, no SMTP_URL) returns
 * `{ <done>: false, detail }` and records nothing.
 *
 * Like checkout, they load what is secret (the SSH key, the chat URL, the SMTP password)
 * themselves, so it never enters Temporal's history.
 */
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import type { Pool } from 'pg';
import type { ConnectionOptions } from 'node:tls';
import type { Config } from '../../config';
import { unseal } from '../../crypto/sealed';
import { displayUrl } from '../build/git';
import type { ChatInput, ChatResult, EmailInput, EmailResult, PushInput, PushResult, RepoConfigInput, RepoConfigResult } from '../types';
import { DEFAULT_CHAT_RETRY_DELAYS_MS, postChatMessage } from './chat';
import { DEFAULT_EMAIL_RETRY_DELAYS_MS, parseSmtpUrl, sendMail } from './email';
import { GitPushError, pushCommit } from './push';
import { recordStep } from '../../db/postBuildSteps';
import { loadPushTarget } from '../../db/repos';
import { listFailingTests, loadSessionTargets } from '../../db/sessions';
import { readRepoConfigFile } from './repoConfig';
import { chatMessage, emailSubject, emailText } from './summary';
import { withHeartbeat } from '../heartbeat';

export interface PostDeps {
  config: Config;
  pool: Pool;
  /** Pauses between attempts (tests make them short). Defaults: push and chat 2 s, 5 s; e-mail 2 s, 10 s. */
  retryDelaysMs?: { push?: readonly number[]; chat?: readonly number[]; email?: readonly number[] };
  /** Deadline of one chat attempt. Default 10 s. */
  chatTimeoutMs?: number;
  /** Deadline of each SMTP stage. Default 30 s. */
  smtpTimeoutMs?: number;
  /** Tests: extra TLS options for SMTP (a test CA); certificates are verified regardless. */
  smtpTls?: ConnectionOptions;
}

const DEFAULT_PUSH_RETRY_DELAYS_MS = [2_000, 5_000] as const;

const sleep = (ms: number) => withHeartbeat(() => new Promise<void>((resolve) => setTimeout(resolve, ms)));

export function createPostActivities(deps: PostDeps) {
  const { config, pool } = deps;

  return {
    /** Spec §1 step 4. Call on the checkout's worker queue, only when the build passed. */
    async pushToCiServer(input: PushInput): Promise<PushResult> {
      const repo = await loadPushTarget(pool, input.repoId);
      if (!repo) throw ApplicationFailure.nonRetryable(`repository ${input.repoId} no longer exists`, 'PushFailed');
      if (!repo.ciPushUrl) return { pushed: false, detail: 'no CI push URL configured' };
      const target = displayUrl(repo.ciPushUrl);
      let result: PushResult;
      if (repo.scm !== 'git') {
        result = { pushed: false, detail: `could not push to ${target}: pushing to a CI server is supported for git repositories only` };
      } else {
        result = await withHeartbeat((signal) =>
          retrying(deps.retryDelaysMs?.push ?? DEFAULT_PUSH_RETRY_DELAYS_MS, async () => {
            try {
              const pushed = await pushCommit({
                pushUrl: repo.ciPushUrl!,
                privateKey: unseal(config.secretKey, repo.sshPrivateKeySealed),
                workdir: input.workdir,
                commitId: input.commitId,
                branch: input.branch,
                signal,
              });
              const what = pushed.upToDate ? 'already at' : 'pushed';
              return { done: true, value: { pushed: true, detail: `${pushed.ref} ${what} ${input.commitId} on ${target}` } };
            } catch (err) {
              // git.ts-style messages: already scrubbed of anything key-like.
              const message = err instanceof Error ? err.message : String(err);
              return { done: !(err instanceof GitPushError && err.retryable), value: { pushed: false, detail: message } };
            }
          }).then(({ value, attempts }) =>
            attempts > 1 && !value.pushed ? { ...value, detail: `${value.detail} (${attempts} attempts)` } : value,
          ),
        );
      }
      await recordStep(pool, input.sessionId, 'push', result.pushed, result.detail);
      return result;
    },

    /** Spec §1 step 5: the summary to the repository's chat_url (or `chatUrl`). */
    async postChat(input: ChatInput): Promise<ChatResult> {
      const chatUrl = input.chatUrl ?? (await loadSessionTargets(pool, input.sessionId))?.chatUrl ?? null;
      if (!chatUrl) return { posted: false, detail: 'no chat URL configured' };
      const failing = await listFailingTests(pool, input.sessionId, 500);
      const result = await withHeartbeat(() =>
        postChatMessage({
          url: chatUrl,
          message: chatMessage(input.summary, failing),
          allow: config.webhookAllow,
          timeoutMs: deps.chatTimeoutMs,
          retryDelaysMs: deps.retryDelaysMs?.chat ?? DEFAULT_CHAT_RETRY_DELAYS_MS,
          sleep,
        }),
      );
      await recordStep(pool, input.sessionId, 'chat', result.posted, result.detail);
      return { posted: result.posted, detail: result.detail };
    },

    /** Spec §1 step 6: the notification to the organization's email (or `to`) through SMTP_URL. */
    async sendEmail(input: EmailInput): Promise<EmailResult> {
      if (!config.smtpUrl) return { sent: false, detail: 'SMTP_URL not set' };
      const to = input.to ?? [(await loadSessionTargets(pool, input.sessionId))?.orgEmail].filter((a): a is string => !!a);
      let result: EmailResult;
      const smtp = parseSmtpUrl(config.smtpUrl, config.baseUrl, { timeoutMs: deps.smtpTimeoutMs, tls: deps.smtpTls });
      if ('error' in smtp) {
        result = { sent: false, detail: smtp.error };
      } else if (to.length === 0) {
        result = { sent: false, detail: 'no recipient: the organization has no email address' };
      } else {
        const failing = await listFailingTests(pool, input.sessionId, 500);
        result = await withHeartbeat(() =>
          sendMail({
            smtp,
            mail: {
              to,
              subject: emailSubject(input.summary),
              text: emailText(input.summary, failing),
              headers: { 'X-Sluice-Session': String(input.summary.session), 'X-Sluice-Status': input.summary.status },
            },
            retryDelaysMs: deps.retryDelaysMs?.email ?? DEFAULT_EMAIL_RETRY_DELAYS_MS,
            sleep,
          }),
        ).then((r) => ({ sent: r.sent, detail: r.detail }));
      }
      await recordStep(pool, input.sessionId, 'email', result.sent, result.detail);
      return result;
    },

    /** The repository's sluice.yml, read from the checkout. Call on the checkout's worker queue. */
    async readRepoConfig(input: RepoConfigInput): Promise<RepoConfigResult> {
      // Only ever read what checkout made.
      if (path.dirname(path.resolve(input.workdir)) !== path.resolve(config.workspaceDir)) {
        throw ApplicationFailure.nonRetryable('not a workspace', 'InvalidWorkspace');
      }
      return readRepoConfigFile(input.workdir);
    },
  };
}

/** Runs `attempt` until it says it is done or the pauses run out; returns its last value. */
async function retrying<T>(delays: readonly number[], attempt: () => Promise<{ done: boolean; value: T }>): Promise<{ value: T; attempts: number }> {
  for (let i = 0; ; i++) {
    const { done, value } = await attempt();
    if (done || i >= delays.length) return { value, attempts: i + 1 };
    await new Promise<void>((resolve) => setTimeout(resolve, delays[i]));
  }
}

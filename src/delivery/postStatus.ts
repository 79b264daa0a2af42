/**
 * One attempt to post one commit status (issue 13), logged in commit_status_attempts whatever
 * happens: load the repository's status settings, unseal its token, compose the provider's
 * request (commitStatus.ts), send it through the outgoing-webhook sender (send.ts: the SSRF
 * guard with SLUICE_WEBHOOK_ALLOW, certificates always verified, no redirects, a deadline),
 * log. The postCommitStatus activity wraps it and tells Temporal whether to try again.
 *
 * Retried: connection errors, time-outs, 408, 429 and 5xx (send.ts), and a rate limit GitHub
 * answers with 403 (commitStatus.ts). Dropped at once: any other 4xx (a wrong token, an unknown
 * repository or commit), 3xx, a certificate that does not verify, an address the guard
 * blocks, settings that cannot make a request.
 */
import { unseal } from '../crypto/sealed';
import { insertStatusAttempt, loadStatusTarget } from '../db/commitStatuses';
import { appCheckoutOfRepo } from '../db/githubApps';
import { attemptCheckRun } from './checkRuns';
import { nextDelay, outcomeOf } from './backoff';
import { alreadyInState, providerState, rateLimitWaitMs, statusRequest } from './commitStatus';
import { redact, sendWebhook, type AttemptResult } from './send';

import type { StatusAttemptDone, StatusAttemptSpec, StatusDeps } from './statusAttempt';

export type { StatusAttemptDone, StatusAttemptSpec, StatusDeps };

const DEFAULT_MAX_RETRY_AFTER_MS = 60_000;

/**
 * One attempt, logged. Null when the repository has no status provider, repository path or
 * token (any more): nothing to send, nothing logged.
 */
export async function attemptStatus(deps: StatusDeps, spec: StatusAttemptSpec): Promise<StatusAttemptDone | null> {
  const target = await loadStatusTarget(deps.pool, spec.sessionId);
  if (!target) return null;
  // A repository that builds through a GitHub App hears through check runs instead.
  const app = await appCheckoutOfRepo(deps.pool, target.repo_id);
  if (app) return attemptCheckRun(deps, spec, app, target.repo_id);
  if (!target.status_provider || !target.status_repo || !target.status_token_sealed) return null;
  const provider = target.status_provider;
  const state = providerState(provider, spec.phase);
  const base = {
    sessionId: spec.sessionId,
    repoId: target.repo_id,
    provider,
    commitId: spec.commitId,
    context: spec.context,
    state,
    attempt: spec.attempt,
  };
  const refuse = async (error: string, url: string): Promise<StatusAttemptDone> => {
    const id = await insertStatusAttempt(deps.pool, { ...base, url, statusCode: null, outcome: 'dropped', error, durationMs: 0 });
    return { id, outcome: 'dropped', state, statusCode: null, error };
  };

  let token: string;
  try {
    token = unseal(deps.secretKey, target.status_token_sealed);
  } catch {
    return refuse('cannot unseal the status token (was SLUICE_SECRET_KEY changed?): set status_token again', target.status_api_url ?? '');
  }
  const request = statusRequest(
    { provider, apiUrl: target.status_api_url, repo: target.status_repo, token },
    { phase: spec.phase, commitId: spec.commitId, targetUrl: spec.targetUrl, description: spec.description, context: spec.context, ref: spec.ref },
  );
  if ('error' in request) return refuse(redact(request.error, [token]), target.status_api_url ?? '');

  const result: AttemptResult = await sendWebhook({
    url: request.url,
    body: JSON.stringify(request.body),
    headers: request.headers,
    allow: deps.allow,
    timeoutMs: deps.timeoutMs,
    dispatcher: deps.dispatcher,
    redact: [token],
  });
  if (result.kind !== 'delivered' && alreadyInState(provider, result.statusCode, result.responseBody)) {
    result.kind = 'delivered';
    result.error = null;
  } else if (result.kind === 'fatal') {
    const waitMs = rateLimitWaitMs(result.statusCode, result.responseHeaders);
    if (waitMs !== undefined) {
      result.kind = 'retryable';
      result.retryAfterMs = waitMs;
      result.error = `rate limited: ${result.error ?? `HTTP ${result.statusCode}`}`;
    }
  }

  const outcome = outcomeOf(result, spec.attempt, spec.maxAttempts);
  const nextDelayMs =
    outcome === 'retrying' ? nextDelay(result, spec.attempt, spec.retry ?? {}, deps.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS) : undefined;
  // send.ts cut the token out of the error already; this is the belt to its braces.
  const error = result.kind === 'delivered' ? null : redact(result.error ?? 'failed', [token]);
  const id = await insertStatusAttempt(deps.pool, {
    ...base,
    url: request.url,
    statusCode: result.statusCode,
    outcome,
    error,
    durationMs: result.durationMs,
  });
  return { id, outcome, state, statusCode: result.statusCode, error, nextDelayMs };
}

/**
 * What a session is about, as the session workflow's `loadSession` activity, the API (which
 * sends `received` itself, delivery/received.ts) and CI squash's batch (delivery/squashed.ts)
 * need it: one query for the session with its suite, repository and organization, one for the
 * organization's active webhooks.
 */
import type { SessionContext } from '../core/session';
import type { SessionStatus } from '../core/types';
import { DEFAULT_POST_BUILD_WAIT_MS, DEFAULT_RUNNER_WAIT_MS, type Config } from '../config';
import { reportUrl } from '../core/reportUrl';
import { DEFAULT_POST_RETRY } from '../core/retry';
import { DEFAULT_STATUS_RETRY } from '../core/commitStatus';
import { buildTrust } from '../core/trust';
import { ownRunnersQueue } from '../core/queues';
import { findSessionsWithRepo, findSessionWithRepo, type SessionWithRepo } from './sessions';
import type { Db } from './transaction';
import { listActiveWebhookIds } from './webhooks';

export async function loadSessionContext(db: Db, config: Config, sessionId: number): Promise<SessionContext> {
  const row = await findSessionWithRepo(db, sessionId);
  if (!row) throw new Error(`session ${sessionId} does not exist`);
  return contextOf(row, await listActiveWebhookIds(db, row.org_id), config);
}

/** Several sessions' contexts in two queries per organization (a batch CI squash ended): those that exist, by id. */
export async function loadSessionContexts(db: Db, config: Config, sessionIds: readonly number[]): Promise<SessionContext[]> {
  const rows = await findSessionsWithRepo(db, sessionIds);
  const hooksOf = new Map<number, number[]>();
  for (const orgId of new Set(rows.map((r) => r.org_id))) hooksOf.set(orgId, await listActiveWebhookIds(db, orgId));
  return rows.map((row) => contextOf(row, hooksOf.get(row.org_id)!, config));
}

function contextOf(row: SessionWithRepo, webhookIds: number[], config: Config): SessionContext {
  return {
    sessionId: row.id,
    guid: row.guid,
    parentSession: row.parent_id,
    suiteId: row.suite_id,
    status: row.status as SessionStatus,
    reason: row.reason,
    timing: row.timing,
    repoId: row.repo_id,
    repo: { name: row.repo_name, url: row.pull_url, orgName: row.org_name, scm: row.scm },
    branch: row.branch,
    ref: row.ref,
    head: row.head,
    force: row.force,
    profileName: row.profile_name,
    testPattern: row.test_pattern,
    testCommand: row.test_command,
    workers: row.workers,
    env: row.trigger.env ?? {},
    // A suite that keeps its builds on its organization's runners: no trigger may send them elsewhere.
    buildQueue: row.suite_own_runners ? ownRunnersQueue(config.buildQueue, row.org_id) : (row.trigger.queue ?? config.buildQueue),
    webhookIds,
    url: reportUrl(config.baseUrl, row.id, row.report_token),
    receivedAt: row.received_at.getTime() / 1000,
    settings: {
      webhookRetry: config.webhookRetry,
      testTimeoutMs: config.testTimeoutMs,
      postRetry: config.postRetry ?? DEFAULT_POST_RETRY,
      postBuildWaitMs: config.postBuildWaitMs ?? DEFAULT_POST_BUILD_WAIT_MS,
      runnerWaitMs: config.runnerWaitMs ?? DEFAULT_RUNNER_WAIT_MS,
      statusRetry: config.statusRetry ?? DEFAULT_STATUS_RETRY,
    },
    commitStatus: row.commit_status,
    // Steps with nothing to do are not even scheduled: each is a round trip before `stop`.
    notify: { chat: row.chat_url !== null, email: Boolean(config.smtpUrl) && row.org_email !== '' },
    refspecs: row.trigger.refspec,
    junitPattern: row.junit_pattern,
    retryFailed: row.suite_retry_failed,
    trust: buildTrust(row.trigger, { trustSameRepoPullRequests: row.trust_same_repo_pull_requests }),
    suiteProfiles: row.suite_profiles,
    suitePlan: row.suite_plan ?? undefined,
    suiteSetup: {
      ...(row.suite_hooks ? { hooks: row.suite_hooks } : {}),
      ...(row.suite_cache !== null ? { cache: row.suite_cache } : {}),
      ...(row.suite_services ? { services: row.suite_services } : {}),
      ...(row.suite_artifacts ? { artifacts: row.suite_artifacts } : {}),
      ...(row.suite_image !== null ? { image: row.suite_image } : {}),
    },
    defaultBranch: row.default_branch,
    // A plan's parts have none of their own: their parent's deadline stops them.
    deadlineMinutes: row.parent_id === null ? row.suite_deadline_minutes : null,
    // A plan's part runs the profile its parent gave it; only the parent honours the trigger's.
    requestedProfile: row.parent_id === null ? (row.trigger.profileName ?? null) : null,
    ...(row.trigger.full === true ? { fullRun: true } : {}),
    ...(row.trigger.imageDigests ? { imageDigests: row.trigger.imageDigests } : {}),
  };
}

/**
 * Check runs (issue 38): how a repository that builds through a GitHub App hears of its builds,
 * in place of a commit status. One check run per status context (a suite's session, or a plan's
 * part): made `in_progress` when the tests start, completed with a conclusion, a summary (counts,
 * duration, a link to the build) and an annotation per failing test at the file and line its
 * report names: at most 50 a request, as GitHub takes them, the rest in further updates of the same
 * run (GitHub appends them). The token is minted per attempt for the repository alone with
 * `checks: write`, never stored; every attempt is logged with the commit statuses'.
 *
 * docs.github.com/rest/checks/runs: `POST /repos/{owner}/{repo}/check-runs`,
 * `PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}`.
 */
import type { Dispatcher } from 'undici';
import type { StatusPhase } from '../core/commitStatus';
import { unseal } from '../crypto/sealed';
import { insertStatusAttempt } from '../db/commitStatuses';
import { checkRunFacts, checkRunOf, saveCheckRun, type AppCheckoutRow, type FailureAnnotationRow } from '../db/githubApps';
import { installationHttp, mintInstallationToken } from '../sites/github/app';
import { SiteError } from '../sites/types';
import { nextDelay, outcomeOf } from './backoff';
import type { StatusAttemptDone, StatusAttemptSpec, StatusDeps } from './statusAttempt';
import type { AttemptResult } from './send';

/** GitHub's limit of annotations in one request. */
export const ANNOTATIONS_PER_REQUEST = 50;
/** At most this many a run: a build with thousands of failures needs its page, not a thousand marks. */
export const MAX_ANNOTATIONS = 500;

const CONCLUSIONS: Record<Exclude<StatusPhase, 'running'>, string> = { passed: 'success', failed: 'failure', error: 'failure', stopped: 'cancelled' };

export interface Annotation {
  path: string;
  start_line: number;
  end_line: number;
  annotation_level: 'failure';
  title: string;
  message: string;
}

/** A failing test as GitHub annotates it: at its file and line, titled by its name, the report's message (GitHub takes 64 KiB). */
export function annotationOf(f: FailureAnnotationRow): Annotation {
  const name = f.classname ? `${f.classname} ${f.name}` : f.name;
  const path = f.failure_file.replace(/^\.\//, '');
  return {
    path,
    start_line: Math.max(1, f.failure_line),
    end_line: Math.max(1, f.failure_line),
    annotation_level: 'failure',
    title: name.slice(0, 255),
    message: (f.message?.trim() || `${name} failed`).slice(0, 60_000),
  };
}

export interface CheckRunSummary {
  counts: Record<string, number>;
  seconds: number;
  /** Failing tests with a file and line; `annotated` of them become annotations. */
  failures: number;
  annotated: number;
}

/** The summary's Markdown: what ran, how it ended, how long it took, where to see it. */
export function checkRunSummary(s: CheckRunSummary, description: string, targetUrl: string): string {
  const c = (k: string) => s.counts[k] ?? 0;
  const rows = [
    ['passed', c('passed')],
    ['failed', c('failed')],
    ['erred', c('error')],
    ['skipped', c('skipped') + c('pending')],
  ].filter(([, n]) => (n as number) > 0);
  const minutes = Math.floor(s.seconds / 60);
  const duration = minutes > 0 ? `${minutes} min ${Math.round(s.seconds % 60)} s` : `${Math.round(s.seconds)} s`;
  const lines = [
    `**${description}** in ${duration}.`,
    '',
    rows.length > 0 ? `| test files | |\n|---|---|\n${rows.map(([k, n]) => `| ${k} | ${n} |`).join('\n')}` : 'No test files ran.',
    '',
    `[The build on Sluice](${targetUrl})`,
  ];
  if (s.failures > s.annotated) lines.push('', `Only the first ${s.annotated} failing tests are annotated; the build's page lists them all.`);
  return lines.join('\n');
}

/** The requests of one phase: the run's first request (create or update), then the further annotation batches. */
export interface CheckRunPlan {
  first: Record<string, unknown>;
  more: Annotation[][];
}

/** What to send for `phase`: `running` makes the run in progress; an outcome completes it with its summary and annotations. */
export function checkRunPlan(
  phase: StatusPhase,
  o: { name: string; headSha: string; targetUrl: string; externalId: string; description: string; now: Date; summary?: CheckRunSummary; annotations?: Annotation[] },
): CheckRunPlan {
  const common = { name: o.name, head_sha: o.headSha, details_url: o.targetUrl, external_id: o.externalId };
  if (phase === 'running') return { first: { ...common, status: 'in_progress', started_at: o.now.toISOString(), output: { title: o.description, summary: o.description } }, more: [] };
  const annotations = o.annotations ?? [];
  const batches: Annotation[][] = [];
  for (let i = 0; i < annotations.length; i += ANNOTATIONS_PER_REQUEST) batches.push(annotations.slice(i, i + ANNOTATIONS_PER_REQUEST));
  const output = (batch: Annotation[] | undefined) => ({
    title: o.description,
    summary: o.summary ? checkRunSummary(o.summary, o.description, o.targetUrl) : o.description,
    ...(batch && batch.length > 0 ? { annotations: batch } : {}),
  });
  return {
    first: { ...common, status: 'completed', conclusion: CONCLUSIONS[phase], completed_at: o.now.toISOString(), output: output(batches[0]) },
    more: batches.slice(1).map((b) => [...b]),
  };
}

export interface CheckRunDeps extends StatusDeps {
  dispatcher?: Dispatcher;
}

const repoPath = (fullName: string) => `/repos/${fullName.split('/').map(encodeURIComponent).join('/')}`;

/**
 * One attempt of a check run, logged (provider `github-app`, state `in_progress` or the
 * conclusion). A failure after the run was made retries the rest: the run's id is kept, so a
 * retry updates the same run rather than making another.
 */
export async function attemptCheckRun(deps: CheckRunDeps, spec: StatusAttemptSpec, app: AppCheckoutRow, repoId: number): Promise<StatusAttemptDone> {
  const state = spec.phase === 'running' ? 'in_progress' : CONCLUSIONS[spec.phase];
  const started = Date.now();
  const runs = `${app.api_url}${repoPath(app.full_name)}/check-runs`;
  let url = runs;
  let result: AttemptResult;
  try {
    const privateKey = unseal(deps.secretKey, app.private_key_sealed);
    const { token } = await mintInstallationToken({
      app: { apiUrl: app.api_url, appId: app.app_id, privateKey },
      installationId: app.installation_id,
      repositoryId: app.site_repo_id,
      permissions: { checks: 'write' },
      allow: deps.allow ?? [],
      dispatcher: deps.dispatcher,
      deadline: started + (deps.timeoutMs ?? 10_000) * 3,
    });
    const http = installationHttp({ apiUrl: app.api_url, token, allow: deps.allow ?? [], dispatcher: deps.dispatcher, deadline: started + (deps.timeoutMs ?? 10_000) * 3 });
    const facts = spec.phase === 'running' ? null : await checkRunFacts(deps.pool, spec.sessionId, MAX_ANNOTATIONS + 1);
    const failures = facts?.failures ?? [];
    const annotations = failures.slice(0, MAX_ANNOTATIONS).map(annotationOf);
    const plan = checkRunPlan(spec.phase, {
      name: spec.context,
      headSha: spec.commitId.toLowerCase(),
      targetUrl: spec.targetUrl,
      externalId: String(spec.sessionId),
      description: spec.description,
      now: new Date(),
      summary: facts ? { counts: facts.counts, seconds: facts.seconds, failures: failures.length, annotated: annotations.length } : undefined,
      annotations,
    });
    let id = await checkRunOf(deps.pool, spec.sessionId, spec.context);
    if (id === undefined) {
      const made = await http.need<{ id: number }>('POST', `${repoPath(app.full_name)}/check-runs`, plan.first);
      id = made.id;
      await saveCheckRun(deps.pool, spec.sessionId, spec.context, id);
    } else {
      const { head_sha: _sha, ...update } = plan.first;
      await http.need('PATCH', `${repoPath(app.full_name)}/check-runs/${id}`, update);
    }
    url = `${runs}/${id}`;
    for (const batch of plan.more) {
      await http.need('PATCH', `${repoPath(app.full_name)}/check-runs/${id}`, { output: { title: spec.description, summary: (plan.first.output as { summary: string }).summary, annotations: batch } });
    }
    result = { kind: 'delivered', statusCode: 200, error: null, durationMs: Date.now() - started };
  } catch (err) {
    result = failureOf(err, Date.now() - started);
  }
  const outcome = outcomeOf(result, spec.attempt, spec.maxAttempts);
  const nextDelayMs = outcome === 'retrying' ? nextDelay(result, spec.attempt, spec.retry ?? {}, deps.maxRetryAfterMs ?? 60_000) : undefined;
  const error = result.kind === 'delivered' ? null : (result.error ?? 'failed');
  const id = await insertStatusAttempt(deps.pool, {
    sessionId: spec.sessionId,
    repoId,
    provider: 'github-app',
    commitId: spec.commitId,
    context: spec.context,
    state,
    url,
    attempt: spec.attempt,
    statusCode: result.statusCode,
    outcome,
    error,
    durationMs: result.durationMs,
  });
  return { id, outcome, state, statusCode: result.statusCode, error, nextDelayMs };
}

/** A failed request as a delivery attempt: retried when GitHub was away, slow, rate-limited or erred; dropped when it refused. */
function failureOf(err: unknown, durationMs: number): AttemptResult {
  if (!(err instanceof SiteError)) return { kind: 'fatal', statusCode: null, error: err instanceof Error ? err.message : String(err), durationMs };
  const status = err.status;
  const retryable = status === null || status === 408 || status === 429 || status >= 500;
  return { kind: retryable ? 'retryable' : 'fatal', statusCode: status, error: err.message, durationMs };
}

/**
 * `GET /1/reports/<session>?token=<token>`: the report page (spec §2 `url`). HTML for people;
 * the same data as JSON for `Accept: application/json`. Opened by the session's random token,
 * which the payloads' `url` carries (core/reportUrl.ts), or by the admin token; a session
 * number alone answers 404, as for a session that does not exist, so numbers cannot be walked.
 *
 * A build can have thousands of test files with up to 64 KiB of output each, so the page shows
 * REPORT_FILES_PER_PAGE files at a time (`?page=<n>`, 1-based, default 1); the rest of the
 * report (counts, cases, steps) is always the whole session's. A `page` that is not a whole
 * number from 1 to MAX_REPORT_PAGE is a 400 naming `page`; a page past the last is answered,
 * with no files on it (a running build's files are still arriving).
 *
 * `GET /1/reports/<session>/artifacts/<artifact>?token=<token>`: one file the build kept,
 * opened like the report (its token, or the admin token; else 404), always downloaded as an
 * attachment that cannot run in Sluice's origin (api/artifacts.ts).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { ApiDeps } from '../deps';
import { bearerPrincipal } from '../access/principal';
import { notFound, parseId, validate } from '../../app/errors';
import { described, documented, errors, SessionParams } from '../openapi/shapes';
import { renderReport } from '../reportPage';
import { loadReportView, opensReport, reportArtifact } from '../../app/builds';
import { apiStore } from '../../app/store';
import { sendArtifact } from '../artifacts';

/** Far beyond any build's last page (5,000 files make 50), and small enough that its offset stays exact. */
export const MAX_REPORT_PAGE = 100_000;

/** The report's own query parameters; `token` is read apart, and anything else is ignored. */
const ReportQuery = z.object({
  page: z.coerce.number().int().min(1).max(MAX_REPORT_PAGE).default(1),
});

/** The report is opened by its own token (in the query), or a Bearer token that may see its build. */
const REPORT_SECURITY: Record<string, string[]>[] = [{ reportToken: [] }, { adminToken: [] }];

const reportDoc = documented({
  tag: 'reports',
  summary: 'A session’s report',
  description: 'HTML for people; the same data as JSON for `Accept: application/json`. A session that does not exist and one not opened answer the same 404.',
  security: REPORT_SECURITY,
  params: SessionParams,
  querystring: ReportQuery.extend({ token: z.string().optional().describe('the report token, as the payloads’ `url` carries it') }),
  produces: ['application/json', 'text/html'],
  response: { 200: described('the report: the session, its counts, timing, files (a page of them), cases and steps'), ...errors(400, 404) },
});

const artifactDoc = documented({
  tag: 'reports',
  summary: 'Download one artifact of a session',
  description: 'Always an attachment (`application/octet-stream`), never rendered in Sluice’s origin.',
  security: REPORT_SECURITY,
  params: SessionParams.extend({ artifact: z.string().regex(/^[1-9][0-9]*$/).describe('the artifact’s id, from the session’s artifacts') }),
  querystring: z.object({ token: z.string().optional().describe('the report token') }),
  produces: ['application/octet-stream'],
  response: { 200: z.string().describe('the file'), ...errors(404) },
});

export function registerReportRoutes(app: FastifyInstance, deps: ApiDeps): void {
  /** Whether the request opens the session's report: its token, or a Bearer token that may see its build (app/builds.ts). */
  const opens = (request: FastifyRequest<{ Querystring: { token?: unknown } }>, id: number): Promise<boolean> =>
    opensReport(deps.pool, id, request.query.token, () => bearerPrincipal(deps.pool, deps.config.adminToken, request));

  app.get<{ Params: { session: string }; Querystring: { token?: unknown } }>('/1/reports/:session', reportDoc, async (request, reply) => {
    const id = parseId(request.params.session, 'session');
    const { page } = validate(ReportQuery, request.query, 'query');
    const opened = await opens(request, id);
    const view = opened ? await loadReportView(deps.pool, deps.config, id, page) : undefined;
    if (!view) throw notFound('session');
    void reply.header('vary', 'Accept');
    if (prefersJson(request.headers.accept)) return reply.send(view);
    return reply
      .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'")
      .header('x-content-type-options', 'nosniff')
      .type('text/html; charset=utf-8')
      .send(renderReport(view));
  });

  // Not found, not opened, another session's, or its blob missing: the same 404.
  app.get<{ Params: { session: string; artifact: string }; Querystring: { token?: unknown } }>('/1/reports/:session/artifacts/:artifact', artifactDoc, async (request, reply) => {
    const id = parseId(request.params.session, 'session');
    const artifactId = parseId(request.params.artifact, 'artifact');
    const artifact = (await opens(request, id)) ? await reportArtifact(deps.pool, id, artifactId) : undefined;
    if (!artifact || !(await sendArtifact(reply, apiStore(deps.config), artifact.store_key, artifact.path))) throw notFound('artifact');
    return reply;
  });
}

/**
 * JSON when the client names application/json and prefers it to text/html (a tie goes to
 * HTML) and to any wildcard (a tie goes to JSON: `application/json, *\/*` wants JSON).
 * Browsers never name application/json, so they always get the page.
 */
export function prefersJson(accept: string | undefined): boolean {
  if (!accept) return false;
  let json = 0;
  let html = 0;
  let wildcard = 0;
  for (const part of accept.split(',')) {
    const [type = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    const qParam = params.find((p) => p.startsWith('q='));
    const q = qParam ? Number(qParam.slice(2)) || 0 : 1;
    if (type === 'application/json') json = Math.max(json, q);
    else if (type === 'text/html') html = Math.max(html, q);
    else if (type === 'text/*' || type === '*/*') wildcard = Math.max(wildcard, q);
  }
  return json > 0 && json > html && json >= wildcard;
}

/**
 * The audit trail (issue 25): every request through a route whose rule names a change (rules.ts
 * `audit`) that succeeded is recorded, with who made it, from where, the organization, the path
 * it changed and the fields it sent. Values of secrets, passwords and keys are never kept: only
 * that they were set.
 */
import type { onResponseHookHandler } from 'fastify';
import type { Pool } from 'pg';
import { insertAudit } from '../../db/audit';
import { ruleOf } from './guard';

/** Field names whose values are credentials: recorded as set, never as they are. */
const SECRET_FIELD = /secret|password|token|key|value|private/i;

/** What a request body changed, as the trail keeps it: secrets blanked, long text cut. */
export function auditDetails(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return {};
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body as Record<string, unknown>)) {
    if (key === '_csrf') continue;
    if (SECRET_FIELD.test(key)) out[key] = '(set)';
    else if (typeof value === 'string') out[key] = value.length > 200 ? `${value.slice(0, 200)}…` : value;
    else out[key] = value;
  }
  return out;
}

/** The onResponse hook of the routes whose rule names a change (access/guard.ts attaches it). */
export function auditChanges(pool: Pool): onResponseHookHandler {
  return async (request, reply) => {
    const rule = ruleOf(request);
    const principal = request.principal;
    // A form that failed is shown again with a 4xx; a redirect (303) is a form that worked.
    if (!rule?.audit || !principal || reply.statusCode >= 400) return;
    const actor = principal.email ? `${principal.name} <${principal.email}>` : principal.name === 'admin token' ? principal.name : `${principal.name} (admin token)`;
    try {
      await insertAudit(pool, {
        actor,
        userId: principal.userId,
        tokenId: principal.token?.id ?? null,
        ip: request.ip,
        orgId: request.accessOrg?.id ?? null,
        action: rule.audit,
        target: request.url.split('?')[0]!,
        details: auditDetails(request.body),
      });
    } catch (err) {
      request.log.error({ err, action: rule.audit }, 'the audit trail did not take this change');
    }
  };
}

/**
 * The audit trail (issue 25): every request through a route whose rule names a change (rules.ts
 * `audit`) that succeeded is recorded, with who made it, from where, the organization, the path
 * it changed and the fields it sent. Values of secrets, passwords and keys are never kept: only
 * that they were set.
 */
import type { onResponseHookHandler } from 'fastify';
import type { Pool } from 'pg';
import { nameOf } from '../../core/access';
import { insertAudit } from '../../db/audit';
import { ruleOf } from './guard';

/** Field names whose values are credentials (or, `env`, may hold them): recorded as set, never as they are. */
const SECRET_FIELD = /secret|password|token|key|value|private|^env$/i;
/** `user:password@` in a URL (a chat URL, a push URL). */
const URL_CREDENTIALS = /\/\/[^/@\s]+@/g;

/** What a request body changed, as the trail keeps it: secrets blanked at any depth, credentials cut from URLs, long text cut. */
export function auditDetails(body: unknown): Record<string, unknown> {
  const kept = redact(body);
  return kept !== null && typeof kept === 'object' && !Array.isArray(kept) ? (kept as Record<string, unknown>) : {};
}

function redact(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') {
    const text = value.replace(URL_CREDENTIALS, '//(set)@');
    return text.length > 200 ? `${text.slice(0, 200)}…` : text;
  }
  if (value === null || typeof value !== 'object') return value;
  if (depth > 5) return '(…)';
  if (Array.isArray(value)) return value.slice(0, 50).map((v) => redact(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    if (key === '_csrf') continue;
    out[key] = SECRET_FIELD.test(key) ? '(set)' : redact(v, depth + 1);
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
    try {
      await insertAudit(pool, {
        actor: nameOf(principal),
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

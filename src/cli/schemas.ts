/**
 * The management API's answers as the command-line client reads them: only the fields it
 * shows, each checked; everything else is kept (loose objects) for `--json`. The API's own
 * route schemas are in src/api, which the client does not import: it speaks HTTP only.
 */
import { z } from 'zod';

const id = z.number().int();
const nullableString = z.string().nullable();
const counts = z.record(z.string(), z.number());

export const Org = z.looseObject({ id, name: z.string(), email: z.string() });

export const Repo = z.looseObject({
  id,
  org_name: z.string(),
  name: z.string(),
  scm: z.string(),
  pull_url: z.string(),
  default_branch: z.string(),
  // Null for a viewer's token: the trigger key is a maintainer's.
  key: nullableString,
  pull_request_only: z.boolean(),
  ci_squash: z.boolean(),
});

export const Suite = z.looseObject({
  id,
  branch: z.string(),
  test_pattern: z.string(),
  test_command: nullableString,
  workers: z.number(),
  last_built_commit: nullableString,
});

export const SessionListItem = z.looseObject({
  session: id,
  repository: z.looseObject({ name: z.string(), org_name: z.string() }),
  branch: z.string(),
  commit_id: nullableString,
  status: z.string(),
  reason: nullableString,
  counts,
  duration_ms: z.number().nullable(),
  received_at: z.string(),
  url: z.string(),
});

export const Test = z.looseObject({
  path: z.string(),
  status: z.string(),
  exit_code: z.number().nullable(),
  duration_ms: z.number(),
  worker: z.number().nullable(),
  flaky: z.boolean(),
});

/** What a profile with `affected:` ran and why (core/affected.ts AffectedSummary). */
const Affected = z.discriminatedUnion('mode', [
  z.looseObject({ mode: z.literal('map'), commit: z.string() }),
  z.looseObject({ mode: z.literal('full'), reason: z.string() }),
  z.looseObject({ mode: z.literal('selected'), map_commit: z.string(), ran: z.number(), total: z.number(), causes: z.array(z.string()), reasons: z.record(z.string(), z.string()) }),
]);

export const Session = z.looseObject({
  session: id,
  status: z.string(),
  reason: nullableString,
  branch: z.string(),
  commit_id: nullableString,
  counts,
  url: z.string(),
  stopped_by: z.string().optional(),
  affected: Affected.optional(),
  repository: z.looseObject({ name: z.string(), org_name: z.string() }),
  tests: z.array(Test),
});

export const Rebuilt = z.looseObject({ session: id, guid: z.string(), url: z.string() });

/** `POST /1/builds/<KEY>`: a trigger taken, or one the hook's event made Sluice ignore. */
export const TriggerAnswer = z.looseObject({ status: z.literal(0), guid: z.string().optional(), ignored: z.string().optional() });

export const CiEvent = z.looseObject({
  guid: z.string(),
  decision: z.string(),
  reason: nullableString,
  branch: nullableString,
  /** False while the trigger's records are on their way (absent from older servers: recorded). */
  recorded: z.boolean().optional(),
  sessions: z.array(z.looseObject({ session: id, status: z.string(), url: z.string() })),
});

export const Secret = z.looseObject({ name: z.string(), masked: z.boolean().nullable(), updated_at: z.string() });

export const Webhook = z.looseObject({
  id,
  url: z.string(),
  username: nullableString,
  has_password: z.boolean(),
  signed: z.boolean(),
  closure: nullableString,
  active: z.boolean(),
});

export const Delivery = z.looseObject({
  id,
  xid: z.string(),
  event: z.string(),
  session: z.number().nullable(),
  attempt: z.number(),
  status_code: z.number().nullable(),
  outcome: z.string(),
  error: nullableString,
  duration_ms: z.number(),
  created_at: z.string(),
});

/** `GET /api/v1/sessions/:id/output`, one NDJSON line (api/output.ts). */
export const OutputSource = z.discriminatedUnion('kind', [
  z.looseObject({ kind: z.literal('file'), key: z.string(), path: z.string(), worker: z.number() }),
  z.looseObject({ kind: z.literal('batch'), key: z.string(), batch: z.number(), worker: z.number() }),
  z.looseObject({ kind: z.literal('hook'), key: z.string(), hook: z.number(), name: nullableString, worker: z.number().nullable() }),
]);

export const OutputEvent = z.discriminatedUnion('event', [
  z.looseObject({
    event: z.literal('output'),
    seq: z.number().int(),
    source: OutputSource,
    text: z.string(),
    end: z.looseObject({ status: z.string(), exit_code: z.number().nullable(), duration_ms: z.number().nullable() }).nullable(),
  }),
  z.looseObject({ event: z.literal('done'), status: z.string() }),
]);
export type OutputEvent = z.infer<typeof OutputEvent>;

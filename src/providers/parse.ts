import type { Scm, TriggerEvent } from '../core/types';
import { ProviderProblem } from './common';
import { fromProviderTrigger } from './event';
import type { ProviderAdapter, ProviderInput } from './types';

/**
 * One delivery to `POST /1/<provider>/<KEY>`, whichever adapter it addresses: the raw body
 * decoded by its content type, handed to the adapter, and its triggers turned into
 * TriggerEvents (event.ts). Pure; the route does the key, the signature and the I/O.
 *
 * The body is read the same way for every path:
 * - empty or whitespace-only, whatever the content type: no body;
 * - `application/json` (also `*+json`): JSON;
 * - `application/x-www-form-urlencoded`: a form, as an object of strings (a field sent more
 *   than once: the array of its values, which the adapter refuses or ignores);
 * - anything else, or not UTF-8: 400. The spec requires `application/json` for JSON, and
 *   guessing would let a mistyped hook build the wrong branch.
 */

export interface Delivery {
  contentType: string | undefined;
  body: string | Buffer | undefined | null;
  /** Request headers, names in lower case. */
  headers?: ProviderInput['headers'];
  query?: Record<string, unknown>;
  /** The addressed repository's SCM; absent: the trigger's own. */
  repoScm?: Scm;
}

/** Refs one delivery may change: each is a session with its own events (a Bitbucket Server body once made 8,000). */
export const MAX_REFS_PER_DELIVERY = 20;
/** Fields of a form body, counting repeats; no hook sends more than a handful. */
export const MAX_FORM_FIELDS = 100;

export type DeliveryResult =
  | { ok: true; events: [TriggerEvent, ...TriggerEvent[]] }
  | { ok: true; ignore: string }
  | { ok: false; status: 400 | 422; field: string; message: string };

export function parseDelivery(adapter: ProviderAdapter, d: Delivery): DeliveryResult {
  let body: DecodedBody;
  try {
    body = decodeBody(d.contentType, d.body);
  } catch (err) {
    if (err instanceof ProviderProblem) return { ok: false, status: err.status, field: err.field, message: err.message };
    throw err;
  }
  const result = adapter.parse({
    headers: d.headers ?? {},
    body: body.value,
    format: body.format,
    // The adapter checks it: an array (`?branch=a&branch=b`) is its 400.
    query: { branch: d.query?.branch },
    repoScm: d.repoScm,
  });
  if (!result.ok || 'ignore' in result) return result;
  if (result.triggers.length > MAX_REFS_PER_DELIVERY) {
    return {
      ok: false,
      status: 400,
      field: 'body',
      message: `this delivery changes ${result.triggers.length} refs; Sluice builds at most ${MAX_REFS_PER_DELIVERY} from one delivery (push fewer refs at a time)`,
    };
  }

  const events: TriggerEvent[] = [];
  const ignored: string[] = [];
  for (const t of result.triggers) {
    const converted = fromProviderTrigger(adapter.name, t, d.repoScm);
    if (!converted.ok) return converted;
    if ('ignore' in converted) ignored.push(converted.ignore);
    else events.push(converted.event);
  }
  const [first, ...rest] = events;
  return first ? { ok: true, events: [first, ...rest] } : { ok: true, ignore: ignored.join('; ') };
}

interface DecodedBody {
  value: unknown;
  format: 'json' | 'form';
}

/** `application/json; charset=utf-8` → `application/json`. */
export function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

function decodeBody(contentType: string | undefined, raw: string | Buffer | undefined | null): DecodedBody {
  const text = decodeText(raw);
  if (text.trim() === '') return { value: undefined, format: 'json' };
  const media = mediaType(contentType);
  if (media === 'application/json' || media.endsWith('+json')) {
    try {
      return { value: JSON.parse(text) as unknown, format: 'json' };
    } catch (err) {
      throw new ProviderProblem(400, 'body', `invalid JSON: ${(err as Error).message}`);
    }
  }
  if (media === 'application/x-www-form-urlencoded') return { value: formObject(text), format: 'form' };
  throw new ProviderProblem(
    400,
    'content-type',
    `unsupported content type ${media === '' ? '(none)' : JSON.stringify(media.slice(0, 100))}; send application/json or application/x-www-form-urlencoded`,
  );
}

function decodeText(raw: string | Buffer | undefined | null): string {
  if (raw === undefined || raw === null) return '';
  if (typeof raw === 'string') return raw;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(raw);
  } catch {
    throw new ProviderProblem(400, 'body', 'not valid UTF-8');
  }
}

/** One pass over the fields (getAll per name is quadratic in their number), at most MAX_FORM_FIELDS. */
function formObject(text: string): Record<string, string | string[]> {
  const byName = new Map<string, string[]>();
  let count = 0;
  for (const [name, value] of new URLSearchParams(text)) {
    count += 1;
    if (count > MAX_FORM_FIELDS) throw new ProviderProblem(400, 'body', `a form may have at most ${MAX_FORM_FIELDS} fields`);
    const values = byName.get(name);
    if (values) values.push(value);
    else byName.set(name, [value]);
  }
  // fromEntries defines own properties: a field named `__proto__` stays a field.
  return Object.fromEntries([...byName].map(([name, all]) => [name, all.length === 1 ? all[0]! : all]));
}

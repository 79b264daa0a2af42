import { isPlainObject, malformed } from '../common';
import { given, type GenericFields } from './fields';

/**
 * The form-encoded trigger: `branch`, `head`, `force` (`"true"`), `payload` (JSON text whose
 * `ref` is `refs/heads/<branch>`). Other fields are ignored, even when sent twice.
 */

const FORM_FIELDS = ['branch', 'head', 'force', 'payload'] as const;

/** `form`: the fields as the route decoded them, a field sent more than once as the array of its values. */
export function formFields(form: unknown): GenericFields {
  if (!isPlainObject(form)) malformed('body', 'expected a form');
  const value: Partial<Record<(typeof FORM_FIELDS)[number], string>> = {};
  for (const name of FORM_FIELDS) {
    const v = Object.hasOwn(form, name) ? form[name] : undefined;
    // Two values for one field leave it open which branch or commit was meant.
    if (Array.isArray(v)) malformed(name, 'given more than once');
    if (typeof v === 'string') value[name] = v;
  }

  let force: boolean | undefined;
  if (value.force !== undefined) {
    const f = value.force.trim().toLowerCase();
    if (f === 'true') force = true;
    else if (f === 'false' || f === '') force = false;
    else malformed('force', 'expected "true" or "false"');
  }

  let branch = given(value.branch);
  let branchField = 'branch';
  if (branch === undefined && value.payload !== undefined && value.payload.trim() !== '') {
    const fromPayload = branchFromPayload(value.payload);
    if (fromPayload !== undefined) {
      branch = fromPayload;
      branchField = 'payload.ref';
    }
  }
  return { branch, branchField, head: given(value.head), force };
}

/** The branch named by `payload`'s `ref: refs/heads/<branch>`, if it names one. */
function branchFromPayload(payloadText: string): string | undefined {
  let payload: unknown;
  try {
    payload = JSON.parse(payloadText);
  } catch (err) {
    malformed('payload', `invalid JSON: ${(err as Error).message}`);
  }
  if (!isPlainObject(payload)) malformed('payload', 'expected a JSON object');
  const ref = payload.ref;
  if (ref === undefined || ref === null || ref === '') return undefined;
  if (typeof ref !== 'string') malformed('payload.ref', 'expected string');
  // A tag or any other ref is not a branch: building master instead would be wrong.
  if (!ref.startsWith('refs/heads/')) malformed('payload.ref', 'expected refs/heads/<branch>');
  return ref.slice('refs/heads/'.length);
}

import { z } from 'zod';
import { malformed, isPlainObject, read } from '../common';
import type { ChangesetKind } from '../../core/types';
import { given, type GenericFields } from './fields';

/**
 * The generic JSON payload (spec §2). The Mercurial changegroup hook sends the same shape
 * (`source`, `op`, `force`, `branch`, `ref`, `head`), so it is read here too. Unknown fields
 * are ignored (senders add fields).
 */

export const MAX_REFSPECS = 64;
const CHANGESET_KINDS = ['github', 'gerrit', 'review', 'generic'] as const satisfies readonly ChangesetKind[];

const optionalString = z.string().nullish();

/** Exported for the OpenAPI document (api/openapi), which shows it with examples. */
export const JsonTrigger = z.object({
  source: optionalString,
  op: z.literal('push').nullish(),
  force: z.boolean().nullish(),
  queue_position: z.enum(['tail', 'head']).nullish(),
  scm: z.enum(['git', 'hg', '']).nullish(),
  head: optionalString,
  branch: optionalString,
  ref: optionalString,
  profile_name: optionalString,
  // Every test file, over a profile's `affected:` selection (issue 40).
  full: z.boolean().nullish(),
  refspec: z.array(z.string()).max(MAX_REFSPECS).nullish(),
  changeset: z
    .object({
      kind: z.enum(CHANGESET_KINDS).nullish(),
      id: optionalString,
      url: optionalString,
    })
    .nullish(),
  // Checked by hand (see checkEnv): a zod record would copy a `__proto__` key onto its output.
  env: z.unknown().optional(),
  queue: optionalString,
}).meta({
  examples: [
    { branch: 'master' },
    { op: 'push', branch: 'feature/login', head: '9fceb02d0ae598e95dc970b74767f19372d61af8', force: true, queue_position: 'head' },
    { ref: 'refs/heads/master', env: { RAILS_ENV: 'test' } },
  ],
});

export function jsonFields(value: unknown): GenericFields {
  if (!isPlainObject(value)) malformed('body', 'expected a JSON object');
  const b = read(JsonTrigger, value);
  const changeset = b.changeset
    ? { kind: b.changeset.kind ?? undefined, id: given(b.changeset.id), url: given(b.changeset.url) }
    : undefined;
  return {
    branch: given(b.branch),
    branchField: 'branch',
    head: given(b.head),
    ref: given(b.ref),
    scm: b.scm === '' || b.scm == null ? undefined : b.scm,
    force: b.force ?? undefined,
    queuePosition: b.queue_position ?? undefined,
    profileName: given(b.profile_name),
    full: b.full ?? undefined,
    refspec: b.refspec ?? undefined,
    changeset,
    env: b.env ?? undefined,
    queue: given(b.queue),
  };
}

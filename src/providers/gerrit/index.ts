import { z } from 'zod';
import { defineProvider, makeTrigger, malformed, type Outcome, type ParseContext, quote, read, unsupported } from '../common';
import { person } from '../commits';
import { refUpdateTrigger } from '../push';
import { branchRef, zSha } from '../refs';
import type { ProviderCommit } from '../types';

/**
 * Gerrit Code Review (`POST /1/gerrit/<KEY>`). Gerrit has no webhooks of its own and sends no
 * header to tell events apart, so the body says what it is:
 *
 * - a `stream-events` JSON object (relayed by a listener), told apart by its `type`:
 *   `patchset-created` (a review to build) and `ref-updated` (a direct push or a submit);
 * - the `patchset-created` hook's arguments posted as a JSON object (`change`, `change-url`,
 *   `project`, `branch`, `uploader`, `commit`, `patchset`, ...: the names without their
 *   leading `--`; `change_url` style is accepted too);
 * - the `ref-updated` hook's arguments the same way (`oldrev`, `newrev`, `refname`).
 *
 * A patch set is a review of a change to `branch`: it is built in that branch's suite from
 * its own ref, `refs/changes/<last two digits>/<change>/<patch set>`.
 */

const STREAM_TYPES = ['patchset-created', 'ref-updated'] as const;

export const gerrit = defineProvider('gerrit', (ctx) => {
  if (Object.hasOwn(ctx.body, 'type')) return streamEvent(ctx);
  const args = hookArgs(ctx.body);
  if (Object.hasOwn(args, 'refname') || Object.hasOwn(args, 'newrev')) return refUpdatedHook(ctx, args);
  return patchsetCreatedHook(args);
});

// ---- stream-events ----

const NumberLike = z.union([z.number().int().nonnegative(), z.string().regex(/^\d+$/, { error: 'expected a number' })]);

const Account = z.object({ name: z.string().nullish(), email: z.string().nullish() }).nullish();

const PatchsetCreated = z.object({
  change: z.object({
    branch: z.string(),
    number: NumberLike.nullish(),
    id: z.string().nullish(),
    url: z.string().nullish(),
    subject: z.string().nullish(),
    commitMessage: z.string().nullish(),
  }),
  patchSet: z.object({
    number: NumberLike,
    revision: zSha,
    ref: z.string().nullish(),
    author: Account,
    uploader: Account,
  }),
});

const RefUpdated = z.object({
  refUpdate: z.object({
    oldRev: z.string().nullish(),
    newRev: z.string(),
    refName: z.string(),
  }),
});

function streamEvent(ctx: ParseContext): Outcome {
  const { type } = read(z.object({ type: z.string() }), ctx.body);
  if (type === 'patchset-created') {
    const { change, patchSet } = read(PatchsetCreated, ctx.body);
    const message = change.commitMessage ?? change.subject;
    const author = patchSet.author ?? patchSet.uploader;
    // Only the message's subject when Gerrit is too old to send the whole message.
    const commits: ProviderCommit[] =
      message != null ? [{ id: patchSet.revision, message, author: person(author?.name, author?.email) }] : [];
    return review({
      event: type,
      branch: change.branch,
      branchField: 'change.branch',
      head: patchSet.revision,
      number: change.number == null ? null : String(change.number),
      changeId: change.id ?? null,
      url: change.url ?? null,
      patchset: String(patchSet.number),
      ref: patchSet.ref ?? null,
      refField: 'patchSet.ref',
      commits,
    });
  }
  if (type === 'ref-updated') {
    const { refUpdate } = read(RefUpdated, ctx.body);
    return refUpdated(ctx, refUpdate.refName, refUpdate.oldRev, refUpdate.newRev, { ref: 'refUpdate.refName', after: 'refUpdate.newRev' });
  }
  unsupported('type', `stream event ${quote(type)} is not one Sluice acts on; forward only ${STREAM_TYPES.join(' and ')}`);
}

// ---- hook arguments ----

/** `--change-url`, `change_url` → `change-url`. */
function hookArgs(body: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    const name = key.replace(/^--/, '').replace(/_/g, '-');
    if (name !== '__proto__') out[name] = value;
  }
  return out;
}

const PatchsetCreatedHook = z.object({
  // Change-Id, or the `project~branch~Change-Id` triple of newer Gerrit.
  change: z.string().nullish(),
  'change-url': z.string().nullish(),
  branch: z.string(),
  commit: zSha,
  patchset: NumberLike,
});

function patchsetCreatedHook(args: Record<string, unknown>): Outcome {
  const hook = read(PatchsetCreatedHook, args);
  const url = hook['change-url'] ?? null;
  return review({
    event: 'patchset-created',
    branch: hook.branch,
    branchField: 'branch',
    head: hook.commit,
    // The hook gives no change number; the change URL ends with it.
    number: url ? (/\/(\d+)\/?$/.exec(url)?.[1] ?? null) : null,
    changeId: hook.change ?? null,
    url,
    patchset: String(hook.patchset),
    ref: null,
    refField: 'patchset',
    // The hook names the commit but not its message.
    commits: [],
  });
}

const RefUpdatedHook = z.object({
  oldrev: z.string().nullish(),
  newrev: z.string(),
  refname: z.string(),
});

function refUpdatedHook(ctx: ParseContext, args: Record<string, unknown>): Outcome {
  const hook = read(RefUpdatedHook, args);
  return refUpdated(ctx, hook.refname, hook.oldrev, hook.newrev, { ref: 'refname', after: 'newrev' });
}

// ---- shared ----

function refUpdated(
  ctx: ParseContext,
  refName: string,
  oldRev: string | null | undefined,
  newRev: string,
  fields: { ref: string; after: string },
): Outcome {
  // Gerrit before 2.x wrote branches without `refs/heads/`.
  const ref = refName.startsWith('refs/') ? refName : `refs/heads/${refName}`;
  // Every patch set and review note also moves a ref; the patch sets arrive as patchset-created.
  if (ref.startsWith('refs/changes/') || ref.startsWith('refs/meta/') || ref.startsWith('refs/cache-automerge/')) {
    return { ignore: `ref-updated ${quote(ref)}: Gerrit's own bookkeeping, not a branch or tag` };
  }
  return refUpdateTrigger(ctx, 'ref-updated', { ref, before: oldRev, after: newRev, commits: [], fields });
}

interface Review {
  event: string;
  branch: string;
  branchField: string;
  head: string;
  number: string | null;
  changeId: string | null;
  url: string | null;
  patchset: string;
  ref: string | null;
  refField: string;
  commits: ProviderCommit[];
}

function review(r: Review): Outcome {
  const target = branchRef(r.branch, r.branchField);
  const ref = r.ref ?? (r.number ? changeRef(r.number, r.patchset) : null);
  if (ref !== null && !/^refs\/changes\/\d{2}\/\d+\/\d+$/.test(ref)) malformed(r.refField, 'expected refs/changes/<nn>/<change>/<patch set>');
  const id = r.number ?? r.changeId;
  if (!id) malformed('change', 'required: the change number (in the change URL) or the Change-Id');
  return makeTrigger(r.event, 'pull-request', {
    branch: target.name,
    head: r.head,
    ref,
    commits: r.commits,
    pullRequest: {
      id,
      url: r.url,
      action: r.patchset === '1' ? 'opened' : 'updated',
      providerAction: r.event,
      targetBranch: target.name,
      changesetKind: 'gerrit',
      // Anyone who may upload a change may run its code: a change is never a trusted branch.
      sameRepository: false,
    },
  });
}

/** Gerrit's ref for patch set `p` of change `n`: `refs/changes/<n mod 100, two digits>/<n>/<p>`. */
export function changeRef(change: string, patchset: string): string {
  return `refs/changes/${change.slice(-2).padStart(2, '0')}/${change}/${patchset}`;
}

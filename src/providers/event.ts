import { branchNameProblem, CONTROL, isHttpUrl, isWellFormed, MAX_NAME_BYTES, MAX_URL_LENGTH, tokenProblem } from '../core/names';
import type { Scm, TriggerEvent } from '../core/types';
import type { ProviderTrigger } from './types';

/** Commits kept with a provider trigger: the newest, head last. Enough for the rules and the record. */
export const MAX_TRIGGER_COMMITS = 50;
const MAX_MESSAGE_CHARS = 16 * 1024;

export type ProviderConversion =
  | { ok: true; event: TriggerEvent }
  | { ok: true; ignore: string }
  | { ok: false; status: 400; field: string; message: string };

/**
 * An adapter's trigger as the TriggerEvent the rest of Sluice reads:
 * - `branch` is the suite the trigger addresses: the branch; for a pull request its target
 *   branch (a fork can name its branch `master`: the source branch never picks the suite or
 *   its settings; it is kept as `sourceBranch`); for a tag the tag's name (core/selection: a
 *   tag builds only in a suite named after it);
 * - `head` is the commit the payload names, else the tag's ref, else for a pull request its
 *   private ref or source branch, else `HEAD`/`tip` (the tip of the branch);
 * - a pull request's private ref (`refs/pull/7/head`, `refs/changes/..`) is also fetched, as
 *   a refspec, so a commit that only a fork has can be checked out;
 * - the pull request becomes `changeset` (spec §2), its action `action`;
 * - the build options (generic format) are copied, else the defaults;
 * - commits are kept (the newest MAX_TRIGGER_COMMITS, messages cut at 16 KiB) for the skip tags.
 * A tag whose name the payload does not give (Mercurial) has nothing to address: `ignore`.
 * Without `repoScm` the trigger's own SCM is taken as the repository's.
 */
export function fromProviderTrigger(provider: string, t: ProviderTrigger, repoScm?: Scm): ProviderConversion {
  if (repoScm !== undefined && t.scm !== repoScm) {
    return { ok: false, status: 400, field: 'scm', message: `this is a ${t.scm} hook; this repository uses ${repoScm}` };
  }
  const isTag = t.kind === 'tag' || t.kind === 'tag-delete';
  const pr = t.kind === 'pull-request' ? t.pullRequest : undefined;
  const name = isTag ? (t.ref?.startsWith('refs/tags/') ? t.ref.slice('refs/tags/'.length) : null) : (pr?.targetBranch ?? t.branch);
  const what = t.event ?? 'the trigger';
  if (name === null) return { ok: true, ignore: isTag ? `${what}: a tag without a name Sluice can read` : `${what}: names no branch` };

  const o = t.options ?? {};
  // Not the target's tip: a pull request without a commit id builds its own ref or branch.
  const defaultHead = (isTag || pr) && t.ref !== null ? t.ref : pr && t.branch !== null ? t.branch : t.scm === 'hg' ? 'tip' : 'HEAD';
  const event: TriggerEvent = {
    provider,
    op: 'push',
    branch: name,
    head: t.head ?? defaultHead,
    scm: t.scm,
    force: o.force ?? false,
    queuePosition: o.queuePosition ?? 'tail',
    env: o.env ?? {},
  };
  if (t.kind !== undefined) event.kind = t.kind;
  if (t.event !== undefined) event.event = t.event;
  if (t.ref !== null) event.ref = t.ref;
  if (o.profileName !== undefined) event.profileName = o.profileName;
  if (o.full === true) event.full = true;
  if (o.refspec !== undefined) event.refspec = o.refspec;
  else if (t.ref !== null && t.scm === 'git' && t.kind === 'pull-request' && !/^refs\/(heads|tags)\//.test(t.ref)) {
    event.refspec = [`+${t.ref}:${t.ref}`];
  }
  if (o.changeset !== undefined) event.changeset = o.changeset;
  if (o.queue !== undefined) event.queue = o.queue;
  if (t.pullRequest) {
    const pr = t.pullRequest;
    event.changeset = { kind: pr.changesetKind, id: pr.id };
    if (pr.url !== undefined) event.changeset.url = pr.url;
    event.action = pr.action;
    if (t.branch !== null && t.branch !== name) event.sourceBranch = t.branch;
    if (pr.sameRepository) event.sameRepository = true;
  }
  if (t.commits.length > 0) {
    event.commits = t.commits.slice(-MAX_TRIGGER_COMMITS).map((c) => ({
      id: c.id,
      message: c.message.length > MAX_MESSAGE_CHARS ? c.message.slice(0, MAX_MESSAGE_CHARS) : c.message,
      author: c.author.slice(0, MAX_NAME_BYTES),
    }));
  }

  const problem = eventProblem(event);
  if (problem) return { ok: false, status: 400, ...problem };
  return { ok: true, event };
}

/**
 * Checks a TriggerEvent by the rules the generic format obeys (adapters check names as they
 * read them; this is the last guard): the first problem as `{field, message}`, or undefined.
 */
export function eventProblem(e: TriggerEvent): { field: string; message: string } | undefined {
  const branch = branchNameProblem(e.branch);
  if (branch) return { field: 'branch', message: branch };
  for (const [field, value] of [['head', e.head], ['ref', e.ref], ['profile_name', e.profileName]] as const) {
    const problem = value === undefined ? undefined : tokenProblem(value);
    if (problem) return { field, message: problem };
  }
  for (const [i, spec] of (e.refspec ?? []).entries()) {
    const problem = tokenProblem(spec);
    if (problem) return { field: `refspec.${i}`, message: problem };
  }
  if (e.changeset?.id !== undefined) {
    const id = e.changeset.id;
    if (Buffer.byteLength(id, 'utf8') > MAX_NAME_BYTES) return { field: 'changeset.id', message: `must be at most ${MAX_NAME_BYTES} bytes` };
    if (CONTROL.test(id) || !isWellFormed(id)) return { field: 'changeset.id', message: 'must not contain control characters or invalid Unicode' };
  }
  if (e.changeset?.url !== undefined) {
    const url = e.changeset.url;
    if (url.length > MAX_URL_LENGTH || !isWellFormed(url) || !isHttpUrl(url)) return { field: 'changeset.url', message: 'expected an http or https URL' };
  }
  return undefined;
}

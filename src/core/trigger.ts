import { z } from 'zod';
import { firstProblem } from './issues';
import type { ProviderTrigger } from '../providers/types';
import type { ChangesetKind, Scm, TriggerEvent } from './types';

/**
 * The generic trigger formats of `POST /1/builds/<KEY>` (spec §2, §4) turned into one
 * TriggerEvent. Pure: the route hands over the raw body, its content type and the query, and
 * gets back either the event or a 400 naming the field.
 *
 * Formats:
 * - empty (or whitespace-only) body, whatever the content type: build `master` at its head;
 * - `application/json` (also `*+json`): the generic payload; the Mercurial changegroup hook
 *   sends the same shape (`source`, `op`, `force`, `branch`, `ref`, `head`);
 * - `application/x-www-form-urlencoded`: `branch`, `head`, `force` (`"true"`), `payload`
 *   (JSON text whose `ref` is `refs/heads/<branch>`).
 *
 * Which branch is built, first that applies:
 *   1. the body's `branch` (form: the `branch` field),
 *   2. form only: the branch in `payload.ref`,
 *   3. the `?branch=` query parameter (spec: for hooks whose payload lacks a branch),
 *   4. `master`.
 * A leading `refs/heads/` is dropped from any of these.
 *
 * Decisions the spec leaves open, made here:
 * - `null` or `""` for a string field means "not given" (the spec already reads an empty `scm`
 *   as git), so hook templates with blank placeholders still work;
 * - unknown JSON fields are ignored (providers add fields); unknown form fields too;
 * - with no `scm` in the body the repository's own SCM decides (so an empty body on an hg
 *   repository builds `tip`), and a body naming the other SCM is an error;
 * - a body with any other content type is refused: the spec requires `application/json` for
 *   JSON, and guessing would let a mistyped hook build the wrong branch;
 * - every name that later reaches git or hg (branch, head, ref, refspec) must not start with
 *   `-` and holds no whitespace or control characters, so it can never become an option.
 */

export interface TriggerRequest {
  /** Path segment after `/1/`: `builds` for the generic formats. */
  provider?: string;
  contentType: string | undefined;
  body: string | Buffer | undefined | null;
  query?: Record<string, unknown>;
  /** The addressed repository's SCM: the default when the trigger names none. */
  repoScm?: Scm;
}

export type TriggerResult =
  | { ok: true; event: TriggerEvent }
  | { ok: false; status: 400; field: string; message: string };

export const MAX_NAME_BYTES = 255;
const MAX_REFSPECS = 64;
const MAX_ENV_VARS = 256;
const MAX_URL_LENGTH = 2048;
const CHANGESET_KINDS = ['github', 'gerrit', 'review', 'generic'] as const satisfies readonly ChangesetKind[];

/** What a format yields before defaults: every field already type-checked. */
interface TriggerFields {
  branch?: string;
  /** Which field the branch came from, for error messages. */
  branchField?: string;
  head?: string;
  ref?: string;
  scm?: Scm;
  force?: boolean;
  queuePosition?: 'tail' | 'head';
  profileName?: string;
  refspec?: string[];
  changeset?: { kind?: ChangesetKind; id?: string; url?: string };
  env?: unknown;
  queue?: string;
}

class TriggerProblem extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

export function parseTrigger(req: TriggerRequest): TriggerResult {
  try {
    return { ok: true, event: buildEvent(req) };
  } catch (err) {
    if (err instanceof TriggerProblem) return { ok: false, status: 400, field: err.field, message: err.message };
    throw err;
  }
}

function buildEvent(req: TriggerRequest): TriggerEvent {
  const text = decodeBody(req.body);
  const fields = text.trim() === '' ? {} : parseByContentType(req.contentType, text);
  const queryBranch = readQueryBranch(req.query);
  return normalize(req.provider ?? 'builds', fields, queryBranch, req.repoScm);
}

function decodeBody(body: string | Buffer | undefined | null): string {
  if (body === undefined || body === null) return '';
  if (typeof body === 'string') return body;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    throw new TriggerProblem('body', 'not valid UTF-8');
  }
}

/** `application/json; charset=utf-8` → `application/json`. */
export function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

function parseByContentType(contentType: string | undefined, text: string): TriggerFields {
  const media = mediaType(contentType);
  if (media === 'application/json' || media.endsWith('+json')) return parseJsonTrigger(text);
  if (media === 'application/x-www-form-urlencoded') return parseFormTrigger(text);
  throw new TriggerProblem(
    'content-type',
    `unsupported content type ${media === '' ? '(none)' : JSON.stringify(media)}; send application/json or application/x-www-form-urlencoded`,
  );
}

// ---- JSON (generic and Mercurial changegroup) ----

const optionalString = z.string().nullish();

const JsonTrigger = z.object({
  source: optionalString,
  op: z.literal('push').nullish(),
  force: z.boolean().nullish(),
  queue_position: z.enum(['tail', 'head']).nullish(),
  scm: z.enum(['git', 'hg', '']).nullish(),
  head: optionalString,
  branch: optionalString,
  ref: optionalString,
  profile_name: optionalString,
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
});

function parseJsonTrigger(text: string): TriggerFields {
  const value = parseJson(text, 'body');
  if (!isPlainObject(value)) throw new TriggerProblem('body', 'expected a JSON object');
  const parsed = JsonTrigger.safeParse(value, { reportInput: true });
  if (!parsed.success) {
    const { field, message } = firstProblem(parsed.error);
    throw new TriggerProblem(field, message);
  }
  const b = parsed.data;
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
    refspec: b.refspec ?? undefined,
    changeset,
    env: b.env ?? undefined,
    queue: given(b.queue),
  };
}

// ---- form-encoded ----

const FORM_FIELDS = ['branch', 'head', 'force', 'payload'] as const;

function parseFormTrigger(text: string): TriggerFields {
  const form = new URLSearchParams(text);
  const value: Partial<Record<(typeof FORM_FIELDS)[number], string>> = {};
  for (const name of FORM_FIELDS) {
    const all = form.getAll(name);
    // Two values for one field leave it open which branch or commit was meant.
    if (all.length > 1) throw new TriggerProblem(name, 'given more than once');
    if (all.length === 1) value[name] = all[0];
  }

  let force: boolean | undefined;
  if (value.force !== undefined) {
    const f = value.force.trim().toLowerCase();
    if (f === 'true') force = true;
    else if (f === 'false' || f === '') force = false;
    else throw new TriggerProblem('force', 'expected "true" or "false"');
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
  const payload = parseJson(payloadText, 'payload');
  if (!isPlainObject(payload)) throw new TriggerProblem('payload', 'expected a JSON object');
  const ref = payload.ref;
  if (ref === undefined || ref === null || ref === '') return undefined;
  if (typeof ref !== 'string') throw new TriggerProblem('payload.ref', 'expected string');
  // A tag or any other ref is not a branch: building master instead would be wrong.
  if (!ref.startsWith('refs/heads/')) throw new TriggerProblem('payload.ref', 'expected refs/heads/<branch>');
  return ref.slice('refs/heads/'.length);
}

// ---- query ----

function readQueryBranch(query: Record<string, unknown> | undefined): string | undefined {
  const v = query?.branch;
  if (v === undefined || v === null) return undefined;
  if (Array.isArray(v)) throw new TriggerProblem('query.branch', 'given more than once');
  if (typeof v !== 'string') throw new TriggerProblem('query.branch', 'expected string');
  return given(v);
}

// ---- defaults and checks common to every format ----

function normalize(provider: string, f: TriggerFields, queryBranch: string | undefined, repoScm: Scm | undefined): TriggerEvent {
  if (f.scm !== undefined && repoScm !== undefined && f.scm !== repoScm) {
    throw new TriggerProblem('scm', `this repository uses ${repoScm}`);
  }
  const scm: Scm = f.scm ?? repoScm ?? 'git';

  const [rawBranch, branchField] =
    f.branch !== undefined ? [f.branch, f.branchField ?? 'branch'] : queryBranch !== undefined ? [queryBranch, 'query.branch'] : ['master', 'branch'];
  const branch = stripHeads(rawBranch);
  const branchProblem = branchNameProblem(branch);
  if (branchProblem) throw new TriggerProblem(branchField, branchProblem);

  const head = f.head ?? (scm === 'hg' ? 'tip' : 'HEAD');
  checkToken('head', head);

  const event: TriggerEvent = {
    provider,
    op: 'push',
    branch,
    head,
    scm,
    force: f.force ?? false,
    queuePosition: f.queuePosition ?? 'tail',
    env: checkEnv(f.env),
  };
  if (f.ref !== undefined) event.ref = checkToken('ref', f.ref);
  if (f.profileName !== undefined) event.profileName = checkToken('profile_name', f.profileName);
  if (f.refspec !== undefined) event.refspec = f.refspec.map((r, i) => checkToken(`refspec.${i}`, r));
  if (f.changeset !== undefined) event.changeset = checkChangeset(f.changeset);
  if (f.queue !== undefined) event.queue = checkQueue(f.queue);
  return event;
}

function stripHeads(name: string): string {
  return name.startsWith('refs/heads/') ? name.slice('refs/heads/'.length) : name;
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Why `name` is not acceptable as a branch name, or undefined when it is. The rules of
 * `git check-ref-format --branch`, plus a length cap; applied to hg branches too (so an hg
 * branch with a space in its name cannot be built).
 */
export function branchNameProblem(name: string): string | undefined {
  if (name === '') return 'must not be empty';
  if (Buffer.byteLength(name, 'utf8') > MAX_NAME_BYTES) return `must be at most ${MAX_NAME_BYTES} bytes`;
  if (!isWellFormed(name)) return 'must be valid Unicode';
  if (CONTROL.test(name)) return 'must not contain control characters';
  if (/\s/.test(name)) return 'must not contain whitespace';
  if (name.startsWith('-')) return 'must not start with "-"';
  if (name.includes('..')) return 'must not contain ".."';
  if (/[~^:?*[\\]/.test(name)) return 'must not contain any of ~ ^ : ? * [ \\';
  if (name === '@' || name.includes('@{')) return 'must not be "@" or contain "@{"';
  if (name.startsWith('/') || name.endsWith('/') || name.includes('//')) return 'must not start or end with "/" or contain "//"';
  if (name.endsWith('.')) return 'must not end with "."';
  for (const part of name.split('/')) {
    if (part.startsWith('.')) return 'no part may start with "."';
    if (part.endsWith('.lock')) return 'no part may end with ".lock"';
  }
  return undefined;
}

/** A commit id, ref or profile name: one word that cannot be read as a command-line option. */
function checkToken(field: string, value: string): string {
  const problem = tokenProblem(value);
  if (problem) throw new TriggerProblem(field, problem);
  return value;
}

function tokenProblem(value: string): string | undefined {
  if (Buffer.byteLength(value, 'utf8') > MAX_NAME_BYTES) return `must be at most ${MAX_NAME_BYTES} bytes`;
  if (CONTROL.test(value) || /\s/.test(value)) return 'must not contain whitespace or control characters';
  if (!isWellFormed(value)) return 'must be valid Unicode';
  if (value.startsWith('-')) return 'must not start with "-"';
  return undefined;
}

/**
 * Checks a TriggerEvent made elsewhere (from a provider's payload) by the rules the generic
 * formats obey: the first problem as `{field, message}`, or undefined.
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

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** No lone UTF-16 surrogate: such a string has no UTF-8 form (PostgreSQL refuses it in jsonb). */
export function isWellFormed(value: string): boolean {
  return !LONE_SURROGATE.test(value);
}

/** Task queue names: kept to a tame alphabet since the spec leaves their format open. */
function checkQueue(value: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$/.test(value)) {
    throw new TriggerProblem('queue', 'expected 1-200 characters of letters, digits and . _ : / - (not starting with a symbol)');
  }
  return value;
}

function checkChangeset(c: NonNullable<TriggerFields['changeset']>): NonNullable<TriggerEvent['changeset']> {
  const out: NonNullable<TriggerEvent['changeset']> = { kind: c.kind ?? 'generic' };
  if (c.id !== undefined) {
    if (Buffer.byteLength(c.id, 'utf8') > MAX_NAME_BYTES) throw new TriggerProblem('changeset.id', `must be at most ${MAX_NAME_BYTES} bytes`);
    if (CONTROL.test(c.id)) throw new TriggerProblem('changeset.id', 'must not contain control characters');
    if (!isWellFormed(c.id)) throw new TriggerProblem('changeset.id', 'must be valid Unicode');
    out.id = c.id;
  }
  if (c.url !== undefined) {
    // Shown as a link on the report page: only http(s), so it can never be `javascript:`.
    if (c.url.length > MAX_URL_LENGTH || !isWellFormed(c.url) || !isHttpUrl(c.url)) throw new TriggerProblem('changeset.url', 'expected an http or https URL');
    out.url = c.url;
  }
  return out;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Environment variables for the build: names a shell would accept, string values without NUL. */
function checkEnv(env: unknown): Record<string, string> {
  if (env === undefined || env === null) return {};
  if (!isPlainObject(env)) throw new TriggerProblem('env', 'expected object');
  const entries = Object.entries(env);
  if (entries.length > MAX_ENV_VARS) throw new TriggerProblem('env', `must have at most ${MAX_ENV_VARS} variables`);
  for (const [name, value] of entries) {
    if (!ENV_NAME.test(name) || name === '__proto__') throw new TriggerProblem(`env.${name}`, 'not a valid variable name');
    if (typeof value !== 'string') throw new TriggerProblem(`env.${name}`, 'expected string');
    if (value.includes('\u0000')) throw new TriggerProblem(`env.${name}`, 'must not contain NUL');
    if (!isWellFormed(value)) throw new TriggerProblem(`env.${name}`, 'must be valid Unicode');
  }
  // fromEntries defines own properties, so even odd names cannot reach a prototype.
  return Object.fromEntries(entries) as Record<string, string>;
}

// ---- small helpers ----

function parseJson(text: string, field: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new TriggerProblem(field, `invalid JSON: ${(err as Error).message}`);
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** null, undefined and "" all mean "not given". */
function given(v: string | null | undefined): string | undefined {
  return v === null || v === undefined || v === '' ? undefined : v;
}

export function isHttpUrl(value: string): boolean {
  try {
    const u = new URL(value);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

// ---- provider hooks (`POST /1/<provider>/<KEY>`) ----

/** Commits kept with a provider trigger: the newest, head last. Enough for the rules and the record. */
export const MAX_TRIGGER_COMMITS = 50;
const MAX_MESSAGE_CHARS = 16 * 1024;

export type ProviderConversion =
  | { ok: true; event: TriggerEvent }
  | { ok: true; ignore: string }
  | { ok: false; status: 400; field: string; message: string };

/**
 * A provider adapter's trigger (src/providers) as the TriggerEvent the rest of Sluice reads:
 * - `branch` is the suite the trigger addresses: the branch (a pull request's source branch),
 *   or for a tag the tag's name (core/selection: a tag builds only in a suite named after it);
 * - `head` is the commit the payload names, else the tag's ref, else `HEAD`/`tip` (the tip of
 *   the branch);
 * - a pull request's private ref (`refs/pull/7/head`, `refs/changes/..`) is also fetched, as
 *   a refspec, so a commit that only a fork has can be checked out;
 * - the pull request becomes `changeset` (spec §2), its action `action`;
 * - commits are kept (the newest MAX_TRIGGER_COMMITS, messages cut at 16 KiB) for the skip tags.
 * A tag whose name the payload does not give (Mercurial) has nothing to address: `ignore`.
 */
export function fromProviderTrigger(provider: string, t: ProviderTrigger, repoScm: Scm): ProviderConversion {
  if (t.scm !== repoScm) return { ok: false, status: 400, field: 'scm', message: `this is a ${t.scm} hook; this repository uses ${repoScm}` };
  const isTag = t.kind === 'tag' || t.kind === 'tag-delete';
  const name = isTag ? (t.ref?.startsWith('refs/tags/') ? t.ref.slice('refs/tags/'.length) : null) : t.branch;
  if (name === null) return { ok: true, ignore: isTag ? `${t.event}: a tag without a name Sluice can read` : `${t.event}: names no branch` };

  const defaultHead = isTag && t.ref !== null ? t.ref : repoScm === 'hg' ? 'tip' : 'HEAD';
  const event: TriggerEvent = {
    provider,
    op: 'push',
    branch: name,
    head: t.head ?? defaultHead,
    scm: t.scm,
    force: false,
    queuePosition: 'tail',
    env: {},
    kind: t.kind,
    event: t.event,
  };
  if (t.ref !== null) event.ref = t.ref;
  if (t.ref !== null && t.scm === 'git' && t.kind === 'pull-request' && !/^refs\/(heads|tags)\//.test(t.ref)) {
    event.refspec = [`+${t.ref}:${t.ref}`];
  }
  if (t.pullRequest) {
    const pr = t.pullRequest;
    event.changeset = { kind: pr.changesetKind, id: pr.id };
    if (pr.url !== undefined) event.changeset.url = pr.url;
    event.action = pr.action;
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

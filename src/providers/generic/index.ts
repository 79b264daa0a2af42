import { MAX_ENV_VARS, triggerEnvProblem } from '../../core/triggerEnv';
import { branchNameProblem, CONTROL, isHttpUrl, isWellFormed, MAX_NAME_BYTES, MAX_URL_LENGTH, tokenProblem } from '../../core/names';
import type { Scm } from '../../core/types';
import { defineAdapter, malformed } from '../common';
import type { BuildOptions, ProviderInput, ProviderTrigger } from '../types';
import { given, type GenericFields } from './fields';
import { formFields } from './form';
import { jsonFields } from './json';

/**
 * The generic formats of `POST /1/builds/<KEY>` (spec §2, §4): one trigger, no event header.
 *
 * Formats (the route has decoded the body by its content type):
 * - no body (empty or whitespace-only, whatever the content type): build `master` at its head;
 * - JSON: the generic payload, or the Mercurial changegroup hook's (json.ts);
 * - form-encoded: `branch`, `head`, `force`, `payload` (form.ts).
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
 * - every name that later reaches git or hg (branch, head, ref, refspec) must not start with
 *   `-` and holds no whitespace or control characters, so it can never become an option.
 *
 * Unlike the hosting providers' hooks the trigger says no kind (it is read as `pull-request`
 * with a `changeset`, else `push`) and carries build options (`force`, `env`, `queue`, ...).
 */


export const generic = defineAdapter('builds', (input) => {
  const fields = input.body === undefined ? {} : input.format === 'form' ? formFields(input.body) : jsonFields(input.body);
  return trigger(fields, readQueryBranch(input.query), input.repoScm);
});

function readQueryBranch(query: ProviderInput['query'] | undefined): string | undefined {
  const v = query?.branch;
  if (v === undefined || v === null) return undefined;
  if (Array.isArray(v)) malformed('query.branch', 'given more than once');
  if (typeof v !== 'string') malformed('query.branch', 'expected string');
  return given(v);
}

/** Defaults and checks: the first problem is the 400, in the order the fields are listed. */
function trigger(f: GenericFields, queryBranch: string | undefined, repoScm: Scm | undefined): ProviderTrigger {
  if (f.scm !== undefined && repoScm !== undefined && f.scm !== repoScm) malformed('scm', `this repository uses ${repoScm}`);
  const scm: Scm = f.scm ?? repoScm ?? 'git';

  const [rawBranch, branchField] =
    f.branch !== undefined ? [f.branch, f.branchField ?? 'branch'] : queryBranch !== undefined ? [queryBranch, 'query.branch'] : ['master', 'branch'];
  const branch = rawBranch.startsWith('refs/heads/') ? rawBranch.slice('refs/heads/'.length) : rawBranch;
  const branchProblem = branchNameProblem(branch);
  if (branchProblem) malformed(branchField, branchProblem);

  const head = checkToken('head', f.head ?? (scm === 'hg' ? 'tip' : 'HEAD'));
  const options: BuildOptions = {
    force: f.force ?? false,
    queuePosition: f.queuePosition ?? 'tail',
    env: checkEnv(f.env),
  };
  const ref = f.ref === undefined ? null : checkToken('ref', f.ref);
  if (f.profileName !== undefined) options.profileName = checkToken('profile_name', f.profileName);
  if (f.full === true) options.full = true;
  if (f.refspec !== undefined) options.refspec = f.refspec.map((r, i) => checkToken(`refspec.${i}`, r));
  if (f.changeset !== undefined) options.changeset = checkChangeset(f.changeset);
  if (f.queue !== undefined) options.queue = checkQueue(f.queue);
  return { branch, head, ref, scm, commits: [], options };
}

function checkToken(field: string, value: string): string {
  const problem = tokenProblem(value);
  if (problem) malformed(field, problem);
  return value;
}

/** Task queue names: kept to a tame alphabet since the spec leaves their format open. */
function checkQueue(value: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$/.test(value)) {
    malformed('queue', 'expected 1-200 characters of letters, digits and . _ : / - (not starting with a symbol)');
  }
  return value;
}

function checkChangeset(c: NonNullable<GenericFields['changeset']>): NonNullable<BuildOptions['changeset']> {
  const out: NonNullable<BuildOptions['changeset']> = { kind: c.kind ?? 'generic' };
  if (c.id !== undefined) {
    if (Buffer.byteLength(c.id, 'utf8') > MAX_NAME_BYTES) malformed('changeset.id', `must be at most ${MAX_NAME_BYTES} bytes`);
    if (CONTROL.test(c.id)) malformed('changeset.id', 'must not contain control characters');
    if (!isWellFormed(c.id)) malformed('changeset.id', 'must be valid Unicode');
    out.id = c.id;
  }
  if (c.url !== undefined) {
    // Shown as a link on the report page: only http(s), so it can never be `javascript:`.
    if (c.url.length > MAX_URL_LENGTH || !isWellFormed(c.url) || !isHttpUrl(c.url)) malformed('changeset.url', 'expected an http or https URL');
    out.url = c.url;
  }
  return out;
}

/**
 * Environment variables for the build: string values without NUL, under the trigger policy of
 * core/triggerEnv.ts (names, a deny list of what changes how programs load or connect, caps).
 */
function checkEnv(env: unknown): Record<string, string> {
  if (env === undefined || env === null) return {};
  if (typeof env !== 'object' || Array.isArray(env)) malformed('env', 'expected object');
  const entries = Object.entries(env);
  if (entries.length > MAX_ENV_VARS) malformed('env', `must have at most ${MAX_ENV_VARS} variables`);
  for (const [name, value] of entries) {
    if (name === '__proto__') malformed(`env.${name}`, 'not a valid variable name');
    if (typeof value !== 'string') malformed(`env.${name}`, 'expected string');
    if (value.includes('\u0000')) malformed(`env.${name}`, 'must not contain NUL');
    if (!isWellFormed(value)) malformed(`env.${name}`, 'must be valid Unicode');
  }
  // fromEntries defines own properties, so even odd names cannot reach a prototype.
  const checked = Object.fromEntries(entries) as Record<string, string>;
  const problem = triggerEnvProblem(checked);
  if (problem) malformed(problem.field, problem.message);
  return checked;
}

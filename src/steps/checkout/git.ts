/**
 * Pulling a repository over SSH with the repository's own key, as a plain function the
 * `checkout` activity wraps.
 *
 * Safety rules this module keeps:
 * - The private key only ever lives in a 0600 file inside a fresh mkdtemp directory, for as
 *   long as the network part (fetch) runs; it is removed in `finally`. It is never put on a
 *   command line, in an argument list, an error message or a log; git's stderr is scrubbed
 *   before it becomes an error message.
 * - git runs through spawn (no shell) with a minimal environment, so nothing of the
 *   worker's environment (database URL, secret key, tokens) reaches git, ssh or their hooks.
 * - Only SSH transports are allowed (GIT_ALLOW_PROTOCOL=ssh): a pull URL can't turn into
 *   `ext::` commands or local file access.
 * - We fetch from the URL directly rather than a configured remote, and override hooks and
 *   fsmonitor on every call, because the tests of a previous build ran inside this working
 *   tree and could have planted config or hooks in `.git` that would otherwise run while the
 *   key file exists. (Besides, fetches now always go into a directory git made: tree.ts.)
 * - Host keys are trusted on first use per repository (withKeyFile, sshCommand): a server that
 *   presents another key than the one first recorded is refused, so nobody on the network path
 *   can serve different code.
 */
import { copyFile, lchown, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { discardMirror, MIRROR_LOCK_WAIT_MS, MirrorBusy, mirrorPath, prepareMirrors, withMirrorLock } from './mirror';
import { DEFAULT_SCM_TIMEOUT_MS, exists, makeScratch, parseCommitters, runScmProcess, ScmError, SSH_DENIED, summarizeStderr, type ScmContext, type ScmOutcome, type ScmScratch } from './scmProcess';

/**
 * A pull of a repository, git's or hg's: where from, with what key, into which working tree, at
 * which head (`HEAD`/`tip`: the branch's tip; else a commit, a branch, a tag or a ref), and since
 * which commit `committers` are listed.
 */
export interface FetchInput {
  /** `ssh://[user@]host[:port]/path` (git also takes scp-like `[user@]host:path`). */
  pullUrl: string;
  /** OpenSSH private key text. */
  privateKey: string;
  /**
   * For an HTTPS pull URL instead of the key: a token good for this one repository (a GitHub App's
   * installation token, minted for this checkout), sent as `x-access-token` Basic credentials.
   */
  httpToken?: string;
  /** The working tree; created (and initialized) when it holds no checkout. */
  workdir: string;
  /** The suite's branch (for hg: a named branch or a bookmark). */
  branch: string;
  head: string;
  /** The suite's last built commit: `committers` then lists the authors since it. */
  since?: string | null;
  /** Limit for each git or hg command. Default 10 minutes. */
  timeoutMs?: number;
  /**
   * This runner's mirrors (mirror.ts), and the repository's name among them: git and hg pull
   * through its mirror when given (pulls with extra refspecs straight from the site).
   */
  mirror?: { dir: string; key: string };
  signal?: AbortSignal;
  /** The host keys the repository trusts; `learned` is set to what ssh knows after. */
  hostKeys?: HostKeys;
}

/** A kept tree (kept.ts) already moved to `workdir`: `index` is git's index of its files, the runner's copy. */
export interface KeptTreeInput {
  index: string;
}

export interface FetchRepositoryInput extends FetchInput {
  /** Extra refspecs to fetch (the trigger's `refspec`), in addition to all branches and tags. */
  refspecs?: string[];
  /** `workdir` holds a kept tree: through the mirror, only the files that differ are written. */
  kept?: KeptTreeInput;
}

export interface FetchRepositoryResult {
  commitId: string;
  /** Distinct author emails (names when a commit has no email), newest commit first. */
  committers: string[];
  /** Full message of the checked-out commit. */
  message: string;
}

export type GitPullFailure =
  | 'invalid-input' // bad URL, branch or head: retrying won't help
  | 'denied' // key not authorized (or host key problems)
  | 'not-found' // the repository does not exist at that path
  | 'missing-ref' // branch or head not found in the repository
  | 'unreachable' // DNS, connection refused, timeouts: worth retrying
  | 'aborted' // the caller's AbortSignal fired
  | 'failed'; // anything else git complained about

/** A pull or checkout failure with a message safe to show users and store in logs. */
export class GitPullError extends ScmError<GitPullFailure> {
  override readonly name = 'GitPullError';
}

const SSH_CONNECT_TIMEOUT_S = 15;
/** Where the ref or commit fetched on demand (a PR ref, an unadvertised commit) is kept. */
const FETCHED_REF = 'refs/sluice/fetched';
const MAX_COMMITTER_COMMITS = 500;

// --- validation -------------------------------------------------------------------------------

// eslint-disable-next-line no-control-regex
const CONTROL_OR_SPACE = /[\s\x00-\x1f\x7f]/;
const SSH_URL = /^(?:ssh|git\+ssh|ssh\+git):\/\/(?:[^@/\s]+@)?(?:\[[^\]\s]+\]|[^-/\s:[][^/\s:]*)(?::\d+)?\/\S+$/;
// scp-like: the colon comes before any slash; `[host:port]` is git's way to give a port.
const SCP_LIKE_URL = /^(?:[^@/\s:]+@)?(?:\[[^\]\s/]+\]|[^-/\s:[][^/\s:]*):(?!\/\/)\S+$/;

/** Whether git would reach `url` over SSH (and nothing else). */
export function isSshUrl(url: string): boolean {
  if (CONTROL_OR_SPACE.test(url)) return false;
  return SSH_URL.test(url) || (!url.includes('://') && SCP_LIKE_URL.test(url));
}

/**
 * Whether git may fetch `url` over HTTP with a token: HTTPS with neither credentials nor query,
 * or plain HTTP to this machine only (a server on loopback: tests, a local mirror).
 */
export function isTokenUrl(url: string): boolean {
  if (CONTROL_OR_SPACE.test(url)) return false;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  if (u.username || u.password || u.search || u.hash || u.pathname.length < 2) return false;
  if (u.protocol === 'https:') return true;
  return u.protocol === 'http:' && (u.hostname === 'localhost' || u.hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(u.hostname));
}

/** The URL as shown in messages: a password in `ssh://user:pw@host` is blanked. */
export function displayUrl(url: string): string {
  return url.replace(/^([a-z+]+:\/\/[^:@/]+):[^@/]*@/i, '$1:***@');
}

/**
 * A branch, tag, ref or commit id that is safe to hand to git as one argument: no option-like
 * leading dash, no revision syntax (`..`, `^`, `~`, `:`), no globs, no whitespace.
 */
export function isSafeRevision(name: string): boolean {
  return (
    name.length > 0 &&
    name.length <= 255 &&
    !name.startsWith('-') &&
    !name.includes('..') &&
    !name.includes('@{') &&
    !/[~^:?*[\\]/.test(name) &&
    !CONTROL_OR_SPACE.test(name) &&
    !name.endsWith('/') &&
    !name.endsWith('.lock')
  );
}

/** A refspec from a trigger: `[+]src[:dst]` whose parts are safe revisions. */
export function isSafeRefspec(spec: string): boolean {
  const body = spec.startsWith('+') ? spec.slice(1) : spec;
  const parts = body.split(':');
  if (parts.length > 2) return false;
  // Refspecs may use one `*` per side.
  return parts.every((p) => isSafeRevision(p.replace('*', 'x')));
}

// --- scrubbing --------------------------------------------------------------------------------

const BOILERPLATE = [
  /^Could not read from remote repository\.?$/i,
  /^Please make sure you have the correct access rights$/i,
  /^and the repository exists\.?$/i,
];

/**
 * Removes anything that could be (part of) the key from git/ssh output: the temp key path,
 * PEM blocks, any line of the key itself, and long base64-looking runs (mixed case plus a
 * digit, so commit ids and ordinary paths survive).
 */
export function scrubSecrets(text: string, secrets: { privateKey?: string; paths?: string[] }): string {
  let out = text;
  for (const path of secrets.paths ?? []) {
    if (path) out = out.split(path).join('<key>');
  }
  out = out.replace(/-----BEGIN [^-\n]*-----[\s\S]*?(?:-----END [^-\n]*-----|$)/g, '[redacted]');
  for (const line of (secrets.privateKey ?? '').split(/\r?\n/)) {
    const piece = line.trim();
    if (piece.length >= 12 && !piece.startsWith('-----')) out = out.split(piece).join('[redacted]');
  }
  out = out.replace(/[A-Za-z0-9+/=]{32,}/g, (run) =>
    /[A-Z]/.test(run) && /[a-z]/.test(run) && /[0-9]/.test(run) ? '[redacted]' : run,
  );
  return out;
}

/** git's stderr as one line for an error message: prefixes and boilerplate dropped. */
export function summarizeGitStderr(stderr: string): string {
  return summarizeStderr(stderr, (l) => l.replace(/^(fatal|error|warning):\s*/i, ''), BOILERPLATE);
}

/** What kind of failure git's (scrubbed) stderr describes. */
export function classifyGitFailure(stderr: string): GitPullFailure {
  if (SSH_DENIED.test(stderr)) {
    return 'denied';
  }
  if (/does not appear to be a git repository|Repository not found|not a git repository|No such (file or directory|repository)/i.test(stderr)) {
    return 'not-found';
  }
  if (/couldn't find remote ref|not our ref|unadvertised object/i.test(stderr)) return 'missing-ref';
  if (
    /Could not resolve hostname|Connection refused|Connection timed out|timed out|No route to host|Network is unreachable|Connection (closed|reset)|kex_exchange_identification|early EOF|hung up/i.test(
      stderr,
    )
  ) {
    return 'unreachable';
  }
  return 'failed';
}

// --- running git ------------------------------------------------------------------------------

export type GitContext = ScmContext;
export type GitOutcome = ScmOutcome;

/** Settings forced on every git call; see the module comment for why. */
const FORCED_CONFIG = ['-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false', '-c', 'gc.auto=0'];

/** Runs git with the settings every call gets (see runScmProcess for how). */
export function runGit(ctx: GitContext, args: string[]): Promise<GitOutcome> {
  return runScmProcess('git', [...FORCED_CONFIG, ...args], ctx, 'git is not installed on this worker');
}

async function gitOrThrow(ctx: GitContext, args: string[], what: string): Promise<string> {
  const result = await runGit(ctx, args);
  if (result.ok) return result.stdout;
  if (result.interrupted === 'timeout') {
    throw new GitPullError(`${what}: git timed out after ${ctx.timeoutMs} ms`, 'unreachable');
  }
  if (result.interrupted === 'aborted') throw new GitPullError(`${what}: aborted`, 'aborted');
  const stderr = scrubSecrets(result.stderr, ctx.secrets);
  throw new GitPullError(`${what}: ${summarizeGitStderr(stderr) || 'git failed'}`, classifyGitFailure(stderr));
}

/** A commit id for `rev`, or null when it names nothing in the local repository. */
async function resolveCommit(ctx: GitContext, rev: string): Promise<string | null> {
  const result = await runGit(ctx, ['rev-parse', '--verify', '--quiet', '--end-of-options', `${rev}^{commit}`]);
  return result.ok ? result.stdout.trim() || null : null;
}

/** SSH options; every value is ours, the key file path is the only variable part. */
export function sshCommand(keyFile: string): string {
  const quote = (path: string) => `'${path.replace(/'/g, `'\\''`)}'`;
  const quoted = quote(keyFile);
  return [
    'ssh',
    '-F /dev/null', // ignore the worker user's ~/.ssh/config and /etc/ssh/ssh_config
    `-i ${quoted}`,
    '-o IdentitiesOnly=yes',
    '-o IdentityAgent=none',
    '-o BatchMode=yes',
    // Trust on first use, per repository: the host keys it has met (withKeyFile writes them
    // beside the key); a host met for the first time is added, a changed key refused.
    '-o StrictHostKeyChecking=accept-new',
    `-o UserKnownHostsFile=${quote(knownHostsFileOf(keyFile))}`,
    '-o GlobalKnownHostsFile=/dev/null',
    '-o HashKnownHosts=no',
    '-o LogLevel=ERROR',
    `-o ConnectTimeout=${SSH_CONNECT_TIMEOUT_S}`,
    '-o ControlMaster=no',
    '-o ControlPath=none',
  ].join(' ');
}

// --- the operation ----------------------------------------------------------------------------

/**
 * Brings `workdir` to `head` of the repository at `pullUrl`: initializes it when it holds no
 * checkout (the equivalent of a clone), fetches all branches and tags, resolves `head`
 * (fetching it by name or id when it is not advertised, e.g. a pull-request ref), checks it
 * out detached and removes untracked files so each build starts from a clean tree.
 */
export async function fetchRepository(input: FetchRepositoryInput): Promise<FetchRepositoryResult> {
  const url = displayUrl(input.pullUrl);
  const token = input.httpToken;
  if (token === undefined ? !isSshUrl(input.pullUrl) : !isTokenUrl(input.pullUrl)) {
    const expected = token === undefined ? 'an SSH URL (ssh://host/path or user@host:path)' : 'an HTTPS URL without credentials';
    throw new GitPullError(`could not pull from ${url}: not ${expected}`, 'invalid-input');
  }
  if (!isSafeRevision(input.branch)) {
    throw new GitPullError(`could not pull from ${url}: invalid branch name ${JSON.stringify(input.branch)}`, 'invalid-input');
  }
  if (input.head !== 'HEAD' && !isSafeRevision(input.head)) {
    throw new GitPullError(`could not pull from ${url}: invalid head ${JSON.stringify(input.head)}`, 'invalid-input');
  }
  const refspecs = input.refspecs ?? [];
  const badSpec = refspecs.find((s) => !isSafeRefspec(s));
  if (badSpec !== undefined) {
    throw new GitPullError(`could not pull from ${url}: invalid refspec ${JSON.stringify(badSpec)}`, 'invalid-input');
  }

  const scratch = await makeScratch('git', input.privateKey);
  const { keyDir, keyFile } = scratch;
  const ctx: GitContext = {
    workdir: input.workdir,
    timeoutMs: input.timeoutMs ?? DEFAULT_SCM_TIMEOUT_MS,
    signal: input.signal,
    secrets: token === undefined ? scratch.secrets : { ...scratch.secrets, paths: [...scratch.secrets.paths, ...tokenForms(token)] },
    env: token === undefined ? gitEnv(scratch) : tokenGitEnv(scratch, input.pullUrl, token),
  };

  // Over HTTPS the token is in git's environment for these fetches only; no key file.
  const network = <T>(fn: () => Promise<T>): Promise<T> => (token === undefined ? withKeyFile(keyDir, keyFile, input.privateKey, fn, input.hostKeys) : fn());

  try {
    if (input.mirror && refspecs.length === 0) {
      try {
        const commitId = await fromMirror(ctx, input, url, network);
        return await finish(ctx, input, commitId, input.kept === undefined);
      } catch (err) {
        if (err instanceof GitPullError && err.reason !== 'failed') throw err;
        // A mirror that cannot serve (corrupt, half made, a disk problem) never fails the pull:
        // it goes (unless it is only busy), and this pull goes straight to the site.
        if (!(err instanceof MirrorBusy)) await discardMirror(mirrorPath(input.mirror.dir, input.mirror.key, input.pullUrl));
        await rm(input.workdir, { recursive: true, force: true });
      }
    }
    await mkdir(input.workdir, { recursive: true });
    let fresh = false;
    const fetchAndResolve = async () => {
      fresh = await ensureRepository(ctx);
      await gitOrThrow(
        ctx,
        ['fetch', '--quiet', '--prune', '--no-tags', '--force', '--', input.pullUrl, '+refs/heads/*:refs/remotes/origin/*', '+refs/tags/*:refs/tags/*', ...refspecs],
        `could not pull from ${url}`,
      );
      return resolveHead(ctx, input, url);
    };
    const commitId = await network(fetchAndResolve);
    return await finish(ctx, input, commitId, fresh);
  } finally {
    await rm(scratch.dir, { recursive: true, force: true });
  }
}

/** The local part of a pull, once `commitId` is in the tree: checked out, cleaned, described. */
async function finish(ctx: GitContext, input: FetchRepositoryInput, commitId: string, fresh: boolean): Promise<FetchRepositoryResult> {
  // Everything here is local: the key file is already gone.
  await gitOrThrow(ctx, ['checkout', '--quiet', '--force', '--detach', commitId], `could not check out ${commitId}`);
  // A tree made just now has nothing to clean (each git process is ~10 ms of a build's start).
  if (!fresh) await gitOrThrow(ctx, ['clean', '-ffdxq'], `could not clean the working tree`);
  return { commitId, ...(await describeCommit(ctx, commitId, input.since ?? null)) };
}

const FULL_COMMIT = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/**
 * The pull through this runner's mirror of the repository (mirror.ts): under its lock, the site
 * is asked only when the mirror lacks what is wanted (a branch's tip always; a commit id only if
 * missing), then the tree is a local clone of the mirror, its objects hard links. The commit id.
 */
async function fromMirror(ctx: GitContext, input: FetchRepositoryInput, url: string, network: <T>(fn: () => Promise<T>) => Promise<T>): Promise<string> {
  const settings = input.mirror!;
  const mirror = mirrorPath(settings.dir, settings.key, input.pullUrl);
  await prepareMirrors(settings.dir);
  // The mirror's and the clone's own git calls reach no network: local paths only.
  const local = (workdir: string): GitContext => ({ ...ctx, workdir, env: { ...ctx.env, GIT_ALLOW_PROTOCOL: 'file', GIT_SSH_COMMAND: 'false' } });
  return withMirrorLock(
    mirror,
    MIRROR_LOCK_WAIT_MS,
    async () => {
      const m: GitContext = { ...ctx, workdir: mirror };
      const bare = await runGit(local(mirror), ['rev-parse', '--is-bare-repository']);
      const fresh = !bare.ok || bare.stdout.trim() !== 'true';
      if (fresh) await rm(mirror, { recursive: true, force: true });
      const wanted = input.head === 'HEAD' ? null : input.head;
      const have = !fresh && wanted !== null && FULL_COMMIT.test(wanted) ? await resolveCommit(local(mirror), wanted) : null;
      if (!have) {
        await network(async () => {
          // A new mirror is a bare clone (its branches as `refs/heads/*`, its tags): git checks
          // what it receives as it indexes it, where a fetch into an empty repository would walk
          // the whole history again to check it is connected.
          if (fresh) await gitOrThrow({ ...ctx, workdir: settings.dir }, ['clone', '--quiet', '--bare', '--', input.pullUrl, mirror], `could not pull from ${url}`);
          else await gitOrThrow(m, ['fetch', '--quiet', '--prune', '--no-tags', '--force', '--', input.pullUrl, '+refs/heads/*:refs/heads/*', '+refs/tags/*:refs/tags/*'], `could not pull from ${url}`);
          // Not a branch or tag the site lists: ask for it by name or id (a pull request's ref).
          if (wanted !== null && !(await resolveCommit(local(mirror), wanted)) && !(await resolveCommit(local(mirror), `refs/heads/${wanted}`))) {
            await runGit(m, ['fetch', '--quiet', '--no-tags', '--force', '--', input.pullUrl, `+${wanted}:${FETCHED_REF}`]);
          }
        });
      }
      // The tree: a clone git makes, whose object files are the mirror's (hard links).
      if (input.kept) await intoKeptTree(local(dirname(input.workdir)), mirror, input.workdir, input.kept);
      else {
        await mkdir(input.workdir, { recursive: true });
        await gitOrThrow(local(dirname(input.workdir)), ['clone', '--quiet', '--no-checkout', '--local', '--', mirror, input.workdir], 'could not make the tree from the mirror');
      }
      const tree = local(input.workdir);
      // A ref fetched by name (a pull request's) is the mirror's own: brought over when it is what is wanted.
      if (wanted !== null && !have) await runGit(tree, ['fetch', '--quiet', '--no-tags', '--force', '--', mirror, `+${FETCHED_REF}:${FETCHED_REF}`]);
      // The tree names the site as its origin, not the runner's mirror.
      await gitOrThrow(tree, ['remote', 'set-url', 'origin', input.pullUrl], 'could not set the tree’s origin');
      return resolveLocalHead(tree, input, url);
    },
    input.signal,
  );
}

/**
 * A kept tree's files get a `.git` cloned from the mirror now (never one a build could have
 * written: kept.ts) and the index that describes them, so that the checkout that follows writes
 * only the files that differ.
 */
async function intoKeptTree(ctx: GitContext, mirror: string, workdir: string, kept: KeptTreeInput): Promise<void> {
  const clone = `${workdir}.clone`;
  await rm(clone, { recursive: true, force: true });
  try {
    await gitOrThrow(ctx, ['clone', '--quiet', '--no-checkout', '--local', '--', mirror, clone], 'could not make the tree from the mirror');
    await rm(join(workdir, '.git'), { recursive: true, force: true });
    await rename(join(clone, '.git'), join(workdir, '.git'));
    await copyFile(kept.index, join(workdir, '.git', 'index'));
  } finally {
    await rm(clone, { recursive: true, force: true });
  }
}

/** The environment of git working on local files only: no network, no system or global configuration. */
const localGitEnv = (): NodeJS.ProcessEnv => ({
  PATH: process.env.PATH || '/usr/local/bin:/usr/bin:/bin',
  HOME: '/nonexistent',
  LANG: 'C',
  LC_ALL: 'C',
  GIT_TERMINAL_PROMPT: '0',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_ALLOW_PROTOCOL: 'file',
  GIT_SSH_COMMAND: 'false',
});

/**
 * Makes a tree that a build used fit to keep (kept.ts), with `index`, the index the checkout
 * wrote (the runner's copy, which no build could reach): the tree's `.git` goes whole (its
 * config could name a filter or a command git would run); with a `.git` made here and that
 * index, submodules' directories become untracked (git clean leaves a submodule's contents
 * alone), the index is refreshed against the files (a file the build changed stays out of date,
 * and the next checkout writes it again), and every untracked or ignored file goes. The
 * refreshed index is written back to `index`; the tree is left without a `.git`.
 */
export async function cleanKeptTree(tree: string, index: string, signal?: AbortSignal): Promise<void> {
  const ctx: GitContext = { workdir: tree, timeoutMs: DEFAULT_SCM_TIMEOUT_MS, signal, secrets: { privateKey: '', paths: [] }, env: localGitEnv() };
  const gitDir = join(tree, '.git');
  await rm(gitDir, { recursive: true, force: true });
  // The runner's again (tests ran as the build user): git works in no tree another user owns.
  await lchown(tree, process.getuid?.() ?? 0, process.getgid?.() ?? 0);
  try {
    await gitOrThrow(ctx, ['init', '--quiet', '--initial-branch=sluice-unused'], 'could not clean a kept tree');
    await copyFile(index, join(gitDir, 'index'));
    const staged = await gitOrThrow(ctx, ['ls-files', '--stage', '-z'], 'could not read a kept tree’s index');
    const submodules = staged
      .split('\0')
      .filter((line) => line.startsWith('160000 '))
      .map((line) => line.slice(line.indexOf('\t') + 1));
    if (submodules.length > 0) await gitOrThrow(ctx, ['update-index', '--force-remove', '--', ...submodules], 'could not clean a kept tree');
    // Exits 1 when files changed: they stay out of date in the index, as they should.
    await runGit(ctx, ['update-index', '-q', '--refresh']);
    await gitOrThrow(ctx, ['clean', '-ffdxq'], 'could not clean a kept tree');
    await copyFile(join(gitDir, 'index'), index);
  } finally {
    await rm(gitDir, { recursive: true, force: true });
  }
}

/** `head` in a tree made from the mirror: the branch's tip, a commit, a tag, a branch, or the ref fetched for it. */
async function resolveLocalHead(ctx: GitContext, input: FetchRepositoryInput, url: string): Promise<string> {
  if (input.head === 'HEAD') {
    const tip = await resolveCommit(ctx, `refs/remotes/origin/${input.branch}`);
    if (!tip) throw new GitPullError(`could not pull from ${url}: branch '${input.branch}' not found`, 'missing-ref');
    return tip;
  }
  const found = (await resolveCommit(ctx, input.head)) ?? (await resolveCommit(ctx, `refs/remotes/origin/${input.head}`)) ?? (await resolveCommit(ctx, FETCHED_REF));
  if (!found) throw new GitPullError(`could not pull from ${url}: head '${input.head}' not found`, 'missing-ref');
  return found;
}

/**
 * The commit `refs/heads/<branch>` names at `pullUrl` now, or null when there is no such branch
 * (`git ls-remote`; nothing is fetched). Runs with `ctx`'s environment (gitEnv), so the caller
 * holds the key file (withKeyFile). Failures are classified as a fetch's: an unreachable
 * server is `unreachable`, worth retrying.
 */
export async function remoteBranchTip(ctx: GitContext, pullUrl: string, branch: string): Promise<string | null> {
  const url = displayUrl(pullUrl);
  if (!isSshUrl(pullUrl)) throw new GitPullError(`could not ask ${url} for a branch's tip: not an SSH URL (ssh://host/path or user@host:path)`, 'invalid-input');
  if (!isSafeRevision(branch)) throw new GitPullError(`could not ask ${url} for a branch's tip: invalid branch name ${JSON.stringify(branch)}`, 'invalid-input');
  const ref = `refs/heads/${branch}`;
  const out = await gitOrThrow(ctx, ['ls-remote', '--', pullUrl, ref], `could not ask ${url} for the tip of ${branch}`);
  // ls-remote matches patterns against the tail of each ref (`refs/heads/x/refs/heads/<branch>`
  // too): keep only the exact name.
  for (const line of out.split('\n')) {
    const [id, name] = line.trim().split('\t');
    if (name === ref && id) return id;
  }
  return null;
}

/** The environment of every git call that may reach the network: SSH only, no prompt, no system or global config, our key. */
export function gitEnv(scratch: ScmScratch): NodeJS.ProcessEnv {
  return {
    ...scratch.env,
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_ALLOW_PROTOCOL: 'ssh',
    GIT_SSH_VARIANT: 'ssh',
    GIT_SSH_COMMAND: sshCommand(scratch.keyFile),
  };
}

/** The token as it could appear in git's output: itself and inside its Basic credentials. */
const basicOf = (token: string) => Buffer.from(`x-access-token:${token}`, 'utf8').toString('base64');
const tokenForms = (token: string) => [basicOf(token), token];

/**
 * The environment of a fetch over HTTPS with a token: the token as an `Authorization` header
 * through git's environment configuration (GIT_CONFIG_COUNT: never an argument, which `ps` shows,
 * nor a file), for this URL's origin only; no redirects (the header must not follow one to
 * another host), no credential helper or prompt.
 */
export function tokenGitEnv(scratch: ScmScratch, pullUrl: string, token: string): NodeJS.ProcessEnv {
  const origin = new URL(pullUrl).origin;
  const config: [string, string][] = [
    [`http.${origin}/.extraHeader`, `Authorization: Basic ${basicOf(token)}`],
    ['http.followRedirects', 'false'],
    ['credential.helper', ''],
  ];
  const env: NodeJS.ProcessEnv = {
    ...scratch.env,
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_ALLOW_PROTOCOL: new URL(pullUrl).protocol === 'http:' ? 'http' : 'https',
    GIT_CONFIG_COUNT: String(config.length),
  };
  config.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  return env;
}

/**
 * The SSH host keys a repository trusts, in known_hosts format: `known` goes in before ssh runs
 * (null: none yet), and `learned` is what the file holds after (ssh added any host it met for
 * the first time). The caller stores `learned` (db/repos recordKnownHosts).
 */
export interface HostKeys {
  known: string | null;
  learned?: string;
}

/** Where sshCommand's ssh reads and writes the host keys: beside the key file. */
export const knownHostsFileOf = (keyFile: string): string => join(dirname(keyFile), 'known_hosts');

/**
 * Writes the key (0600, in a 0700 directory) and the trusted host keys for the duration of
 * `fn`, then removes them, reading back into `hostKeys.learned` what ssh learned.
 */
export async function withKeyFile<T>(keyDir: string, keyFile: string, privateKey: string, fn: () => Promise<T>, hostKeys?: HostKeys): Promise<T> {
  await mkdir(keyDir, { mode: 0o700 });
  const knownHosts = knownHostsFileOf(keyFile);
  try {
    // OpenSSH refuses a key without its final newline, and keys pasted from Windows have CRs.
    const text = privateKey.replace(/\r\n/g, '\n').trimEnd() + '\n';
    await writeFile(keyFile, text, { mode: 0o600, flag: 'wx' });
    await writeFile(knownHosts, hostKeys?.known ?? '', { mode: 0o600, flag: 'wx' });
    return await fn();
  } finally {
    if (hostKeys) hostKeys.learned = await readFile(knownHosts, 'utf8').catch(() => hostKeys.known ?? '');
    await rm(keyDir, { recursive: true, force: true });
  }
}

/**
 * `git init` unless `workdir` already holds a working repository; a broken `.git` is redone.
 * True when the repository is new.
 */
async function ensureRepository(ctx: GitContext): Promise<boolean> {
  const gitDir = join(ctx.workdir, '.git');
  if (await exists(gitDir)) {
    const check = await runGit(ctx, ['rev-parse', '--is-inside-work-tree']);
    if (check.ok && check.stdout.trim() === 'true') return false;
    // An interrupted first pull leaves a half-made .git: start over rather than fail forever.
    await rm(gitDir, { recursive: true, force: true });
  }
  await gitOrThrow(ctx, ['init', '--quiet', '--initial-branch=sluice-unused'], 'could not initialize the working tree');
  return true;
}

async function resolveHead(ctx: GitContext, input: FetchRepositoryInput, url: string): Promise<string> {
  if (input.head === 'HEAD') {
    const tip = await resolveCommit(ctx, `refs/remotes/origin/${input.branch}`);
    if (!tip) throw new GitPullError(`could not pull from ${url}: branch '${input.branch}' not found`, 'missing-ref');
    return tip;
  }
  // A full commit id, a tag, a full ref fetched by refspec, or a branch name.
  const local =
    (await resolveCommit(ctx, input.head)) ?? (await resolveCommit(ctx, `refs/remotes/origin/${input.head}`));
  if (local) return local;
  // Not advertised as a branch or tag: ask for it by name or id (a pull-request ref, a commit
  // the server lets us fetch directly).
  const fetched = await runGit(ctx, ['fetch', '--quiet', '--no-tags', '--force', '--', input.pullUrl, `+${input.head}:${FETCHED_REF}`]);
  if (fetched.interrupted === 'timeout') {
    throw new GitPullError(`could not pull from ${url}: git timed out after ${ctx.timeoutMs} ms`, 'unreachable');
  }
  if (fetched.interrupted === 'aborted') throw new GitPullError(`could not pull from ${url}: aborted`, 'aborted');
  const commit = fetched.ok ? await resolveCommit(ctx, FETCHED_REF) : null;
  if (!commit) throw new GitPullError(`could not pull from ${url}: head '${input.head}' not found`, 'missing-ref');
  return commit;
}

/**
 * The message of `head`, and its committers: the authors of `since..head` when `since` is a
 * known ancestor, else the author of `head` (then both come from one git process).
 */
async function describeCommit(ctx: GitContext, head: string, since: string | null): Promise<{ message: string; committers: string[] }> {
  if (since && isSafeRevision(since) && since !== head) {
    const base = await resolveCommit(ctx, since);
    const isAncestor = base ? (await runGit(ctx, ['merge-base', '--is-ancestor', base, head])).ok : false;
    if (base && isAncestor) {
      const message = (await gitOrThrow(ctx, ['log', '-1', '--format=%B', head], 'could not read the commit')).trimEnd();
      const out = await gitOrThrow(ctx, ['log', '--format=%ae%x00%an', `--max-count=${MAX_COMMITTER_COMMITS}`, `${base}..${head}`, '--'], 'could not list committers');
      return { message, committers: parseCommitters(out) };
    }
  }
  const out = await gitOrThrow(ctx, ['log', '-1', '--format=%ae%x00%an%x00%B', head, '--'], 'could not read the commit');
  const [email = '', name = '', ...body] = out.split('\0');
  return { message: body.join('\0').trimEnd(), committers: parseCommitters(`${email}\0${name}`) };
}

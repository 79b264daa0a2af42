/**
 * Pulling a Mercurial repository over SSH with the repository's own key: the hg twin of
 * git.ts's fetchRepository, with the same shape, the same errors (GitPullError, whose reasons
 * are not git-specific) and the same key hygiene:
 *
 * - The private key lives in a 0600 file in a fresh 0700 temporary directory only while
 *   `hg pull` runs, and never appears on a command line, in an error message or a log; hg's
 *   stderr is scrubbed before it becomes a message.
 * - hg runs without a shell, in its own process group (a timeout or an abort kills the ssh it
 *   started too), with a minimal environment: nothing of the worker's reaches hg or ssh.
 * - No configuration but ours: HGRCPATH points at an empty file (no system or user hgrc), and
 *   the working copy's own `.hg/hgrc` is deleted before every pull, because the tests of an
 *   earlier build ran in this tree and could have planted hooks or extensions there that
 *   would otherwise run while the key file exists. A `.hg` that points elsewhere (a share) is
 *   thrown away. Subrepositories are refused (`subrepos.allowed=false`): updating to a
 *   revision must not make hg fetch other repositories from URLs the repository chose.
 * - We pull from the URL itself, never a configured path, and only `ssh://` URLs are taken.
 *
 * Which revision is built:
 * - `tip` (the spec's default for Mercurial) or `HEAD`: the tip of the suite's branch, that
 *   is the bookmark of that name if there is one, else the newest open head of the named
 *   branch (hg's own rule for `hg update <branch>`), else its newest head. In a repository
 *   that works on one branch this is hg's `tip`; with several it keeps each suite on its own
 *   branch, as git's `HEAD` does. A branch the repository does not have is an error, as in
 *   git (the main line of an hg repository is called `default`).
 * - anything else: what hg makes of that name: a changeset id (or unambiguous prefix), a
 *   bookmark, a tag or a branch name (that branch's head).
 *
 * Known limitation, as for git: host keys are not pinned yet (StrictHostKeyChecking=no).
 */
import { lstat, mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import {
  displayUrl,
  GitPullError,
  isSafeRevision,
  isSshUrl,
  scrubSecrets,
  sshCommand,
  withKeyFile,
  type FetchInput,
  type FetchRepositoryResult,
  type GitPullFailure,
} from './git';
import { discardMirror, MIRROR_LOCK_WAIT_MS, MirrorBusy, mirrorPath, prepareMirrors, withMirrorLock } from './mirror';
import { DEFAULT_SCM_TIMEOUT_MS, exists, makeScratch, parseCommitters, runScmProcess, SSH_DENIED, summarizeStderr, type ScmContext, type ScmOutcome, type ScmScratch } from './scmProcess';

/** An hg pull (`ssh://host//abs/path` names an absolute path; `tip` is the branch's tip, as `HEAD`). */
export type FetchHgRepositoryInput = FetchInput;

const MAX_COMMITTER_COMMITS = 500;
const NULL_NODE = '0'.repeat(40);

/** Settings forced on every hg call; see the module comment for why. */
const FORCED_CONFIG = ['--noninteractive', '--config', 'subrepos.allowed=false', '--config', 'ui.merge=internal:fail'];

// --- validation -------------------------------------------------------------------------------

/** Whether hg would reach `url` over SSH: `ssh://` only (hg has no scp-like syntax). */
export function isHgSshUrl(url: string): boolean {
  return /^ssh:\/\//i.test(url) && isSshUrl(url);
}

/**
 * A branch, bookmark, tag or changeset name that is safe inside a quoted revset string: a
 * safe git revision (no leading dash, no whitespace or revision syntax) without quotes, and
 * not one of hg's special names for "nothing" or "the working copy".
 */
export function isSafeHgName(name: string): boolean {
  return isSafeRevision(name) && !/["']/.test(name) && name !== '.' && name !== 'null' && name !== 'wdir()';
}

// --- stderr -----------------------------------------------------------------------------------

/** What hg says when ssh failed, whatever the reason: only worth showing when nothing else is. */
const BOILERPLATE = [/^no suitable response from remote hg!?$/i, /^\(check previous remote output\)$/i];

/** hg's stderr as one line for an error message: prefixes and boilerplate dropped. */
export function summarizeHgStderr(stderr: string): string {
  return summarizeStderr(stderr, (l) => l.replace(/^(remote:\s*)?(abort|error|warning|\*\*\*):\s*/i, '').replace(/^remote:\s*/i, ''), BOILERPLATE);
}

/** What kind of failure hg's (scrubbed) stderr describes. */
export function classifyHgFailure(stderr: string): GitPullFailure {
  if (SSH_DENIED.test(stderr)) {
    return 'denied';
  }
  if (/repository .* not found|There is no Mercurial repository here|does not appear to be an hg repository/i.test(stderr)) {
    return 'not-found';
  }
  if (
    /Could not resolve hostname|Connection refused|Connection timed out|timed out|No route to host|Network is unreachable|Connection (closed|reset)|kex_exchange_identification|unexpected response: empty string/i.test(
      stderr,
    )
  ) {
    return 'unreachable';
  }
  return 'failed';
}

// --- running hg -------------------------------------------------------------------------------

export type HgContext = ScmContext;
type HgOutcome = ScmOutcome;

/**
 * How hg runs on `workdir` for a pull or a push: no configuration but ours (HGRCPATH, an empty
 * file in the scratch directory), plain output, and the scratch directory's minimal environment.
 */
export async function hgContext(scratch: ScmScratch, workdir: string, opts: { timeoutMs?: number; signal?: AbortSignal }): Promise<HgContext> {
  const hgrc = join(scratch.dir, 'hgrc');
  await writeFile(hgrc, '', { mode: 0o600 });
  return {
    workdir,
    timeoutMs: opts.timeoutMs ?? DEFAULT_SCM_TIMEOUT_MS,
    signal: opts.signal,
    secrets: scratch.secrets,
    env: { ...scratch.env, HGPLAIN: '1', HGRCPATH: hgrc, HGENCODING: 'utf-8', HGUSER: 'sluice' },
  };
}

/**
 * Runs hg without a shell on the working copy (`-R`, never whatever repository encloses the
 * current directory), in its own process group; settles once hg and its ssh let go of our
 * pipes, so the key file can go right after.
 */
export function runHg(ctx: HgContext, args: string[], options: { repository?: boolean } = {}): Promise<HgOutcome> {
  const repository = options.repository === false ? [] : ['--repository', ctx.workdir];
  return runScmProcess('hg', [...repository, ...FORCED_CONFIG, ...args], ctx, 'hg (Mercurial) is not installed on this worker');
}

export async function hgOrThrow(ctx: HgContext, args: string[], what: string, options: { repository?: boolean } = {}): Promise<string> {
  const result = await runHg(ctx, args, options);
  if (result.ok) return result.stdout;
  if (result.interrupted === 'timeout') throw new GitPullError(`${what}: hg timed out after ${ctx.timeoutMs} ms`, 'unreachable');
  if (result.interrupted === 'aborted') throw new GitPullError(`${what}: aborted`, 'aborted');
  const stderr = scrubSecrets(result.stderr, ctx.secrets);
  throw new GitPullError(`${what}: ${summarizeHgStderr(stderr) || 'hg failed'}`, classifyHgFailure(stderr));
}

/** The changesets `revset` names, newest last; null when hg refuses it (an unknown name). */
async function revs(ctx: HgContext, revset: string): Promise<string[] | null> {
  const result = await runHg(ctx, ['log', '--rev', revset, '--template', '{node}\n']);
  if (result.interrupted === 'timeout') throw new GitPullError(`could not read the repository: hg timed out after ${ctx.timeoutMs} ms`, 'unreachable');
  if (result.interrupted === 'aborted') throw new GitPullError('could not read the repository: aborted', 'aborted');
  if (!result.ok) return null;
  return result.stdout.split('\n').filter((l) => /^[0-9a-f]{40}$/.test(l) && l !== NULL_NODE);
}

// --- the operation ----------------------------------------------------------------------------

/**
 * Brings `workdir` to `head` of the hg repository at `pullUrl`: initializes it when it holds
 * no repository (the equivalent of a clone), pulls every changeset, bookmark and tag, resolves
 * `head`, updates to it with `--clean` and purges untracked and ignored files, so each build
 * starts from a clean tree.
 */
export async function fetchHgRepository(input: FetchHgRepositoryInput): Promise<FetchRepositoryResult> {
  const url = displayUrl(input.pullUrl);
  if (!isHgSshUrl(input.pullUrl)) {
    throw new GitPullError(`could not pull from ${url}: not an SSH URL (Mercurial takes ssh://host/path or ssh://host//abs/path)`, 'invalid-input');
  }
  if (!isSafeHgName(input.branch)) {
    throw new GitPullError(`could not pull from ${url}: invalid branch name ${JSON.stringify(input.branch)}`, 'invalid-input');
  }
  const followsBranch = input.head === 'tip' || input.head === 'HEAD';
  if (!followsBranch && !isSafeHgName(input.head)) {
    throw new GitPullError(`could not pull from ${url}: invalid head ${JSON.stringify(input.head)}`, 'invalid-input');
  }

  const scratch = await makeScratch('hg', input.privateKey);
  const { keyDir, keyFile } = scratch;
  const workdir = resolve(input.workdir);

  try {
    const ctx = await hgContext(scratch, workdir, input);
    // From the site into `repo`: the key file exists for this pull only.
    const pullFromSite = (repo: HgContext) =>
      withKeyFile(keyDir, keyFile, input.privateKey, () => hgOrThrow(repo, ['pull', '--quiet', '--ssh', sshCommand(keyFile), '--', input.pullUrl], `could not pull from ${url}`), input.hostKeys);
    if (input.mirror) {
      try {
        return await finish(ctx, input, await fromMirror(ctx, input, url, followsBranch, pullFromSite));
      } catch (err) {
        if (err instanceof GitPullError && err.reason !== 'failed') throw err;
        // As git's (git.ts): a mirror that cannot serve goes (unless only busy), and this pull goes to the site.
        if (!(err instanceof MirrorBusy)) await discardMirror(mirrorPath(input.mirror.dir, input.mirror.key, input.pullUrl, 'hg'));
        await rm(workdir, { recursive: true, force: true });
      }
    }
    await mkdir(workdir, { recursive: true });
    await ensureRepository(ctx);
    await pullFromSite(ctx);
    return await finish(ctx, input, await resolveHead(ctx, input, url, followsBranch));
  } finally {
    await rm(scratch.dir, { recursive: true, force: true });
  }
}

/** The local part of a pull, once `commitId` is in the working copy: updated, cleaned, described (the key file is gone). */
async function finish(ctx: HgContext, input: FetchHgRepositoryInput, commitId: string): Promise<FetchRepositoryResult> {
  await hgOrThrow(ctx, ['update', '--clean', '--quiet', '--rev', commitId], `could not update to ${commitId}`);
  await hgOrThrow(ctx, ['--config', 'extensions.purge=', 'purge', '--all', '--quiet'], 'could not clean the working copy');
  const message = (await hgOrThrow(ctx, ['log', '--rev', commitId, '--template', '{desc}'], 'could not read the changeset')).trimEnd();
  const committers = await listCommitters(ctx, commitId, input.since ?? null);
  return { commitId, committers, message };
}


/**
 * The pull through this runner's mirror of the repository (mirror.ts), hg's twin of git's: under
 * its lock the mirror (a repository without a working copy) pulls from the site unless it has the
 * changeset asked for by id; then the working copy is a local clone of it, whose store files are
 * hard links (hg breaks a link before it appends to a file, so the mirror's later pulls never
 * touch a working copy's history), or, when it holds a repository already, pulls from it. The
 * changeset to build.
 */
async function fromMirror(
  ctx: HgContext,
  input: FetchHgRepositoryInput,
  url: string,
  followsBranch: boolean,
  pullFromSite: (repo: HgContext) => Promise<string>,
): Promise<string> {
  const settings = input.mirror!;
  const mirror = mirrorPath(settings.dir, settings.key, input.pullUrl, 'hg');
  await prepareMirrors(settings.dir);
  return withMirrorLock(
    mirror,
    MIRROR_LOCK_WAIT_MS,
    async () => {
      const m: HgContext = { ...ctx, workdir: mirror };
      const fresh = !(await exists(join(mirror, '.hg'))) || !(await runHg(m, ['log', '--rev', 'tip', '--template', '{node}'])).ok;
      if (fresh) {
        await rm(mirror, { recursive: true, force: true });
        // hg runs in the mirrors' directory: its own is not there yet.
        await hgOrThrow({ ...ctx, workdir: settings.dir }, ['init', '--', mirror], 'could not make the mirror', { repository: false });
      }
      const have = !fresh && !followsBranch && /^[0-9a-f]{40}$/.test(input.head) && ((await revs(m, `"${input.head}"`))?.length ?? 0) > 0;
      if (!have) await pullFromSite(m);
      // The working copy, from the mirror: local paths only, no ssh.
      if (await exists(join(ctx.workdir, '.hg'))) {
        await ensureRepository(ctx);
        await hgOrThrow(ctx, ['pull', '--quiet', '--', mirror], 'could not pull from the mirror');
      } else {
        await rm(ctx.workdir, { recursive: true, force: true });
        await mkdir(dirname(ctx.workdir), { recursive: true });
        await hgOrThrow({ ...ctx, workdir: dirname(ctx.workdir) }, ['clone', '--noupdate', '--quiet', '--', mirror, ctx.workdir], 'could not make the working copy from the mirror', {
          repository: false,
        });
        // It names the mirror as its default path: the working copy keeps no configuration (module comment).
        await rm(join(ctx.workdir, '.hg', 'hgrc'), { force: true });
      }
      return resolveHead(ctx, input, url, followsBranch);
    },
    input.signal,
  );
}

/**
 * `hg init` unless `workdir` already holds a working hg repository. Its own configuration is
 * removed first (see the module comment); a `.hg` that is broken or shares another
 * repository's store is started over.
 */
async function ensureRepository(ctx: HgContext): Promise<void> {
  const dotHg = join(ctx.workdir, '.hg');
  const info = await lstat(dotHg).catch(() => null);
  // A .hg that is a file or a symbolic link (to another repository, say) is not ours to use.
  if (info && !info.isDirectory()) await rm(dotHg, { force: true });
  if (info?.isDirectory()) {
    await rm(join(dotHg, 'hgrc'), { recursive: true, force: true });
    await rm(join(dotHg, 'hgrc-not-shared'), { recursive: true, force: true });
    const shared = await exists(join(dotHg, 'sharedpath'));
    // Reading the changelog tells a working repository from a half-made one.
    if (!shared && (await runHg(ctx, ['log', '--rev', 'tip', '--template', '{node}'])).ok) return;
    // An interrupted first pull leaves a half-made .hg: start over rather than fail forever.
    await rm(dotHg, { recursive: true, force: true });
  }
  await hgOrThrow(ctx, ['init', '--', ctx.workdir], 'could not initialize the working copy', { repository: false });
}

/**
 * The tip of `branch` in the repository at hand: the bookmark of that name if there is one, else
 * the newest open head of the named branch, else its newest head; null when it has none.
 */
export async function branchTip(ctx: HgContext, branch: string): Promise<string | null> {
  const literal = `"literal:${branch}"`;
  const candidates = [`bookmark(${literal})`, `max(head() and not closed() and branch(${literal}))`, `max(branch(${literal}))`];
  for (const revset of candidates) {
    const found = await revs(ctx, revset);
    if (found && found.length > 0) return found[found.length - 1]!;
  }
  return null;
}

async function resolveHead(ctx: HgContext, input: FetchHgRepositoryInput, url: string, followsBranch: boolean): Promise<string> {
  if (followsBranch) {
    const tip = await branchTip(ctx, input.branch);
    if (!tip) throw new GitPullError(`could not pull from ${url}: branch '${input.branch}' not found`, 'missing-ref');
    return tip;
  }
  // A quoted string is looked up as a name (bookmark, tag, branch, changeset id), never
  // parsed as a revset expression.
  const found = await revs(ctx, `"${input.head}"`);
  if (!found || found.length === 0) throw new GitPullError(`could not pull from ${url}: head '${input.head}' not found`, 'missing-ref');
  return found[found.length - 1]!;
}

/** Authors of the changesets since `since` when it is a known ancestor, else the author of `head`. */
async function listCommitters(ctx: HgContext, head: string, since: string | null): Promise<string[]> {
  let revset = head;
  if (since && /^[0-9a-f]{12,40}$/.test(since) && since !== head) {
    const base = (await revs(ctx, `"${since}"`))?.[0];
    const isAncestor = base ? ((await revs(ctx, `${base} and ancestors(${head})`))?.length ?? 0) > 0 : false;
    if (base && isAncestor) revset = `reverse(only(${head}, ${base}))`;
  }
  const out = await hgOrThrow(
    ctx,
    ['log', '--rev', revset, '--limit', String(MAX_COMMITTER_COMMITS), '--template', '{author|email}\\0{author|person}\\n'],
    'could not list committers',
  );
  return parseCommitters(out);
}

/**
 * `sluice`, the command-line client (issue 24), against a real running Sluice (API, worker and
 * runner, test/support/sluice.ts): every command run as its own process (`node --import tsx
 * src/cli/main.ts`, what `npx tsx src/cli/main.ts` runs), with a home of its own for the config
 * file, reading what a user reads: its stdout, stderr and exit status.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { eventually } from '../support/wait';
import { script, World, type Repo } from '../support/world';

const REPO_ROOT = path.join(__dirname, '..', '..');
const CLI = path.join(REPO_ROOT, 'src', 'cli', 'main.ts');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The process's command line as /proc showed it while it ran. */
  cmdline: string;
}

let w: World;
/** Its own database: `repos`, `webhooks` and `login` list everything this Sluice holds, and the e2e run's shared database holds every other file's too. */
let db: TestDatabase;
let home: string;
let configFile: string;
/**
 * app1: one file passes, printing as it runs; one fails at once (too soon to stream: its stored
 * output is shown). app2: passes if it sees its secret. app3: runs until stopped.
 * A file streams once it runs past the runner's first flush (steps/liveOutput.ts), hence the sleeps.
 */
let app1: Repo;
let app2: Repo;
let app3: Repo;
let release: string;
let started: string;

const SECRET = 's3cr3t value with $dollar and "quotes"';

/** Runs `sluice <args>` as a child process; `stdin` is written once it runs, then closed. */
function sluice(args: string[], opts: { stdin?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Run> {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH, HOME: home, XDG_CONFIG_HOME: path.join(home, 'config'), ...opts.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  // Read before stdin gives it the secret: whatever it holds, the command line never had it.
  let cmdline = '';
  try {
    cmdline = readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    // Gone already.
  }
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  child.stdin.on('error', () => undefined); // it may exit before reading stdin
  child.stdin.end(opts.stdin ?? '');
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr, cmdline }));
  });
}

/** `sluice <args> --json`, which must succeed: its one JSON document. */
async function json<T = Record<string, unknown>>(args: string[], opts: Parameters<typeof sluice>[1] = {}): Promise<T> {
  const run = await sluice([...args, '--json'], opts);
  if (run.code !== 0) throw new Error(`sluice ${args.join(' ')} exited ${run.code}: ${run.stderr}`);
  return JSON.parse(run.stdout) as T;
}

const repoName = (repo: Repo) => `${w.org.name}/${repo.name}`;

beforeAll(async () => {
  db = await createTestDatabase('sluice_cli');
  w = await World.start({ databaseUrl: db.url });
  home = await mkdtemp(path.join(os.tmpdir(), 'sluice-cli-home-'));
  configFile = path.join(home, 'config', 'sluice', 'config.json');
  release = path.join(w.tmp, 'release');
  started = path.join(w.tmp, 'started');
  const suite = { branch: 'master', test_pattern: 'test/*_test.sh' };
  app1 = await w.makeRepo(
    { 'test/a_test.sh': script('echo "alpha says hi"\nsleep 1'), 'test/b_test.sh': script('echo "beta is about to fail"\nexit 1') },
    { suite },
  );
  app2 = await w.makeRepo(
    { 'test/secret_test.sh': script(`echo "token is $API_TOKEN"\nsleep 1\n[ "$API_TOKEN" = '${SECRET}' ]`) },
    { suite },
  );
  app3 = await w.makeRepo({ 'test/slow_test.sh': script(`touch ${started}\nwhile [ ! -f ${release} ]; do sleep 0.1; done`) }, { suite });
});

afterAll(async () => {
  await w?.stop();
  await db?.drop();
  if (home) await rm(home, { recursive: true, force: true });
});

describe('sluice login', () => {
  it('refuses a wrong token, saving nothing; keeps a good one from stdin in a file only its user reads', async () => {
    const refused = await sluice(['login', '--url', w.sluice.url], { stdin: 'not-the-admin-token-0123\n' });
    expect(refused.code).toBe(10);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain('refused this token');
    expect(existsSync(configFile)).toBe(false);

    const token = w.sluice.config.adminToken;
    const ok = await sluice(['login', '--url', w.sluice.url], { stdin: `${token}\n` });
    expect(ok).toMatchObject({ code: 0, stderr: '' });
    expect(ok.stdout).toContain(`Signed in to ${w.sluice.url}`);
    expect(ok.stdout + ok.stderr + ok.cmdline).not.toContain(token);
    expect(statSync(configFile).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(configFile)).mode & 0o777).toBe(0o700);
    expect(JSON.parse(await readFile(configFile, 'utf8'))).toEqual({ url: w.sluice.url, token });
  });

  it('signs in from SLUICE_TOKEN with --json, and never sends the saved token to another URL', async () => {
    const signedIn = await json(['login', '--url', w.sluice.url], { env: { SLUICE_TOKEN: w.sluice.config.adminToken } });
    expect(signedIn).toEqual({ url: w.sluice.url, config_file: configFile, organizations: 1 });

    const elsewhere = await sluice(['builds', '--url', 'http://127.0.0.1:9']);
    expect(elsewhere).toMatchObject({ code: 10, stdout: '' });
    expect(elsewhere.stderr).toContain('not signed in to http://127.0.0.1:9');
  });
});

describe('repos and suites', () => {
  it('lists the repositories of all organizations and of one, and a repository’s suites', async () => {
    const repos = await json<Array<{ name: string; org_name: string }>>(['repos']);
    expect(repos.map((r) => r.name)).toEqual(['app1', 'app2', 'app3']);
    const table = await sluice(['repos', w.org.name]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^ID\s+REPOSITORY\s+SCM/);
    expect(table.stdout).toContain(repoName(app1));

    expect(await json(['suites', repoName(app1)])).toEqual([expect.objectContaining({ branch: 'master', test_pattern: 'test/*_test.sh', workers: 1 })]);
    const missing = await sluice(['suites', `${w.org.name}/nope`]);
    expect(missing).toMatchObject({ code: 10, stdout: '' });
    expect(missing.stderr).toContain('no such repository (HTTP 404');
  });
});

describe('builds', () => {
  let failed: number;

  it("triggers a build and watches it: its output live, a failed file's stored output, and the exit status of a failed build", async () => {
    const event = await json<{ guid: string; decision: string; sessions: Array<{ session: number }> }>(['trigger', repoName(app1)]);
    expect(event.decision).toBe('build');
    failed = event.sessions[0]!.session;

    const watched = await sluice(['watch', String(failed)]);
    expect(watched.code).toBe(1);
    expect(watched.stdout).toContain('test/a_test.sh | alpha says hi\n');
    expect(watched.stdout).toContain('test/b_test.sh | beta is about to fail\n');
    expect(watched.stdout).toMatch(/-- test\/a_test\.sh: passed, exit 0, /);
    expect(watched.stdout).toMatch(/-- test\/b_test\.sh: failed, exit 1, /);
    expect(watched.stdout).toContain(`session ${failed} failed: 1 passed, 1 failed`);
  });

  it('lists builds by repository, branch and status, and shows one', async () => {
    const byStatus = (status: string) => json<Array<{ session: number }>>(['builds', '--repo', repoName(app1), '--branch', 'master', '--status', status]);
    expect((await byStatus('failed')).map((s) => s.session)).toEqual([failed]);
    expect(await byStatus('passed')).toEqual([]);
    const table = await sluice(['builds', '-r', repoName(app1)]);
    expect(table.stdout).toMatch(new RegExp(`^${failed}\\s+failed\\s+${repoName(app1)}\\s+master`, 'm'));

    const shown = await json<{ status: string; tests: Array<{ path: string; status: string }> }>(['show', String(failed)]);
    expect(shown.status).toBe('failed');
    expect(shown.tests.map((t) => [t.path, t.status])).toEqual([
      ['test/a_test.sh', 'passed'],
      ['test/b_test.sh', 'failed'],
    ]);
    const human = await sluice(['show', String(failed)]);
    expect(human.stdout).toMatch(/^status:\s+failed$/m);
    expect(human.stdout).toMatch(/^test\/b_test\.sh\s+failed\s+1\s/m);

    const none = await sluice(['show', '99999999']);
    expect(none).toMatchObject({ code: 10, stdout: '' });
    expect(none.stderr).toContain('no such session (HTTP 404 not found)');
    const bad = await sluice(['builds', '--status', 'green']);
    expect(bad).toMatchObject({ code: 64, stdout: '' });
  });

  it('rebuilds, following the new build to its result as one JSON document', async () => {
    const rebuilt = await sluice(['rebuild', String(failed), '--watch', '--json']);
    expect(rebuilt.code).toBe(1);
    const view = JSON.parse(rebuilt.stdout) as { session: number; status: string; parent_session?: number };
    expect(view.session).not.toBe(failed);
    expect(view.status).toBe('failed');
  });

  it('stops a running build, which watch then reports with its own exit status', async () => {
    const event = await json<{ sessions: Array<{ session: number }> }>(['trigger', repoName(app3)]);
    const session = event.sessions[0]!.session;
    await eventually('the slow test to start', async () => existsSync(started));

    const stopped = await json<{ session: number }>(['stop', String(session), '--by', 'ada']);
    expect(stopped.session).toBe(session);
    const watched = await sluice(['watch', String(session)]);
    expect(watched.code).toBe(3);
    expect(watched.stdout).toContain(`session ${session} stopped`);
    expect(await json(['show', String(session)])).toMatchObject({ status: 'stopped', stopped_by: 'ada' });

    const again = await sluice(['stop', String(session)]);
    expect(again).toMatchObject({ code: 10, stdout: '' });
    expect(again.stderr).toContain('[field: session] (HTTP 409 conflict)');
  });

  it('says why a trigger was not taken: dropped, or the field the API refused', async () => {
    const dropped = await sluice(['trigger', repoName(app1), '--branch', 'no-suite-here']);
    expect(dropped).toMatchObject({ code: 10, stdout: '' });
    expect(dropped.stderr).toContain('dropped');
    const refused = await sluice(['trigger', repoName(app1), '--head', 'not a commit']);
    expect(refused).toMatchObject({ code: 10, stdout: '' });
    expect(refused.stderr).toContain('[field: head]');
  });
});

describe('secrets', () => {
  it('sets a value read from stdin, never from argv, which a build then sees (masked in its output)', async () => {
    const set = await sluice(['secrets', 'set', repoName(app2), 'API_TOKEN'], { stdin: `${SECRET}\n` });
    expect(set).toMatchObject({ code: 0, stderr: '' });
    expect(set.stdout).toBe(`secret API_TOKEN of ${repoName(app2)} set\n`);
    expect(set.cmdline).toContain('secrets set');
    expect(set.cmdline + set.stdout).not.toContain('s3cr3t');

    const listed = await json<Array<{ name: string; masked: boolean }>>(['secrets', 'list', repoName(app2)]);
    expect(listed).toEqual([expect.objectContaining({ name: 'API_TOKEN', masked: true })]);
    expect(JSON.stringify(listed)).not.toContain('s3cr3t');

    // The test passes only if it saw the exact value; trigger --watch exits with its result.
    const built = await sluice(['trigger', repoName(app2), '--watch']);
    expect(built.code).toBe(0);
    expect(built.stdout).toContain('test/secret_test.sh | token is ****\n');
    expect(built.stdout).not.toContain('s3cr3t');

    const empty = await sluice(['secrets', 'set', repoName(app2), 'OTHER']);
    expect(empty).toMatchObject({ code: 64, stdout: '' });
    expect(empty.stderr).toContain('no value given on stdin');

    expect(await json(['secrets', 'delete', repoName(app2), 'API_TOKEN'])).toEqual({ name: 'API_TOKEN', deleted: true });
    expect((await sluice(['secrets', 'list', repoName(app2)])).stdout).toBe('(no secrets)\n');
  });
});

describe('webhooks, deliveries, redeliver', () => {
  it("lists the organization's webhook and its deliveries, and sends one again with the same xid", async () => {
    const hooks = await json<Array<{ id: number; url: string }>>(['webhooks']);
    expect(hooks.map((h) => h.url)).toEqual([w.receiver.url]);
    const hook = hooks[0]!.id;

    const session = (await json<Array<{ session: number }>>(['builds', '--repo', repoName(app1), '--status', 'failed', '--limit', '1']))[0]!.session;
    await w.eventsOf(session);
    const stops = await json<Array<{ id: number; xid: string; outcome: string; session: number }>>(['deliveries', String(hook), '--session', String(session), '--event', 'stop']);
    expect(stops).toEqual([expect.objectContaining({ session, outcome: 'delivered' })]);
    const table = await sluice(['deliveries', String(hook), '--event', 'stop']);
    expect(table.stdout).toMatch(/^ID\s+EVENT\s+SESSION\s+ATTEMPT\s+OUTCOME/);

    const again = await json<{ xid: string; attempt: number; outcome: string; origin: string }>(['redeliver', String(stops[0]!.id)]);
    expect(again).toMatchObject({ xid: stops[0]!.xid, attempt: 2, outcome: 'delivered', origin: 'redeliver' });
    const xid = stops[0]!.xid;
    await w.receiver.waitFor((reqs) => reqs.filter((r) => (r.json as { xid?: string })?.xid === xid).length === 2, 10_000);

    const bad = await sluice(['deliveries', String(hook), '--outcome', 'lost']);
    expect(bad).toMatchObject({ code: 64, stdout: '' });
  });
});

describe('sluice logout', () => {
  it('forgets the sign-in: the config file is gone, and commands say how to sign in again', async () => {
    const out = await sluice(['logout']);
    expect(out).toMatchObject({ code: 0, stdout: `Signed out; ${configFile} is gone.\n` });
    expect(existsSync(configFile)).toBe(false);
    const after = await sluice(['builds']);
    expect(after).toMatchObject({ code: 10, stdout: '' });
    expect(after.stderr).toContain('sluice login --url');
  });
});

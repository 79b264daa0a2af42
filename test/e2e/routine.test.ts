/**
 * The whole build routine of spec §1, end to end on real parts: tests, JUnit results, push to
 * a CI server over SSH, a chat post, an e-mail through a real SMTP server; profiles and plans
 * from the suite and from the repository's sluice.yml.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { git, pushCommit, revParse } from '../support/gitRepo';
import { freePort } from '../support/sluice';
import { startReceiver, type Receiver } from '../support/receiver';
import { startSmtpSink, type SmtpSink } from '../support/smtpSink';
import { script, sessionOfGuid, World, type Payload } from '../support/world';
import { reportPath } from '../support/reports';
import { eventually } from '../support/wait';

let w: World;
let smtp: SmtpSink;
let chat: Receiver;
beforeAll(async () => {
  smtp = await startSmtpSink();
  w = await World.start({ smtpUrl: smtp.url });
  chat = await startReceiver();
});
afterAll(async () => {
  await w?.stop();
  await smtp?.close();
  await chat?.close();
});

const JUNIT = `<?xml version="1.0"?>
<testsuites><testsuite name="math" tests="2" failures="1">
  <testcase classname="math.add" name="adds" time="0.01"/>
  <testcase classname="math.sub" name="subtracts" time="0.02"><failure message="expected 1, got 2">trace</failure></testcase>
</testsuite></testsuites>`;

describe('after the tests', () => {
  it('collects JUnit cases, pushes the passed commit, posts to chat and e-mails, in that order', async () => {
    const repo = await w.makeRepo(
      { 'unit_test.sh': script(`mkdir -p reports && cat > reports/junit.xml <<'XML'\n${JUNIT}\nXML`) },
      { suite: { branch: 'master', test_pattern: '*_test.sh', junit_pattern: 'reports/*.xml' } },
    );
    const ciBare = path.join(w.tmp, `${repo.name}-ci.git`);
    await promisify(execFile)('git', ['init', '--quiet', '--bare', ciBare]); // an empty CI server
    await w.sluice.admin('PATCH', `/api/v1/repos/${repo.id}`, { ci_push_url: w.ssh.url(ciBare), chat_url: chat.url });

    const { session } = await w.build(repo);
    const stop = (await w.eventsOf(session)).at(-1)!;
    expect(stop.status).toBe('passed');

    // Push: the tested commit is master on the CI server now.
    expect(await revParse(ciBare, 'refs/heads/master')).toBe(stop.commit_id);
    // Chat: one Slack-style post with the outcome and the report link.
    const posts = chat.requests.filter((r) => JSON.stringify(r.json).includes(`/1/reports/${session}`));
    expect(posts).toHaveLength(1);
    expect((posts[0]!.json as { text: string }).text).toMatch(/passed/);
    // E-mail: to the organization's address, saying what happened.
    const [mail] = await smtp.waitForMessages(1);
    expect(mail!.to).toEqual(['builds@acme.test']);
    expect(mail!.subject).toContain(`#${session} passed`);
    expect(mail!.text).toContain(`/1/reports/${session}`);

    // The report shows the failing JUnit case and the post-build steps.
    const html = await (await fetch(`${w.sluice.url}${await reportPath(w.sluice.pool, session)}`)).text();
    expect(html).toContain('subtracts');
    expect(html).toContain('expected 1, got 2');
    const view = await w.session(session);
    expect((view.post_build_steps as Array<{ step: string; ok: boolean }>).map((s) => [s.step, s.ok])).toEqual([
      ['push', true],
      ['chat', true],
      ['email', true],
    ]);
    // Timing: the post-build keys of spec §6 in lifecycle order.
    const t = stop.timing as Record<string, number>;
    const order = ['exec', 'post_build', 'artifact_collect', 'done', 'post_build_hook'];
    for (let i = 1; i < order.length; i++) expect(t[order[i]!]).toBeGreaterThanOrEqual(t[order[i - 1]!]!);
  });

  it('keeps the build status when chat fails, and shows the failure on the report', async () => {
    const deadPort = await freePort();
    const repo = await w.makeRepo({ 'ok_test.sh': script('true') }, { suite: { branch: 'master', test_pattern: '*_test.sh' } });
    await w.sluice.admin('PATCH', `/api/v1/repos/${repo.id}`, { chat_url: `http://127.0.0.1:${deadPort}/chat` });
    const { session } = await w.build(repo);
    expect((await w.eventsOf(session)).at(-1)).toMatchObject({ status: 'passed' });
    const steps = (await w.session(session)).post_build_steps as Array<{ step: string; ok: boolean; detail: string }>;
    expect(steps.find((s) => s.step === 'chat')).toMatchObject({ ok: false });
    // Temporal's retry policy ran the attempts (3, shortened waits: test/support/sluice.ts); the
    // last one recorded the outcome, once.
    expect(steps.filter((s) => s.step === 'chat')).toEqual([expect.objectContaining({ detail: expect.stringMatching(/\(3 attempts\)$/) })]);
    const html = await (await fetch(`${w.sluice.url}${await reportPath(w.sluice.pool, session)}`)).text();
    expect(html).toMatch(/chat/i);
  });
});

describe('profiles and plans', () => {
  const files = {
    'unit/a_test.sh': script('echo unit; test "$KIND" = unit'),
    'lint/l_test.sh': script('echo lint; exit 1'),
    'sluice.yml': {
      content: [
        'profiles:',
        '  unit:',
        '    test_pattern: "unit/*_test.sh"',
        '    env: { KIND: unit }',
        '  lint:',
        '    test_pattern: "lint/*_test.sh"',
        'plan: [unit, lint]',
        '',
      ].join('\n'),
    },
  };

  it('runs sluice.yml’s plan as a parent session with one child per profile', async () => {
    const repo = await w.makeRepo(files, { suite: { branch: 'master', test_pattern: 'nothing/*' } });
    const { session } = await w.build(repo);
    const parent = await w.eventsOf(session);
    expect(parent.at(-1)).toMatchObject({ status: 'failed', counts: expect.objectContaining({ passed: 1, failed: 1 }) });

    const { rows } = await w.sluice.pool.query('SELECT id, profile_name FROM sessions WHERE parent_id = $1 ORDER BY id', [session]);
    expect(rows.map((r) => r.profile_name)).toEqual(['unit', 'lint']);
    const children: Payload[][] = [];
    for (const r of rows) children.push(await w.eventsOf(r.id));
    for (const [i, events] of children.entries()) {
      expect(events.every((e) => e.parent_session === session && e.profile_name === rows[i].profile_name)).toBe(true);
      expect(events.at(-1)!.commit_id).toBe(parent.at(-1)!.commit_id);
    }
    expect(children.map((e) => e.at(-1)!.status)).toEqual(['passed', 'failed']);
    expect(parent.every((e) => !('parent_session' in e))).toBe(true);
  });

  it('runs a plan configured on the suite, without a sluice.yml', async () => {
    const repo = await w.makeRepo(
      { 'unit/a_test.sh': files['unit/a_test.sh'], 'lint/l_test.sh': script('echo lint ok') },
      {
        suite: {
          branch: 'master',
          test_pattern: 'nothing/*',
          profiles: [
            { name: 'unit', test_pattern: 'unit/*_test.sh', env: { KIND: 'unit' } },
            { name: 'lint', test_pattern: 'lint/*_test.sh' },
          ],
          plan: ['lint', 'unit'],
        },
      },
    );
    const { session } = await w.build(repo);
    expect((await w.eventsOf(session)).at(-1)).toMatchObject({ status: 'passed', counts: expect.objectContaining({ passed: 2 }) });
    const { rows } = await w.sluice.pool.query('SELECT profile_name, status FROM sessions WHERE parent_id = $1 ORDER BY id', [session]);
    expect(rows).toEqual([
      { profile_name: 'lint', status: 'passed' },
      { profile_name: 'unit', status: 'passed' },
    ]);
  });

  it("ends a plan when its parts have, not when their deliveries to a receiver that is down give up", async () => {
    // A second receiver that refuses everything: each part's lane to it retries for a while.
    const down = await startReceiver();
    down.respondWith(() => ({ status: 503, body: 'down' }));
    const hook = await w.sluice.admin<{ id: number }>('POST', `/api/v1/orgs/${w.org.id}/webhooks`, { url: down.url });
    try {
      const repo = await w.makeRepo(files, { suite: { branch: 'master', test_pattern: 'nothing/*' } });
      const { session } = await w.build(repo);
      expect((await w.eventsOf(session)).at(-1)).toMatchObject({ status: 'failed', counts: expect.objectContaining({ passed: 1, failed: 1 }) });
      // The parent's `stop` went out while its parts still retry theirs to the receiver that is
      // down: none of them has given up on a single event yet.
      const { rows } = await w.sluice.pool.query(
        `SELECT count(*)::int AS n FROM deliveries d JOIN sessions s ON s.id = d.session_id
          WHERE d.webhook_id = $1 AND s.parent_id = $2 AND d.outcome IN ('gave_up', 'dropped')`,
        [hook.id, session],
      );
      expect(rows[0].n).toBe(0);
      expect(down.requests.length).toBeGreaterThan(0);
    } finally {
      await w.sluice.admin('DELETE', `/api/v1/webhooks/${hook.id}`);
      await down.close();
    }
  });

  it('runs only the profile a trigger names', async () => {
    const repo = await w.makeRepo(files, { suite: { branch: 'master', test_pattern: 'nothing/*' } });
    const { session } = await w.build(repo, { profile_name: 'unit' });
    const stop = (await w.eventsOf(session)).at(-1)!;
    expect(stop).toMatchObject({ status: 'passed', profile_name: 'unit', counts: expect.objectContaining({ passed: 1 }) });
    const { rows } = await w.sluice.pool.query('SELECT count(*)::int AS n FROM sessions WHERE parent_id = $1', [session]);
    expect(rows[0].n).toBe(0);
  });

  it('ends in error, saying why, when sluice.yml is broken', async () => {
    const repo = await w.makeRepo(
      { 'a_test.sh': script('true'), 'sluice.yml': { content: 'profiles:\n  unit:\n    test_patern: "x"\n' } },
      { suite: { branch: 'master', test_pattern: '*_test.sh' } },
    );
    const { session } = await w.build(repo);
    expect((await w.eventsOf(session)).at(-1)).toMatchObject({ status: 'error' });
    expect((await w.session(session)).reason).toMatch(/sluice\.yml.*test_patern/);
  });
});

describe('a pull request', () => {
  it("gets none of the repository's secrets and is never pushed, though it passed", async () => {
    const repo = await w.makeRepo(
      { 'pr_test.sh': script('[ -z "$API_TOKEN" ] || { echo "the secret leaked: $API_TOKEN"; exit 1; }\necho "no secret here"') },
      { suite: { branch: 'master', test_pattern: '*_test.sh' } },
    );
    const ciBare = path.join(w.tmp, `${repo.name}-ci.git`);
    await promisify(execFile)('git', ['init', '--quiet', '--bare', ciBare]);
    await w.sluice.admin('PATCH', `/api/v1/repos/${repo.id}`, { ci_push_url: w.ssh.url(ciBare) });
    await w.sluice.admin('PUT', `/api/v1/repos/${repo.id}/secrets/API_TOKEN`, { value: 'sk_live_never_for_a_pr' });

    // A pull request whose source branch is named master (as a fork's may be).
    const { session } = await w.build(repo, { branch: 'master', changeset: { kind: 'github', id: '7' } });
    expect((await w.eventsOf(session)).at(-1)).toMatchObject({ status: 'passed' });
    // Chat and e-mail as for any build; no push.
    const view = await w.session(session);
    expect((view.post_build_steps as Array<{ step: string }>).map((p) => p.step)).not.toContain('push');
    await expect(revParse(ciBare, 'refs/heads/master')).rejects.toThrow();

    // The same commit pushed to master: secrets, and the push.
    const push = await w.build(repo, { branch: 'master', force: true });
    expect((await w.eventsOf(push.session)).at(-1)).toMatchObject({ status: 'failed' });
    expect((await w.session(push.session)).tests).toEqual([expect.objectContaining({ path: 'pr_test.sh', status: 'failed' })]);
  });
});

describe('a GitHub pull request', () => {
  /** A commit only reachable from refs/pull/<n>/head, as GitHub keeps a fork's pull request. */
  async function pullRequestCommit(bare: string, n: number, files: Parameters<typeof pushCommit>[1]): Promise<string> {
    const commit = await pushCommit(bare, files, `pull request ${n}`, `tmp-pr-${n}`);
    await git(bare, ['update-ref', `refs/pull/${n}/head`, commit]);
    await git(bare, ['update-ref', '-d', `refs/heads/tmp-pr-${n}`]);
    return commit;
  }

  /** What GitHub sends when pull request `n` from `headRepo` into `base` is opened. */
  function opened(n: number, sha: string, head: { ref: string; repo: { id: number; full_name: string } }, base: string) {
    return {
      action: 'opened',
      number: n,
      pull_request: {
        html_url: `https://github.com/acme/app/pull/${n}`,
        head: { ref: head.ref, sha, repo: head.repo },
        base: { ref: base, repo: { id: 1, full_name: 'acme/app' } },
      },
    };
  }

  it("builds in its target branch's suite; a fork's gets no secret even where same-repository ones are trusted, and none is pushed", async () => {
    const probe = script('[ -n "$API_TOKEN" ] && echo "has the secret" || echo "no secret"');
    const repo = await w.makeRepo({ 'pr_test.sh': probe }, { suite: { branch: 'release', test_pattern: '*_test.sh' } });
    await pushCommit(repo.bare, {}, 'release branch', 'release');
    // A `master` suite that would fail: a fork naming its branch `master` must not pick it.
    await w.sluice.admin('POST', `/api/v1/repos/${repo.id}/suites`, { branch: 'master', test_pattern: 'nothing/*' });
    const ciBare = path.join(w.tmp, `${repo.name}-ci.git`);
    await promisify(execFile)('git', ['init', '--quiet', '--bare', ciBare]);
    await w.sluice.admin('PATCH', `/api/v1/repos/${repo.id}`, { ci_push_url: w.ssh.url(ciBare), trust_same_repo_pull_requests: true });
    await w.sluice.admin('PUT', `/api/v1/repos/${repo.id}/secrets/API_TOKEN`, { value: 'sk_live_not_for_forks' });

    const hook = async (body: unknown): Promise<number> => {
      const res = await fetch(`${w.sluice.url}/1/github/${repo.key}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-github-event': 'pull_request' },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(200);
      return sessionOfGuid(w.sluice.pool, ((await res.json()) as { guid: string }).guid);
    };
    const output = async (session: number): Promise<string> => {
      const res = await fetch(`${w.sluice.url}${await reportPath(w.sluice.pool, session)}`, { headers: { accept: 'application/json' } });
      return ((await res.json()) as { tests: { output: string }[] }).tests[0]!.output;
    };

    const forkSha = await pullRequestCommit(repo.bare, 7, { 'pr_test.sh': probe, 'fork.txt': { content: 'from a fork' } });
    const fork = await hook(opened(7, forkSha, { ref: 'master', repo: { id: 666, full_name: 'mallory/app' } }, 'release'));
    expect((await w.eventsOf(fork)).at(-1)).toMatchObject({ status: 'passed', branch: 'release', commit_id: forkSha, ref: 'refs/pull/7/head' });
    expect(await output(fork)).toBe('no secret\n');

    const ownSha = await pullRequestCommit(repo.bare, 8, { 'pr_test.sh': probe, 'own.txt': { content: 'from a branch of ours' } });
    const own = await hook(opened(8, ownSha, { ref: 'feature', repo: { id: 1, full_name: 'acme/app' } }, 'release'));
    expect((await w.eventsOf(own)).at(-1)).toMatchObject({ status: 'passed', branch: 'release', commit_id: ownSha });
    expect(await output(own)).toBe('has the secret\n');

    // Neither was pushed to the CI server.
    for (const session of [fork, own]) {
      expect(((await w.session(session)).post_build_steps as Array<{ step: string }>).map((p) => p.step)).not.toContain('push');
    }
    await expect(revParse(ciBare, 'refs/heads/release')).rejects.toThrow();
  });
});

describe('a post-build step that keeps failing', () => {
  let dead: World;
  beforeAll(async () => {
    // A mail server that refuses every connection, e-mail retried 4 times over about 3 s, and
    // `stop` told to wait for the steps 200 ms at most.
    dead = await World.start({
      smtpUrl: `smtp://127.0.0.1:${await freePort()}`,
      postBuildWaitMs: 200,
      postRetry: {
        push: { initialIntervalMs: 200, backoffCoefficient: 2, maximumIntervalMs: 1_000, maximumAttempts: 3 },
        chat: { initialIntervalMs: 200, backoffCoefficient: 2, maximumIntervalMs: 1_000, maximumAttempts: 3 },
        email: { initialIntervalMs: 1_000, backoffCoefficient: 1, maximumIntervalMs: 1_000, maximumAttempts: 4 },
      },
    });
  });
  afterAll(() => dead?.stop());

  it('does not hold `stop`, which reports the build as it stood; the step retries on and is recorded', async () => {
    const repo = await dead.makeRepo({ 'ok_test.sh': script('true') }, { suite: { branch: 'master', test_pattern: '*_test.sh' } });
    const { session } = await dead.build(repo);
    const events = await dead.eventsOf(session);
    expect(events.at(-1)).toMatchObject({ event: 'stop', status: 'passed' });
    const stopAt = dead.receiver.requests.find((r) => (r.json as Payload | undefined)?.session === session && (r.json as Payload).event === 'stop')!.at;

    // The e-mail's outcome comes after `stop`: all its attempts failed, the last one recorded it.
    const email = await eventually('the e-mail step recorded', async () => {
      const steps = (await dead.session(session)).post_build_steps as Array<{ step: string; ok: boolean; detail: string; created_at: string }>;
      return steps.find((s) => s.step === 'email');
    });
    expect(email).toMatchObject({ ok: false, detail: expect.stringMatching(/\(4 attempts\)$/) });
    expect(Date.parse(email.created_at)).toBeGreaterThan(stopAt);
    const html = await (await fetch(`${dead.sluice.url}${await reportPath(dead.sluice.pool, session)}`)).text();
    expect(html).toMatch(/e-?mail/i);
  });
});

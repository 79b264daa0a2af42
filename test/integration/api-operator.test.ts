// The operator's actions of the management API against a real PostgreSQL: deleting an
// organization, a repository or a suite (builds under way stopped first), rotating a
// repository's trigger key and SSH key, a suite's deadline. Temporal is not involved: the
// harness's `stop` is a stand-in that ends the session in the database, as its workflow would
// (test/e2e/operator.test.ts does it with the real one).
import { utils } from 'ssh2';
import { unseal } from '../../src/crypto/sealed';
import { loadSessionContext } from '../../src/db/sessionContext';
import { claimFirstAttempt, insertDeliveryAttempt } from '../../src/db/deliveries';
import { recordStep } from '../../src/db/postBuildSteps';
import type { ApiDeps } from '../../src/api/app';
import { stopAndRemove } from '../../src/app/remove';
import { asHttpError } from '../../src/api/http';
import type { StopTarget } from '../../src/core/workflowIds';
import { seedRepo, startApiHarness, type ApiHarness } from '../support/apiApp';
import { triggerKnowledge } from '../../src/api/triggerKnowledge';

type StopMode = 'end' | 'ignore' | 'orphan' | 'fail';
let mode: StopMode = 'end';
const stops: { target: StopTarget; stoppedBy: string }[] = [];
const pendingEnds: Promise<unknown>[] = [];

let h: ApiHarness;

beforeAll(async () => {
  h = await startApiHarness({
    stop: async (target, stoppedBy) => {
      stops.push({ target, stoppedBy });
      if (mode === 'fail') throw new Error('Temporal is unreachable');
      if (mode === 'orphan') return false;
      if (mode === 'end') {
        // As the session's workflow would, a moment later. afterAll waits for these: one still
        // pending when the pool closes would reject unhandled and fail the whole file.
        const ended = new Promise((resolve) => setTimeout(resolve, 100)).then(() =>
          h.db.pool.query(`UPDATE sessions SET status = 'stopped', stopped_by = $2, updated_at = now() WHERE id = $1`, [target.sessionId, stoppedBy]),
        );
        pendingEnds.push(ended);
      }
      return true;
    },
  });
});

afterAll(async () => {
  await Promise.all(pendingEnds);
  await h.close();
});

beforeEach(() => {
  mode = 'end';
  stops.length = 0;
});

const count = async (sql: string, params: unknown[] = []) => (await h.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n ${sql}`, params)).rows[0]!.n;

/** A trigger through the generic URL: one queued session of the branch's suite. */
async function trigger(key: string, branch = 'master'): Promise<number> {
  const res = await h.request({ method: 'POST', url: `/1/builds/${key}`, payload: { branch, force: true } });
  expect(res.statusCode).toBe(200);
  const { rows } = await h.db.pool.query<{ id: number }>('SELECT s.id FROM sessions s JOIN ci_events e ON e.id = s.ci_event_id WHERE e.guid = $1', [res.json().guid]);
  return rows[0]!.id;
}

async function statusOf(session: number): Promise<string | undefined> {
  return (await h.db.pool.query<{ status: string }>('SELECT status FROM sessions WHERE id = $1', [session])).rows[0]?.status;
}

describe('DELETE /api/v1/repos/:repo/suites/:suite', () => {
  it('404 for an unknown repository, suite, or a suite of another repository', async () => {
    const a = await seedRepo(h);
    const b = await seedRepo(h);
    expect((await h.admin('DELETE', '/api/v1/repos/999999/suites/1')).statusCode).toBe(404);
    expect((await h.admin('DELETE', `/api/v1/repos/${a.repo.id}/suites/999999`)).statusCode).toBe(404);
    expect((await h.admin('DELETE', `/api/v1/repos/${a.repo.id}/suites/abc`)).statusCode).toBe(404);
    const res = await h.admin('DELETE', `/api/v1/repos/${a.repo.id}/suites/${b.suites[0]!.id}`);
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ error: 'not found', message: 'no such suite' });
    expect(await count('FROM suites WHERE id = $1', [b.suites[0]!.id])).toBe(1);
  });

  it('204: the suite goes with its builds; the other suites and their builds stay', async () => {
    const { repo, suites } = await seedRepo(h, { branches: ['master', 'dev'] });
    const [master, dev] = suites;
    const done = await trigger(repo.key, 'master');
    await h.db.pool.query(`UPDATE sessions SET status = 'passed' WHERE id = $1`, [done]);
    await h.db.pool.query(`INSERT INTO test_results (session_id, path, status, duration_ms, output) VALUES ($1, 't.sh', 'passed', 5, 'ok')`, [done]);
    const other = await trigger(repo.key, 'dev');
    await h.db.pool.query(`UPDATE sessions SET status = 'passed' WHERE id = $1`, [other]);

    const res = await h.admin('DELETE', `/api/v1/repos/${repo.id}/suites/${master!.id}`);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect(stops).toEqual([]); // nothing was under way
    expect(await count('FROM suites WHERE id = $1', [master!.id])).toBe(0);
    expect(await statusOf(done)).toBeUndefined();
    expect(await count('FROM test_results WHERE session_id = $1', [done])).toBe(0);
    expect((await h.admin('GET', `/api/v1/repos/${repo.id}/suites`)).json()).toEqual([expect.objectContaining({ id: dev!.id })]);
    expect(await statusOf(other)).toBe('passed');
    // A trigger for the branch is dropped from now on (no suite).
    expect((await h.request({ method: 'POST', url: `/1/builds/${repo.key}`, payload: { branch: 'master' } })).statusCode).toBe(422);
  });

  it('stops the queued and the running builds first, as the user named in stopped_by, then deletes', async () => {
    const { repo, suites } = await seedRepo(h);
    const queued = await trigger(repo.key);
    const running = await trigger(repo.key);
    await h.db.pool.query(`UPDATE sessions SET status = 'running' WHERE id = $1`, [running]);

    const res = await h.admin('DELETE', `/api/v1/repos/${repo.id}/suites/${suites[0]!.id}?stopped_by=alice`);
    expect(res.statusCode).toBe(204);
    // A queued one may still wait in its suite's queue; a running one has a workflow.
    expect(stops).toEqual([
      { target: { sessionId: queued, suiteId: suites[0]!.id }, stoppedBy: 'alice' },
      { target: { sessionId: running, suiteId: null }, stoppedBy: 'alice' },
    ]);
    expect(await statusOf(queued)).toBeUndefined();
    expect(await statusOf(running)).toBeUndefined();
  });
});

describe('DELETE /api/v1/repos/:repo', () => {
  it('404 for an unknown repository', async () => {
    expect((await h.admin('DELETE', '/api/v1/repos/999999')).statusCode).toBe(404);
    expect((await h.admin('DELETE', '/api/v1/repos/nope/nothing')).statusCode).toBe(404);
  });

  it('stops its builds (stopped_by admin when not named), then deletes it and all it has; its webhook URL is gone; the delivery log stays', async () => {
    const { orgId, repo } = await seedRepo(h, { branches: ['master', 'dev'] });
    const a = await trigger(repo.key, 'master');
    const b = await trigger(repo.key, 'dev');
    await h.admin('PUT', `/api/v1/repos/${repo.id}/secrets/TOKEN`, { value: 'sekrit-value' });
    await h.admin('PUT', `/api/v1/repos/${repo.id}/branches/master`, { enabled: true });
    const hook = (await h.admin('POST', `/api/v1/orgs/${orgId}/webhooks`, { url: 'https://hooks.example.test/ci' })).json();
    await h.db.pool.query(
      `INSERT INTO deliveries (webhook_id, session_id, event, xid, attempt, outcome, duration_ms) VALUES ($1, $2, 'received', 'x-1', 1, 'delivered', 3)`,
      [hook.id, a],
    );

    const res = await h.admin('DELETE', `/api/v1/repos/${repo.id}`);
    expect(res.statusCode).toBe(204);
    expect(stops.map((s) => [s.target.sessionId, s.stoppedBy])).toEqual([
      [a, 'admin'],
      [b, 'admin'],
    ]);
    expect((await h.admin('GET', `/api/v1/repos/${repo.id}`)).statusCode).toBe(404);
    for (const table of ['suites', 'repo_secrets', 'branches', 'ci_events']) {
      expect(await count(`FROM ${table} WHERE repo_id = $1`, [repo.id])).toBe(0);
    }
    expect(await count('FROM sessions WHERE id = ANY($1::bigint[])', [[a, b]])).toBe(0);
    // The organization and its webhook stay; the attempt is kept in the log, without its session.
    expect((await h.admin('GET', `/api/v1/orgs/${orgId}`)).statusCode).toBe(200);
    expect((await h.db.pool.query('SELECT session_id FROM deliveries WHERE xid = $1', ['x-1'])).rows).toEqual([{ session_id: null }]);
    expect((await h.request({ method: 'POST', url: `/1/builds/${repo.key}` })).statusCode).toBe(404);
  });

  it('a build nothing in Temporal holds (no workflow, no suite) does not hold the delete up', async () => {
    const { repo } = await seedRepo(h);
    const stuck = await trigger(repo.key);
    mode = 'orphan';
    expect((await h.admin('DELETE', `/api/v1/repos/${repo.id}`)).statusCode).toBe(204);
    expect(stops).toHaveLength(1);
    expect(await statusOf(stuck)).toBeUndefined();
  });

  it('503 when Temporal cannot be reached, and nothing is deleted', async () => {
    const { repo } = await seedRepo(h);
    const session = await trigger(repo.key);
    mode = 'fail';
    const res = await h.admin('DELETE', `/api/v1/repos/${repo.id}`);
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ error: 'unavailable', message: expect.stringContaining('nothing was deleted') });
    expect(await statusOf(session)).toBe('queued');
    expect((await h.admin('GET', `/api/v1/repos/${repo.id}`)).statusCode).toBe(200);
  });

  it('force=true deletes once the builds were asked to stop, without waiting for them', async () => {
    const { repo } = await seedRepo(h);
    const session = await trigger(repo.key);
    mode = 'ignore'; // asked, but it never ends
    const res = await h.admin('DELETE', `/api/v1/repos/${repo.id}?force=true&stopped_by=bob`);
    expect(res.statusCode).toBe(204);
    expect(stops).toEqual([{ target: { sessionId: session, suiteId: expect.any(Number) }, stoppedBy: 'bob' }]);
    expect(await statusOf(session)).toBeUndefined();
  });

  it.each([
    ['a stopped_by too long', `stopped_by=${'x'.repeat(201)}`, 'stopped_by'],
    ['an empty stopped_by', 'stopped_by=%20', 'stopped_by'],
    ['force that is not true or false', 'force=yes', 'force'],
  ])('400 for %s, nothing deleted', async (_name, query, field) => {
    const { repo } = await seedRepo(h);
    const res = await h.admin('DELETE', `/api/v1/repos/${repo.id}?${query}`);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ field });
    expect((await h.admin('GET', `/api/v1/repos/${repo.id}`)).statusCode).toBe(200);
  });
});

describe('DELETE /api/v1/orgs/:org', () => {
  it('404 for an unknown organization', async () => {
    expect((await h.admin('DELETE', '/api/v1/orgs/nobody-here')).statusCode).toBe(404);
    expect((await h.admin('DELETE', '/api/v1/orgs/999999')).statusCode).toBe(404);
  });

  it('stops the builds of all its repositories, then deletes it with its repositories and webhooks (by name or id)', async () => {
    const first = await seedRepo(h, { org: 'doomed', repo: 'one' });
    const second = await h.admin('POST', '/api/v1/orgs/doomed/repos', { name: 'two', scm: 'git', pull_url: 'git@scm.example.test:d/two.git' });
    await h.admin('POST', `/api/v1/repos/${second.json().id}/suites`, { branch: 'master', test_pattern: '*.sh' });
    const hook = (await h.admin('POST', '/api/v1/orgs/doomed/webhooks', { url: 'https://hooks.example.test/d' })).json();
    const s1 = await trigger(first.repo.key);
    const s2 = await trigger(second.json().key);
    const survivor = await seedRepo(h);
    const kept = await trigger(survivor.repo.key);

    expect((await h.admin('DELETE', '/api/v1/orgs/doomed?stopped_by=carol')).statusCode).toBe(204);
    expect(stops.map((s) => s.target.sessionId).sort()).toEqual([s1, s2].sort());
    expect((await h.admin('GET', '/api/v1/orgs/doomed')).statusCode).toBe(404);
    expect(await count('FROM repos WHERE org_id = $1', [first.orgId])).toBe(0);
    expect(await count('FROM webhooks WHERE id = $1', [hook.id])).toBe(0);
    expect(await statusOf(kept)).toBe('queued');

    const byId = await seedRepo(h);
    expect((await h.admin('DELETE', `/api/v1/orgs/${byId.orgId}`)).statusCode).toBe(204);
    expect((await h.admin('GET', `/api/v1/orgs/${byId.orgId}`)).statusCode).toBe(404);
  });
});

describe('stopAndRemove', () => {
  const deps = (): ApiDeps => ({
    config: h.config,
    pool: h.db.pool,
    knowledge: triggerKnowledge(h.db.pool),
    enqueue: async () => undefined,
    intake: async () => undefined,
    stop: async () => true,
  });

  it('409 when a build has not ended in time: nothing deleted, and the message says how to go on', async () => {
    const { repo } = await seedRepo(h);
    const session = await trigger(repo.key);
    // As the API answers it (stopAndRemove is the application layer's: it refuses, HTTP maps).
    const err = await stopAndRemove(deps(), { repo: repo.id }, { stoppedBy: 'dave', what: 'repository x', waitMs: 500 }).catch(asHttpError);
    expect(err).toMatchObject({ statusCode: 409, message: expect.stringMatching(new RegExp(`1 build still stopping \\(session ${session}\\).*force=true`)) });
    expect(await statusOf(session)).toBe('queued');
  });

  it('503 with a build under way and no stopping wired; without one, deletes anyway', async () => {
    const { repo } = await seedRepo(h);
    await trigger(repo.key);
    const none = { ...deps(), stop: undefined };
    await expect(stopAndRemove(none, { repo: repo.id }, { stoppedBy: 'x', what: 'repository x' }).catch(asHttpError)).resolves.toMatchObject({ statusCode: 503 });
    const idle = await seedRepo(h);
    await expect(stopAndRemove(none, { repo: idle.repo.id }, { stoppedBy: 'x', what: 'repository x' })).resolves.toBe(true);
  });

  it('false for what is not there', async () => {
    await expect(stopAndRemove(deps(), { suite: 987654 }, { stoppedBy: 'x', what: 'x' })).resolves.toBe(false);
  });
});

describe('what still runs for a deleted session', () => {
  it('logs a delivery attempt without the session, claims its first attempt, records no post-build step', async () => {
    const { orgId, repo } = await seedRepo(h);
    const session = await trigger(repo.key);
    const hook = (await h.admin('POST', `/api/v1/orgs/${orgId}/webhooks`, { url: 'https://hooks.example.test/late' })).json();
    await h.admin('DELETE', `/api/v1/repos/${repo.id}?force=true`);

    expect(await claimFirstAttempt(h.db.pool, { sessionId: session, webhookId: hook.id, event: 'received' }, 30_000)).toBe(true);
    const row = await insertDeliveryAttempt(h.db.pool, {
      webhookId: hook.id, sessionId: session, event: 'stop', xid: 'late-xid', attempt: 1, statusCode: 200, outcome: 'delivered', error: null,
      durationMs: 4, payload: { event: 'stop', session }, requestBody: '{}', origin: 'event', url: 'https://hooks.example.test/late',
      requestHeaders: null, responseHeaders: null, responseBody: null, errorClass: null, nextDelayMs: null, closureOutcome: null, closureDetail: null,
    });
    expect((await h.db.pool.query('SELECT session_id, event FROM deliveries WHERE id = $1', [row.id])).rows).toEqual([{ session_id: null, event: 'stop' }]);
    await recordStep(h.db.pool, session, 'email', false, 'no recipient');
    expect(await count('FROM post_build_steps WHERE session_id = $1', [session])).toBe(0);
  });
});

describe('POST /api/v1/repos/:repo/rotate-key', () => {
  it('answers the repository with a new key and webhook URL; the old URL stops working at once', async () => {
    const { repo } = await seedRepo(h);
    const res = await h.admin('POST', `/api/v1/repos/${repo.id}/rotate-key`);
    expect(res.statusCode).toBe(200);
    const rotated = res.json();
    expect(rotated).toMatchObject({ id: repo.id, name: repo.name, ssh_public_key: repo.ssh_public_key });
    expect(rotated.key).not.toBe(repo.key);
    expect(rotated.webhook_url).toBe(`${h.config.baseUrl}/1/builds/${rotated.key}`);
    expect((await h.request({ method: 'POST', url: `/1/builds/${repo.key}` })).statusCode).toBe(404);
    expect((await h.request({ method: 'POST', url: `/1/github/${repo.key}`, headers: { 'x-github-event': 'ping' }, payload: {} })).statusCode).toBe(404);
    expect((await h.request({ method: 'POST', url: `/1/builds/${rotated.key}` })).statusCode).toBe(200);
    expect((await h.admin('GET', `/api/v1/repos/${repo.id}`)).json().webhook_url).toBe(rotated.webhook_url);
  });

  it('404 for an unknown repository', async () => {
    expect((await h.admin('POST', '/api/v1/repos/999999/rotate-key')).statusCode).toBe(404);
  });
});

describe('POST /api/v1/repos/:repo/rotate-ssh-key', () => {
  it('answers with a new public key whose private half is sealed beside it; the trigger key stays', async () => {
    const { repo } = await seedRepo(h);
    const res = await h.admin('POST', `/api/v1/repos/${repo.id}/rotate-ssh-key`);
    expect(res.statusCode).toBe(200);
    const rotated = res.json();
    expect(rotated.ssh_public_key).toMatch(/^ssh-ed25519 \S+ sluice:\S+\/widgets$/);
    expect(rotated.ssh_public_key).not.toBe(repo.ssh_public_key);
    expect(rotated.key).toBe(repo.key);
    expect(res.body).not.toContain('PRIVATE KEY');
    const { rows } = await h.db.pool.query<{ ssh_private_key_sealed: string }>('SELECT ssh_private_key_sealed FROM repos WHERE id = $1', [repo.id]);
    const priv = utils.parseKey(unseal(h.config.secretKey, rows[0]!.ssh_private_key_sealed));
    const pub = utils.parseKey(rotated.ssh_public_key);
    if (priv instanceof Error || pub instanceof Error) throw new Error('unparsable key');
    expect(priv.getPublicSSH().equals(pub.getPublicSSH())).toBe(true);
  });

  it('404 for an unknown repository', async () => {
    expect((await h.admin('POST', '/api/v1/repos/999999/rotate-ssh-key')).statusCode).toBe(404);
  });
});

describe('a suite deadline', () => {
  it('none by default; set on POST and PATCH, null clears it; reaches the session context of a build, never of a plan part', async () => {
    const { repo, suites } = await seedRepo(h);
    expect((await h.admin('GET', `/api/v1/repos/${repo.id}/suites`)).json()[0]).toMatchObject({ deadline_minutes: null });
    const made = await h.admin('POST', `/api/v1/repos/${repo.id}/suites`, { branch: 'slow', test_pattern: '*.sh', deadline_minutes: 90 });
    expect(made.statusCode).toBe(201);
    expect(made.json()).toMatchObject({ deadline_minutes: 90 });
    const patched = await h.admin('PATCH', `/api/v1/repos/${repo.id}/suites/${suites[0]!.id}`, { deadline_minutes: 10080 });
    expect(patched.json()).toMatchObject({ deadline_minutes: 10080 });

    const session = await trigger(repo.key);
    const ctx = await loadSessionContext(h.db.pool, h.config, session);
    expect(ctx.deadlineMinutes).toBe(10080);
    const { rows } = await h.db.pool.query<{ id: number }>(
      `INSERT INTO sessions (ci_event_id, suite_id, parent_id, profile_name, branch, head)
       SELECT ci_event_id, suite_id, id, 'unit', branch, head FROM sessions WHERE id = $1 RETURNING id`,
      [session],
    );
    expect((await loadSessionContext(h.db.pool, h.config, rows[0]!.id)).deadlineMinutes).toBeNull();

    const cleared = await h.admin('PATCH', `/api/v1/repos/${repo.id}/suites/${suites[0]!.id}`, { deadline_minutes: null });
    expect(cleared.json()).toMatchObject({ deadline_minutes: null });
    expect((await loadSessionContext(h.db.pool, h.config, session)).deadlineMinutes).toBeNull();
  });

  it.each([0, 10081, 1.5, '30', -1])('400 for %p', async (value) => {
    const { repo, suites } = await seedRepo(h);
    const res = await h.admin('PATCH', `/api/v1/repos/${repo.id}/suites/${suites[0]!.id}`, { deadline_minutes: value });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ field: 'deadline_minutes' });
  });
});

/**
 * The report page shows what became of push, chat and e-mail (a failed one did not change the
 * build's status), in HTML and in its JSON twin; escaped like everything else on the page.
 */
import { createPostActivities } from '../../src/activities/post/activities';
import { closeDefaultAgent } from '../../src/delivery/send';
import { emptyCounts } from '../../src/core/counts';
import { startApiHarness, type ApiHarness } from '../support/apiApp';
import { insertPostSession } from '../support/postSession';
import { reportPath } from '../support/reports';

let h: ApiHarness;

beforeAll(async () => {
  h = await startApiHarness();
});

afterAll(async () => {
  await closeDefaultAgent();
  await h.close();
});

describe('report page: after the tests', () => {
  it('lists each post-build step with its outcome, in order', async () => {
    const s = await insertPostSession(h.db.pool, h.config.secretKey, { chatUrl: 'ftp://chat.example.test/<b>hook</b>' });
    await h.db.pool.query(`UPDATE sessions SET status = 'passed' WHERE id = $1`, [s.sessionId]);
    await h.db.pool.query(`INSERT INTO post_build_steps (session_id, step, ok, detail) VALUES ($1, 'push', true, 'refs/heads/master pushed <abc>')`, [
      s.sessionId,
    ]);
    // A real failing step, recorded by the activity itself.
    const chat = await createPostActivities({ config: h.config, pool: h.db.pool }).postChat({
      sessionId: s.sessionId,
      summary: {
        session: s.sessionId,
        repo: { orgName: 'acme', name: 'app' },
        branch: 'master',
        commitId: null,
        status: 'passed',
        reason: null,
        counts: emptyCounts(),
        url: `${h.config.baseUrl}/1/reports/${s.sessionId}`,
      },
    });
    expect(chat.posted).toBe(false);

    const json = await h.request({ method: 'GET', url: await reportPath(h.db.pool, s.sessionId), headers: { accept: 'application/json' } });
    expect(json.statusCode).toBe(200);
    const view = json.json();
    expect(view.status).toBe('passed');
    expect(view.post_build_steps).toEqual([
      { step: 'push', ok: true, detail: 'refs/heads/master pushed <abc>', created_at: expect.any(String) },
      { step: 'chat', ok: false, detail: 'the chat URL is not an http(s) URL', created_at: expect.any(String) },
    ]);

    const html = await h.request({ method: 'GET', url: await reportPath(h.db.pool, s.sessionId) });
    expect(html.statusCode).toBe(200);
    expect(html.body).toContain('<h2>After the tests</h2>');
    expect(html.body).toContain('<tr><th>push</th><td class="ok">ok</td><td>refs/heads/master pushed &lt;abc&gt;</td></tr>');
    expect(html.body).toContain('<tr><th>chat</th><td class="failed">failed</td><td>the chat URL is not an http(s) URL</td></tr>');
    expect(html.body).not.toContain('<abc>');
  });

  it('a session without post-build steps has no such section', async () => {
    const s = await insertPostSession(h.db.pool, h.config.secretKey);
    const json = await h.request({ method: 'GET', url: await reportPath(h.db.pool, s.sessionId), headers: { accept: 'application/json' } });
    expect(json.json()).not.toHaveProperty('post_build_steps');
    const html = await h.request({ method: 'GET', url: await reportPath(h.db.pool, s.sessionId) });
    expect(html.body).not.toContain('After the tests');
  });
});

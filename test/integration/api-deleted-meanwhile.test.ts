/**
 * Requests racing a DELETE of the organization or repository they act on, against a real
 * PostgreSQL: the row is there when the route loads it and gone by the time it writes. The
 * race is made certain with database triggers that delete the parent at the moment of the
 * write. Each answers 404 naming no table, constraint or SQL, never a 500. (A trigger writes
 * nothing before its answer: its records racing a DELETE are in api-triggers-outage.test.ts.)
 */
import { tryAction } from '../../src/api/web/pages';
import { seedRepo, startApiHarness, type ApiHarness } from '../support/apiApp';

let h: ApiHarness;

beforeAll(async () => {
  h = await startApiHarness();
  const { pool } = h.db;
  // The repositories and organizations a test dooms: a write under (or to) one of them deletes it first.
  await pool.query('CREATE TABLE doomed (repo_id bigint, org_id bigint)');
  // Before an insert under a doomed parent, the parent goes: the insert then violates its foreign key.
  await pool.query(`CREATE FUNCTION race_delete_parent() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_TABLE_NAME = 'webhooks' THEN DELETE FROM orgs WHERE id IN (SELECT org_id FROM doomed WHERE org_id = NEW.org_id);
      ELSE DELETE FROM repos WHERE id IN (SELECT repo_id FROM doomed WHERE repo_id = NEW.repo_id);
      END IF;
      RETURN NEW;
    END $$`);
  for (const table of ['repo_secrets', 'suites', 'branches', 'webhooks', 'ci_events']) {
    await pool.query(`CREATE TRIGGER race BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION race_delete_parent()`);
  }
  // After an update of a doomed repository (a key rotated, a setting saved), it goes: reading it back finds nothing.
  await pool.query(`CREATE FUNCTION race_delete_updated() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN DELETE FROM repos WHERE id IN (SELECT repo_id FROM doomed WHERE repo_id = NEW.id); RETURN NULL; END $$`);
  await pool.query('CREATE TRIGGER race AFTER UPDATE ON repos FOR EACH ROW EXECUTE FUNCTION race_delete_updated()');
});

afterAll(async () => {
  await h.close();
});

/** A repository with a suite for master, deleted by whatever next writes under it or to it. */
async function doomedRepo(): Promise<{ repo: { id: number; key: string }; orgId: number }> {
  const { repo, orgId } = await seedRepo(h);
  await h.db.pool.query('INSERT INTO doomed (repo_id, org_id) VALUES ($1, $2)', [repo.id, orgId]);
  return { repo, orgId };
}

/** The answer a racing request gets: a plain 404, no SQL in it. */
function expectNotFound(res: { statusCode: number; body: string; json(): unknown }): void {
  expect(res.statusCode).toBe(404);
  expect(res.json()).toEqual({ error: 'not found', message: expect.any(String) });
  expect(res.body).not.toMatch(/foreign key|constraint|violates|repo_secrets|suites|branches|webhooks|ci_events|insert|update/i);
}

describe('a request racing a DELETE answers 404', () => {
  it.each<[string, (repo: { id: number }, orgId: number) => [string, string, unknown?]]>([
    ['setting a secret', (repo) => ['PUT', `/api/v1/repos/${repo.id}/secrets/API_TOKEN`, { value: 'v' }]],
    ['adding a suite', (repo) => ['POST', `/api/v1/repos/${repo.id}/suites`, { branch: 'next', test_pattern: '*.sh' }]],
    ['setting a branch', (repo) => ['PUT', `/api/v1/repos/${repo.id}/branches/next`, { enabled: false }]],
    ['adding a webhook', (_repo, orgId) => ['POST', `/api/v1/orgs/${orgId}/webhooks`, { url: 'https://hooks.example.test/x' }]],
    ['rotating the trigger key', (repo) => ['POST', `/api/v1/repos/${repo.id}/rotate-key`]],
    ['rotating the SSH key', (repo) => ['POST', `/api/v1/repos/${repo.id}/rotate-ssh-key`]],
    ['saving a setting', (repo) => ['PATCH', `/api/v1/repos/${repo.id}`, { ci_squash: true }]],
  ])('%s', async (_name, request) => {
    const { repo, orgId } = await doomedRepo();
    const [method, url, body] = request(repo, orgId);
    // (The failed insert rolls the trigger's DELETE back with it: only the answer is checked.)
    expectNotFound(await h.admin(method, url, body));
  });

  it("a web page's form: shown on the page as the same 404", async () => {
    const insert = () => h.db.pool.query("INSERT INTO repo_secrets (repo_id, name, value_sealed) VALUES (999999, 'X', 'v')");
    expect(await tryAction(insert)).toEqual({ ok: false, status: 404, error: { message: 'what this refers to no longer exists (deleted meanwhile)', field: undefined } });
  });
});

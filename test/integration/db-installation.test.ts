// Each database is its own installation: its id is made once by the migrations and kept.
import { loadInstallation } from '../../src/db/installation';
import { migrate } from '../../src/db/migrate';
import { createTestDatabase, type TestDatabase } from '../support/db';

const dbs: TestDatabase[] = [];
afterAll(async () => {
  for (const db of dbs) await db.drop();
});

it('gives every new database an installation id of its own, which migrating again keeps', async () => {
  const [a, b] = [await createTestDatabase('sluice_inst'), await createTestDatabase('sluice_inst')];
  dbs.push(a, b);
  const [idA, idB] = [await loadInstallation(a.pool), await loadInstallation(b.pool)];
  expect(idA).toMatch(/^[0-9a-f]{8}$/);
  expect(idB).toMatch(/^[0-9a-f]{8}$/);
  expect(idA).not.toBe(idB);
  await migrate(a.pool);
  expect(await loadInstallation(a.pool)).toBe(idA);
  // One row, for good.
  await expect(a.pool.query("INSERT INTO installation (id) VALUES ('00000000')")).rejects.toThrow();
});

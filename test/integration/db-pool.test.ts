/**
 * The pool outlives the loss of an idle connection: PostgreSQL ending one (a restart, a
 * terminated backend, a dropped database) must not bring the process down. Without the pool's
 * 'error' listener, pg raises it as an unhandled 'error' event and this test file fails.
 */
import { createPool } from '../../src/db/pool';
import { createTestDatabase, type TestDatabase } from '../support/db';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

it('replaces an idle connection the server terminated, and answers the next query', async () => {
  const pool = createPool(db.url, 2);
  try {
    const client = await pool.connect();
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    client.release(); // now idle in the pool
    // Listening before the backend goes: the pool may drop the client before the terminating query answers.
    const removed = new Promise<void>((resolve) => pool.once('remove', () => resolve()));
    await db.pool.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
    await removed;
    expect((await pool.query<{ n: number }>('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
  } finally {
    await pool.end();
  }
});

it('runs its queries without JIT, which costs short queries over a long history far more than it saves', async () => {
  const pool = createPool(db.url, 1);
  try {
    expect((await pool.query<{ jit: string }>('SHOW jit')).rows).toEqual([{ jit: 'off' }]);
  } finally {
    await pool.end();
  }
});

it('leaves JIT as the database URL says when it says so', async () => {
  const pool = createPool(`${db.url}?options=-c%20jit%3Don`, 1);
  try {
    expect((await pool.query<{ jit: string }>('SHOW jit')).rows).toEqual([{ jit: 'on' }]);
  } finally {
    await pool.end();
  }
});

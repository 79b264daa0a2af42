// The pieces of the hosting sites' HTTP (src/sites/http.ts) and the hook health sums
// (src/api/hookHealth.ts) that are pure enough to test alone; the clients themselves are
// tested against the fake sites (test/integration/connections-*.test.ts).
import type { Pool } from 'pg';
import { hookHealth } from '../../src/api/hookHealth';
import { nextLink } from '../../src/sites/http';

describe('nextLink', () => {
  it.each<[string | string[] | undefined, string | null]>([
    [undefined, null],
    ['', null],
    ['<https://gitlab.example/api/v4/projects?page=2&per_page=100>; rel="next", <https://gitlab.example/api/v4/projects?page=5>; rel="last"', 'https://gitlab.example/api/v4/projects?page=2&per_page=100'],
    ['<https://x/a?page=1>; rel="prev", <https://x/a?page=3>; rel=next', 'https://x/a?page=3'],
    ['<https://x/a?page=9>; rel="last"', null],
    [['<https://x/a?page=1>; rel="first"', '<https://x/a?page=2>; rel="next"'], 'https://x/a?page=2'],
  ])('%j → %j', (header, next) => {
    expect(nextLink(header)).toBe(next);
  });
});

describe('hookHealth', () => {
  /** A pool whose writes fail while `down`, recording what it was asked to write. */
  function pool() {
    const writes: unknown[][] = [];
    let down = false;
    const p = {
      query: async (_sql: string, params: unknown[]) => {
        if (down) throw new Error('connection refused');
        writes.push(params);
        return { rows: [], rowCount: 0 };
      },
    };
    return { pool: p as unknown as Pool, writes, setDown: (d: boolean) => (down = d) };
  }

  it('writes every repository’s sums in one statement, and nothing when nothing arrived', async () => {
    const { pool: db, writes } = pool();
    const health = hookHealth(db, { everyMs: 60_000 });
    health.arrived(1);
    health.arrived(1);
    health.refused(2);
    health.refused(2);
    await health.flush();
    expect(writes).toHaveLength(1);
    const [repos, lastHookAt, refused] = writes[0]!;
    expect(repos).toEqual([1, 2]);
    expect(refused).toEqual([0, 2]);
    expect((lastHookAt as (Date | null)[])[1]).toBeNull();
    await health.flush();
    expect(writes).toHaveLength(1);
    await health.close();
  });

  it('keeps what a failed write held, added to what arrived meanwhile', async () => {
    const { pool: db, writes, setDown } = pool();
    const errors: unknown[] = [];
    const health = hookHealth(db, { everyMs: 60_000, onError: (e) => errors.push(e) });
    health.refused(5);
    setDown(true);
    await health.flush();
    expect(errors).toHaveLength(1);
    health.refused(5);
    setDown(false);
    await health.close();
    expect(writes).toEqual([[[5], [null], [2], [expect.any(Date)]]]);
  });
});

import { Pool } from 'pg';

// bigserial ids come back from pg as strings; ours stay far below 2^53, so read them as numbers.
import { types } from 'pg';
types.setTypeParser(types.builtins.INT8, (v) => Number(v));

export function createPool(databaseUrl: string, max = 10): Pool {
  return new Pool({ connectionString: databaseUrl, max });
}

export type { Pool, PoolClient } from 'pg';

/** SQL for build secrets. Values are stored sealed and read back only by the worker's activities. */
import type { Db } from './transaction';

export interface SecretRow {
  name: string;
  value_sealed: string;
  created_at: Date;
  updated_at: Date;
}

/** Sets a secret; `created` tells a new one from a replaced one. */
export async function upsertSecret(db: Db, repoId: number, name: string, valueSealed: string): Promise<{ created: boolean; row: SecretRow }> {
  const { rows } = await db.query<SecretRow & { created: boolean }>(
    `INSERT INTO repo_secrets (repo_id, name, value_sealed) VALUES ($1, $2, $3)
     ON CONFLICT (repo_id, name) DO UPDATE SET value_sealed = EXCLUDED.value_sealed, updated_at = now()
     RETURNING name, value_sealed, created_at, updated_at, (xmax = 0) AS created`,
    [repoId, name, valueSealed],
  );
  const { created, ...row } = rows[0]!;
  return { created, row };
}

/** Sealed values included: the list view needs them to tell which are long enough to mask. */
export async function listSecrets(db: Db, repoId: number): Promise<SecretRow[]> {
  return (
    await db.query<SecretRow>('SELECT name, value_sealed, created_at, updated_at FROM repo_secrets WHERE repo_id = $1 ORDER BY name', [
      repoId,
    ])
  ).rows;
}

export async function countSecrets(db: Db, repoId: number): Promise<number> {
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM repo_secrets WHERE repo_id = $1', [repoId]);
  return rows[0]!.n;
}

export async function deleteSecret(db: Db, repoId: number, name: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM repo_secrets WHERE repo_id = $1 AND name = $2', [repoId, name]);
  return (rowCount ?? 0) > 0;
}

/** Holds the repository's row until the transaction ends: one secret writer per repository at a time. */
export async function lockRepoSecrets(db: Db, repoId: number): Promise<void> {
  await db.query('SELECT id FROM repos WHERE id = $1 FOR UPDATE', [repoId]);
}

export async function secretExists(db: Db, repoId: number, name: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM repo_secrets WHERE repo_id = $1 AND name = $2', [repoId, name]);
  return (rowCount ?? 0) > 0;
}

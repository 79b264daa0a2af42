/** SQL of a repository's registry logins (migration 029): one per registry host, the password sealed. */
import type { Db } from './transaction';

export interface RegistryLoginRow {
  host: string;
  username: string;
  password_sealed: string;
  created_at: Date;
  updated_at: Date;
}

/** Sets the login for `host`; `created` tells a new one from a replaced one. */
export async function upsertRegistryLogin(db: Db, repoId: number, login: { host: string; username: string; passwordSealed: string }): Promise<{ created: boolean; row: RegistryLoginRow }> {
  const { rows } = await db.query<RegistryLoginRow & { created: boolean }>(
    `INSERT INTO registry_logins (repo_id, host, username, password_sealed) VALUES ($1, $2, $3, $4)
     ON CONFLICT (repo_id, host) DO UPDATE SET username = EXCLUDED.username, password_sealed = EXCLUDED.password_sealed, updated_at = now()
     RETURNING host, username, password_sealed, created_at, updated_at, (xmax = 0) AS created`,
    [repoId, login.host, login.username, login.passwordSealed],
  );
  const { created, ...row } = rows[0]!;
  return { created, row };
}

/** The repository's logins, by host; sealed passwords included (only the runners' records unseal them). */
export async function listRegistryLogins(db: Db, repoId: number): Promise<RegistryLoginRow[]> {
  const { rows } = await db.query<RegistryLoginRow>(
    'SELECT host, username, password_sealed, created_at, updated_at FROM registry_logins WHERE repo_id = $1 ORDER BY host',
    [repoId],
  );
  return rows;
}

export async function deleteRegistryLogin(db: Db, repoId: number, host: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM registry_logins WHERE repo_id = $1 AND host = $2', [repoId, host]);
  return (rowCount ?? 0) > 0;
}

/** SQL of rotating a repository's credentials: its trigger key and its SSH key pair. */
import type { Db } from './transaction';

/** Replaces the trigger key (its SHA-256 and its sealed copy): the old one finds nothing from now on. False when there is no such repository. */
export async function replaceRepoKey(db: Db, repoId: number, keyHash: Buffer, keySealed: string): Promise<boolean> {
  const { rowCount } = await db.query('UPDATE repos SET key_hash = $2, key_sealed = $3 WHERE id = $1', [repoId, keyHash, keySealed]);
  return rowCount === 1;
}

/** Replaces the SSH key pair (the private half sealed): every fetch and push from now on uses it. False when there is no such repository. */
export async function replaceRepoSshKey(db: Db, repoId: number, publicKey: string, privateKeySealed: string): Promise<boolean> {
  const { rowCount } = await db.query('UPDATE repos SET ssh_public_key = $2, ssh_private_key_sealed = $3 WHERE id = $1', [repoId, publicKey, privateKeySealed]);
  return rowCount === 1;
}

import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Secrets at rest (SSH private keys, webhook passwords, repository keys, build secrets) are
 * sealed with AES-256-GCM under SLUICE_SECRET_KEY. Format: `v1:` + base64(iv | tag | ciphertext).
 */
const VERSION = 'v1:';

export function seal(key: Buffer, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return VERSION + Buffer.concat([iv, cipher.getAuthTag(), ct]).toString('base64');
}

export function unseal(key: Buffer, sealed: string): string {
  if (!sealed.startsWith(VERSION)) throw new Error('unknown sealed value format');
  const raw = Buffer.from(sealed.slice(VERSION.length), 'base64');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
}

/**
 * SHA-256 of a key or token (a repository key, a runner or API token, a browser's session id):
 * what the database indexes, so a lookup, or a copy of the table, reveals nothing of it.
 */
export function keyHash(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** A repository key: 24 random bytes (192 bits), URL-safe. */
export function newRepoKey(): string {
  return randomBytes(24).toString('base64url');
}

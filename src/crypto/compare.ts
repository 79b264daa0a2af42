/**
 * Comparing credentials in constant time, the one place that does: a digest with a stored one
 * (`sameDigest`), or a secret someone sent with the one expected (`sameSecret`, both hashed
 * first, so neither the secret's content nor its length shows in the response time).
 */
import { createHash, timingSafeEqual } from 'node:crypto';

const sha256 = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/** Whether two digests (or signatures) are equal; ones of different lengths never are. */
export function sameDigest(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Whether two secrets are equal, in time that tells nothing of either. */
export function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(sha256(given), sha256(expected));
}

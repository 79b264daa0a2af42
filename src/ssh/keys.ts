/**
 * Per-repository SSH pull keys. Each repository gets its own ed25519 pair: the public half is
 * shown to the owner to authorize at the SCM, the private half is sealed at rest and only ever
 * written to a short-lived 0600 file while git runs (see steps/checkout/git.ts).
 */
import { createHash } from 'node:crypto';
import { utils } from 'ssh2';

export interface RepoKeyPair {
  /** One OpenSSH public key line: `ssh-ed25519 AAAA... <comment>`. */
  publicKey: string;
  /** OpenSSH private key (`-----BEGIN OPENSSH PRIVATE KEY-----`), unencrypted. */
  privateKey: string;
}

/**
 * A fresh ed25519 key pair. The comment (e.g. `sluice:org/repo`) ends up in the public line the
 * owner pastes into the SCM, so it is flattened to one printable line.
 */
export function generateRepoKeyPair(comment: string): RepoKeyPair {
  // Control characters (newlines above all) would split the authorized_keys line.
  // eslint-disable-next-line no-control-regex
  const safeComment = comment.replace(/[\x00-\x1f\x7f]+/g, ' ').trim();
  // ssh2 encodes a public key whose first byte is 0 as 31 bytes (about 1 key in 128), which
  // no SSH implementation, ssh2 included, will parse. Such a pair is thrown away.
  for (;;) {
    const pair = utils.generateKeyPairSync('ed25519', { comment: safeComment });
    const publicKey = pair.public.trim();
    if (!(utils.parseKey(publicKey) instanceof Error) && !(utils.parseKey(pair.private) instanceof Error)) {
      return { publicKey, privateKey: pair.private };
    }
  }
}

/**
 * `SHA256:<base64>` fingerprint of a public key line, the same string `ssh-keygen -lf` prints,
 * so an owner can compare what the SCM shows with what Sluice holds.
 */
export function publicKeyFingerprint(publicKey: string): string {
  const parsed = utils.parseKey(publicKey);
  if (parsed instanceof Error) throw new Error(`not an SSH public key: ${parsed.message}`);
  const digest = createHash('sha256').update(parsed.getPublicSSH()).digest('base64').replace(/=+$/, '');
  return `SHA256:${digest}`;
}

/**
 * Optional beyond the spec: a repository with a webhook secret accepts a trigger only when it
 * proves it knows the secret, in any of the ways hosting providers sign their hooks:
 *
 * - `X-Hub-Signature-256: sha256=<hex>` (GitHub, Gitea, Forgejo, Gogs), `X-Hub-Signature:
 *   sha256=<hex>` (Bitbucket Cloud and Server): HMAC-SHA256 of the raw body, keyed with the
 *   secret; the generic path and Gerrit hook scripts sign the same way
 *   (`openssl dgst -sha256 -hmac "$SECRET"`);
 * - `X-Gitea-Signature`, `X-Forgejo-Signature`, `X-Gogs-Signature: <hex>`: the same HMAC, bare;
 * - `X-Gitlab-Token: <secret>` (GitLab sends the secret itself).
 *
 * One proof that holds is enough. Comparisons take constant time. Pure (no I/O).
 */
import { createHmac } from 'node:crypto';
import { sameDigest, sameSecret } from '../crypto/compare';

export type SignatureCheck = { ok: true } | { ok: false; field: string; message: string };

const PREFIXED = ['x-hub-signature-256', 'x-hub-signature'] as const;
const BARE = ['x-gitea-signature', 'x-forgejo-signature', 'x-gogs-signature'] as const;
const TOKEN = 'x-gitlab-token';

export function checkHookSignature(secret: string, headers: Readonly<Record<string, string | undefined>>, body: Buffer): SignatureCheck {
  const expected = createHmac('sha256', secret).update(body).digest();
  const offered: { field: string; ok: boolean }[] = [];
  for (const name of PREFIXED) {
    const value = headers[name]?.trim();
    if (!value) continue;
    // GitHub's legacy `X-Hub-Signature: sha1=...` is no proof: only SHA-256 counts.
    const hex = /^sha256=([0-9a-f]{64})$/i.exec(value)?.[1];
    offered.push({ field: `headers.${name}`, ok: hex !== undefined && sameDigest(Buffer.from(hex, 'hex'), expected) });
  }
  for (const name of BARE) {
    const value = headers[name]?.trim();
    if (!value) continue;
    offered.push({ field: `headers.${name}`, ok: /^[0-9a-f]{64}$/i.test(value) && sameDigest(Buffer.from(value, 'hex'), expected) });
  }
  const token = headers[TOKEN];
  if (token) offered.push({ field: `headers.${TOKEN}`, ok: sameSecret(token, secret) });

  if (offered.some((o) => o.ok)) return { ok: true };
  if (offered.length === 0) {
    return {
      ok: false,
      field: 'headers.x-hub-signature-256',
      message: 'this repository has a webhook secret: sign the body (X-Hub-Signature-256: sha256=<HMAC-SHA256 of the body>) or send X-Gitlab-Token',
    };
  }
  return { ok: false, field: offered[0]!.field, message: 'the signature does not match this repository\'s webhook secret' };
}

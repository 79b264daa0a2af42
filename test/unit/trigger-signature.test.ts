import { createHmac } from 'node:crypto';
import { checkHookSignature } from '../../src/core/hookSignature';

const SECRET = 'a-long-webhook-secret-0123';
const BODY = Buffer.from('{"ref":"refs/heads/master"}');
const hmac = (secret = SECRET, body = BODY) => createHmac('sha256', secret).update(body).digest('hex');

describe('checkHookSignature', () => {
  it.each<[string, Record<string, string>]>([
    ['GitHub / Gitea / Gogs X-Hub-Signature-256', { 'x-hub-signature-256': `sha256=${hmac()}` }],
    ['upper-case hex', { 'x-hub-signature-256': `sha256=${hmac().toUpperCase()}` }],
    ['Bitbucket X-Hub-Signature', { 'x-hub-signature': `sha256=${hmac()}` }],
    ['X-Gitea-Signature', { 'x-gitea-signature': hmac() }],
    ['X-Forgejo-Signature', { 'x-forgejo-signature': hmac() }],
    ['X-Gogs-Signature', { 'x-gogs-signature': hmac() }],
    ['X-Gitlab-Token', { 'x-gitlab-token': SECRET }],
    ['one good proof among bad ones', { 'x-hub-signature': 'sha1=abc', 'x-hub-signature-256': `sha256=${hmac()}` }],
  ])('accepts %s', (_name, headers) => {
    expect(checkHookSignature(SECRET, headers, BODY)).toEqual({ ok: true });
  });

  it('signs the empty body too', () => {
    expect(checkHookSignature(SECRET, { 'x-hub-signature-256': `sha256=${hmac(SECRET, Buffer.alloc(0))}` }, Buffer.alloc(0))).toEqual({ ok: true });
  });

  it.each<[string, Record<string, string>, string]>([
    ['another secret', { 'x-hub-signature-256': `sha256=${hmac('another-secret-entirely')}` }, 'headers.x-hub-signature-256'],
    ['another body', { 'x-hub-signature-256': `sha256=${hmac(SECRET, Buffer.from('{}'))}` }, 'headers.x-hub-signature-256'],
    ['no sha256= prefix', { 'x-hub-signature-256': hmac() }, 'headers.x-hub-signature-256'],
    ['legacy sha1', { 'x-hub-signature': `sha1=${createHmac('sha1', SECRET).update(BODY).digest('hex')}` }, 'headers.x-hub-signature'],
    ['truncated', { 'x-gitea-signature': hmac().slice(0, 63) }, 'headers.x-gitea-signature'],
    ['a wrong token', { 'x-gitlab-token': `${SECRET}x` }, 'headers.x-gitlab-token'],
    ['a token prefix', { 'x-gitlab-token': SECRET.slice(0, 5) }, 'headers.x-gitlab-token'],
  ])('refuses %s', (_name, headers, field) => {
    expect(checkHookSignature(SECRET, headers, BODY)).toEqual({ ok: false, field, message: "the signature does not match this repository's webhook secret" });
  });

  it('says how to sign when nothing is offered', () => {
    expect(checkHookSignature(SECRET, { 'x-github-event': 'push' }, BODY)).toEqual({
      ok: false,
      field: 'headers.x-hub-signature-256',
      message: expect.stringContaining('X-Hub-Signature-256'),
    });
  });
});

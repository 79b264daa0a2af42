/**
 * Image references as people write them, read the way Docker reads them (distribution's
 * grammar): Docker Hub's short names, registries with ports, tags and digests, and what is
 * refused with what reason.
 */
import { formatImageRef, normalizeImageRef, parseImageRef, parseRegistryHost } from '../../src/core/imageRef';

const DIGEST = `sha256:${'ab'.repeat(32)}`;
const ok = (text: string) => {
  const r = parseImageRef(text);
  if (!r.ok) throw new Error(`expected ok, got: ${r.error}`);
  return r.ref;
};
const fail = (text: string) => {
  const r = parseImageRef(text);
  if (r.ok) throw new Error(`expected an error, got: ${JSON.stringify(r.ref)}`);
  return r.error;
};

describe('parseImageRef', () => {
  it.each([
    ['node:22', 'docker.io/library/node:22'],
    ['node', 'docker.io/library/node:latest'],
    ['library/node:22-bookworm', 'docker.io/library/node:22-bookworm'],
    ['cimg/node:22.12', 'docker.io/cimg/node:22.12'],
    ['docker.io/node:22', 'docker.io/library/node:22'],
    ['index.docker.io/library/node:22', 'docker.io/library/node:22'],
    ['registry-1.docker.io/acme/ci:3', 'docker.io/acme/ci:3'],
    ['ghcr.io/acme/ci:3', 'ghcr.io/acme/ci:3'],
    ['registry.example.com:5000/team/ci/tools:3.1', 'registry.example.com:5000/team/ci/tools:3.1'],
    ['localhost/ci:1', 'localhost/ci:1'],
    ['127.0.0.1:5000/node:22', '127.0.0.1:5000/node:22'],
    [`registry.example.com/team/ci:3@${DIGEST}`, `registry.example.com/team/ci:3@${DIGEST}`],
    [`node@${DIGEST}`, `docker.io/library/node@${DIGEST}`],
    ['  node:22  ', 'docker.io/library/node:22'],
    ['a/b__c/d-e.f_g:T_a.g-1', 'docker.io/a/b__c/d-e.f_g:T_a.g-1'],
  ])('%s is %s', (text, full) => {
    expect(formatImageRef(ok(text))).toBe(full);
    expect(normalizeImageRef(text)).toBe(full);
  });

  it('takes a digest alone as pinned, with no tag', () => {
    expect(ok(`ghcr.io/acme/ci@${DIGEST}`)).toEqual({ registry: 'ghcr.io', repository: 'acme/ci', tag: null, digest: DIGEST });
  });

  it('tells a port from a tag: the tag is after the last slash', () => {
    expect(ok('registry.example.com:5000/ci')).toEqual({ registry: 'registry.example.com:5000', repository: 'ci', tag: 'latest', digest: null });
  });

  it.each([
    ['must name an image', ''],
    ['name component "Node"', 'Node:22'],
    ['must not contain spaces', 'node:22 bookworm'],
    ['not a URL', 'https://ghcr.io/acme/ci'],
    ['sha256:<64 lowercase hex digits>', 'node@sha256:1234'],
    ['sha256:', `node@md5:${'a'.repeat(32)}`],
    ['has a tag "-bad"', 'node:-bad'],
    ['has a tag', 'node:' + 't'.repeat(129)],
    ['empty name component', 'acme//ci'],
    ['empty name component', 'acme/ci/'],
    ['has a registry "ghcr.io:"', 'ghcr.io:/acme/ci'],
    ['name component "-ci"', 'acme/-ci'],
    ['at most 512 characters', `x/${'a'.repeat(600)}`],
  ])('refuses it, saying: …%s…', (why, text) => {
    expect(fail(text)).toContain(why);
  });

  it('a reference that does not parse has no normalized form', () => {
    expect(normalizeImageRef('Not An Image')).toBeNull();
  });
});

describe('parseRegistryHost', () => {
  it.each([
    ['ghcr.io', 'ghcr.io'],
    ['Registry.Example.com:5000', 'registry.example.com:5000'],
    ['index.docker.io', 'docker.io'],
    ['127.0.0.1:5000', '127.0.0.1:5000'],
  ])('%s is %s', (text, host) => expect(parseRegistryHost(text)).toEqual({ ok: true, host }));

  it.each(['https://ghcr.io', 'ghcr.io/acme', 'ghcr.io:', '', 'a b'])('refuses %j', (text) => {
    expect(parseRegistryHost(text)).toMatchObject({ ok: false, error: expect.stringContaining('registry host') });
  });
});

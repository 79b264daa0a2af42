/**
 * What a build logs in to registries with: the config.json crane gets keeps only logins (a
 * config's credHelpers or credsStore would make crane run a program on the runner), files
 * Docker Hub's under the key Docker's own tools use, and lets the repository's registry logins
 * win over its DOCKER_AUTH_CONFIG secret.
 */
import { authKey, authsOfDockerConfig, dockerConfigJson } from '../../src/steps/image/credentials';

describe('authKey', () => {
  it.each([
    ['docker.io', 'https://index.docker.io/v1/'],
    ['https://index.docker.io/v1/', 'https://index.docker.io/v1/'],
    ['registry-1.docker.io', 'https://index.docker.io/v1/'],
    ['https://GHCR.io', 'ghcr.io'],
    ['registry.example.com:5000', 'registry.example.com:5000'],
    ['http://127.0.0.1:5000/v2/', '127.0.0.1:5000'],
  ])('%s → %s', (key, want) => expect(authKey(key)).toBe(want));
});

describe('authsOfDockerConfig', () => {
  it('keeps auths and the fields that log in, nothing else', () => {
    const config = {
      auths: {
        'ghcr.io': { auth: 'dXNlcjpwYXNz', email: 'x@example.com' },
        'https://index.docker.io/v1/': { username: 'u', password: 'p' },
        'quay.io': { identitytoken: 'tok', something: { nested: true } },
        'empty.example.com': {},
        'bad.example.com': 'not an object',
      },
      credHelpers: { 'ghcr.io': 'evil' },
      credsStore: 'evil',
      proxies: { default: { httpProxy: 'http://attacker' } },
    };
    const { auths, problem } = authsOfDockerConfig(JSON.stringify(config));
    expect(problem).toBeNull();
    expect(auths).toEqual({
      'ghcr.io': { auth: 'dXNlcjpwYXNz' },
      'https://index.docker.io/v1/': { username: 'u', password: 'p' },
      'quay.io': { identitytoken: 'tok' },
    });
  });

  it('says what is wrong without quoting the secret', () => {
    const secret = '{"auths": {"ghcr.io": {"auth": "c2VjcmV0"}';
    const { problem } = authsOfDockerConfig(secret);
    expect(problem).toContain('DOCKER_AUTH_CONFIG');
    expect(problem).not.toContain('c2VjcmV0');
    expect(authsOfDockerConfig('{"credHelpers": {}}').problem).toContain('no "auths"');
  });
});

describe('dockerConfigJson', () => {
  it('registry logins win over the secret, host by host', () => {
    const secret = JSON.stringify({ auths: { 'ghcr.io': { auth: 'b2xkOm9sZA==' }, 'quay.io': { auth: 'cTpx' } }, credsStore: 'desktop' });
    const { json, problem } = dockerConfigJson([{ host: 'ghcr.io', username: 'bot', password: 'new' }, { host: 'docker.io', username: 'hub', password: 'h' }], secret);
    expect(problem).toBeNull();
    expect(JSON.parse(json)).toEqual({
      auths: {
        'ghcr.io': { username: 'bot', password: 'new' },
        'quay.io': { auth: 'cTpx' },
        'https://index.docker.io/v1/': { username: 'hub', password: 'h' },
      },
    });
  });

  it('with nothing to log in with, an empty config: never the runner’s own', () => {
    expect(JSON.parse(dockerConfigJson([], undefined).json)).toEqual({ auths: {} });
  });
});

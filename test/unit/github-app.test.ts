/**
 * The pure parts of Sluice as a GitHub App (issue 38): its JWT as GitHub verifies one, where the
 * manifest goes on GitHub.com and an Enterprise Server, the check runs' requests (conclusions,
 * annotations 50 a request, the summary), and what an HTTPS checkout hands git (the token in
 * the environment for one origin only, never in an argument; only HTTPS, or HTTP on loopback).
 */
import { createPublicKey, createVerify, generateKeyPairSync } from 'node:crypto';
import { annotationOf, checkRunPlan, checkRunSummary } from '../../src/delivery/checkRuns';
import { appJwt, appManifest, githubApiUrlOf, manifestFormUrl } from '../../src/sites/github/app';
import { isTokenUrl, tokenGitEnv } from '../../src/steps/checkout/git';

describe('the app’s JWT', () => {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();

  it('is RS256, signed with the app’s key, issued by the app a minute back and good for nine minutes', () => {
    const now = Date.UTC(2026, 10, 28, 12, 0, 0);
    const [head, body, sig] = appJwt(4242, pem, now).split('.');
    expect(JSON.parse(Buffer.from(head!, 'base64url').toString())).toEqual({ alg: 'RS256', typ: 'JWT' });
    const claims = JSON.parse(Buffer.from(body!, 'base64url').toString());
    expect(claims).toEqual({ iss: '4242', iat: now / 1000 - 60, exp: now / 1000 - 60 + 540 });
    expect(createVerify('RSA-SHA256').update(`${head}.${body}`).verify(createPublicKey(publicKey.export({ type: 'spki', format: 'pem' })), Buffer.from(sig!, 'base64url'))).toBe(true);
    // GitHub refuses a JWT whose life is longer than ten minutes.
    expect(claims.exp - claims.iat).toBeLessThanOrEqual(600);
  });
});

describe('where the app is made', () => {
  it('posts the manifest to a person’s or an organization’s settings, on GitHub.com or an Enterprise Server', () => {
    expect(manifestFormUrl('https://github.com', null, 'a.b')).toBe('https://github.com/settings/apps/new?state=a.b');
    expect(manifestFormUrl('https://ghe.example.com/', 'acme', 's')).toBe('https://ghe.example.com/organizations/acme/settings/apps/new?state=s');
    expect(githubApiUrlOf('https://github.com')).toBe('https://api.github.com');
    expect(githubApiUrlOf('https://ghe.example.com/')).toBe('https://ghe.example.com/api/v3');
  });

  it('asks for read-only contents and check runs, and no more', () => {
    const m = appManifest('Sluice acme', { baseUrl: 'https://ci.example', hookUrl: 'https://ci.example/h', redirectUrl: 'https://ci.example/r', setupUrl: 'https://ci.example/s' });
    expect(m.default_permissions).toEqual({ contents: 'read', metadata: 'read', checks: 'write', pull_requests: 'read' });
    expect(m).toMatchObject({ public: false, hook_attributes: { url: 'https://ci.example/h', active: true } });
  });
});

describe('check runs', () => {
  const base = { name: 'sluice/default', headSha: 'a'.repeat(40), targetUrl: 'https://ci.example/b/1', externalId: '1', description: '#1 failed', now: new Date(0) };
  const failures = (n: number) => Array.from({ length: n }, (_, i) => annotationOf({ failure_file: './test/x.js', failure_line: i + 1, test_file: 'test/x.js', classname: 'x', name: `t${i}`, message: null }));

  it('start in progress, and end with the conclusion of the build', () => {
    expect(checkRunPlan('running', base).first).toMatchObject({ status: 'in_progress', head_sha: base.headSha, details_url: base.targetUrl, external_id: '1' });
    expect(checkRunPlan('passed', base).first).toMatchObject({ status: 'completed', conclusion: 'success' });
    expect(checkRunPlan('failed', base).first).toMatchObject({ conclusion: 'failure' });
    expect(checkRunPlan('error', base).first).toMatchObject({ conclusion: 'failure' });
    expect(checkRunPlan('stopped', base).first).toMatchObject({ conclusion: 'cancelled' });
  });

  it('carry 50 annotations a request, the rest in further updates', () => {
    const plan = checkRunPlan('failed', { ...base, annotations: failures(120) });
    expect((plan.first.output as { annotations: unknown[] }).annotations).toHaveLength(50);
    expect(plan.more.map((b) => b.length)).toEqual([50, 20]);
    expect(checkRunPlan('failed', { ...base, annotations: [] }).first.output).not.toHaveProperty('annotations');
  });

  it('annotate a failure at its file (relative, as GitHub wants) and line, named by the test', () => {
    expect(failures(1)[0]).toEqual({ path: 'test/x.js', start_line: 1, end_line: 1, annotation_level: 'failure', title: 'x t0', message: 'x t0 failed' });
  });

  it('sum up counts, duration and the link, and say when not every failure is annotated', () => {
    const text = checkRunSummary({ counts: { passed: 9, failed: 2 }, seconds: 75, failures: 501, annotated: 500 }, '#1 failed', 'https://ci.example/b/1');
    expect(text).toContain('**#1 failed** in 1 min 15 s');
    expect(text).toContain('| passed | 9 |');
    expect(text).toContain('[The build on Sluice](https://ci.example/b/1)');
    expect(text).toContain('first 500 failing tests');
  });
});

describe('an HTTPS checkout', () => {
  it('takes HTTPS without credentials, and plain HTTP only on loopback', () => {
    expect(isTokenUrl('https://github.com/acme/shop.git')).toBe(true);
    expect(isTokenUrl('http://127.0.0.1:8080/acme/shop.git')).toBe(true);
    expect(isTokenUrl('http://github.com/acme/shop.git')).toBe(false);
    expect(isTokenUrl('https://x-access-token:t@github.com/acme/shop.git')).toBe(false);
    expect(isTokenUrl('https://github.com/acme/shop.git?x=1')).toBe(false);
    expect(isTokenUrl('file:///srv/shop.git')).toBe(false);
    expect(isTokenUrl('git@github.com:acme/shop.git')).toBe(false);
    expect(isTokenUrl('https://github.com/acme/shop.git\n')).toBe(false);
  });

  it('hands git the token in its environment for the pull URL’s origin only, with no redirects, helpers or other protocols', () => {
    const env = tokenGitEnv({ dir: '/s', keyDir: '/s/key', keyFile: '/s/key/id', secrets: { privateKey: '', paths: [] }, env: { PATH: '/usr/bin', HOME: '/s/home' } }, 'https://github.com/acme/shop.git', 'ghs_secret');
    expect(env).toMatchObject({
      GIT_ALLOW_PROTOCOL: 'https',
      GIT_TERMINAL_PROMPT: '0',
      GIT_CONFIG_COUNT: '3',
      GIT_CONFIG_KEY_0: 'http.https://github.com/.extraHeader',
      GIT_CONFIG_VALUE_0: `Authorization: Basic ${Buffer.from('x-access-token:ghs_secret').toString('base64')}`,
      GIT_CONFIG_KEY_1: 'http.followRedirects',
      GIT_CONFIG_VALUE_1: 'false',
      GIT_CONFIG_KEY_2: 'credential.helper',
    });
    expect(env.GIT_SSH_COMMAND).toBeUndefined();
  });
});

/**
 * Commit statuses, the pure parts: each provider's request (URL, method, headers, JSON body)
 * as its documented status API takes it, the state each phase becomes, the context and
 * description a session posts, and the rules for repository paths, rate limits and GitLab's
 * "already in that state".
 */
import { finalPhase, statusContext, statusDescription, type StatusPhase } from '../../src/core/commitStatus';
import { emptyCounts } from '../../src/core/counts';
import {
  alreadyInState,
  bitbucketKey,
  providerState,
  rateLimitWaitMs,
  repoPathFromPullUrl,
  statusRepoProblem,
  statusRequest,
  type StatusRequest,
  type StatusUpdate,
} from '../../src/delivery/commitStatus';

const SHA = '0123456789abcdef0123456789abcdef01234567';
const TOKEN = 'ghp_s3cr3tT0kenValue';
const REPORT = 'https://ci.example.test/1/reports/12?token=abc';

const update = (over: Partial<StatusUpdate> = {}): StatusUpdate => ({
  phase: 'running',
  commitId: SHA,
  targetUrl: REPORT,
  description: '#12 running',
  context: 'sluice/default',
  ref: 'master',
  ...over,
});

function ok(r: StatusRequest | { error: string }): StatusRequest {
  if ('error' in r) throw new Error(r.error);
  return r;
}

describe('states', () => {
  it.each<[StatusPhase, string, string, string, string, string]>([
    ['running', 'pending', 'running', 'pending', 'INPROGRESS', 'INPROGRESS'],
    ['passed', 'success', 'success', 'success', 'SUCCESSFUL', 'SUCCESSFUL'],
    ['failed', 'failure', 'failed', 'failure', 'FAILED', 'FAILED'],
    ['error', 'error', 'failed', 'error', 'FAILED', 'FAILED'],
    ['stopped', 'error', 'canceled', 'error', 'STOPPED', 'CANCELLED'],
  ])('%s is GitHub %s, GitLab %s, Gitea %s, Bitbucket %s, Bitbucket Server %s', (phase, github, gitlab, gitea, bitbucket, bitbucketServer) => {
    expect(providerState('github', phase)).toBe(github);
    expect(providerState('gitlab', phase)).toBe(gitlab);
    expect(providerState('gitea', phase)).toBe(gitea);
    expect(providerState('bitbucket', phase)).toBe(bitbucket);
    expect(providerState('bitbucket-server', phase)).toBe(bitbucketServer);
  });

  it('a session posts an outcome for passed, failed, error and stopped; none when skipped or not ended', () => {
    expect(['passed', 'failed', 'error', 'stopped'].map((s) => finalPhase(s as never))).toEqual(['passed', 'failed', 'error', 'stopped']);
    expect(finalPhase('skipped')).toBeNull();
    expect(finalPhase('running')).toBeNull();
    expect(finalPhase('queued')).toBeNull();
  });
});

describe('context and description', () => {
  it('sluice/<profile>, and sluice for a plan parent', () => {
    expect(statusContext('default')).toBe('sluice/default');
    expect(statusContext('unit')).toBe('sluice/unit');
    expect(statusContext(null)).toBe('sluice');
  });

  it('says what happened, on one line of at most 140 characters', () => {
    const counts = { ...emptyCounts(), passed: 8, failed: 2 };
    const facts = { session: 12, counts, reason: null, stoppedBy: null };
    expect(statusDescription('running', facts)).toBe('#12 running');
    expect(statusDescription('passed', { ...facts, counts: { ...emptyCounts(), passed: 1 } })).toBe('#12 passed: 1 test file');
    expect(statusDescription('failed', facts)).toBe('#12 failed: 2 of 10 test files failed');
    expect(statusDescription('failed', { ...facts, counts: { ...counts, error: 1 } })).toBe('#12 failed: 2 of 11 test files failed, 1 erred');
    expect(statusDescription('stopped', { ...facts, stoppedBy: 'alice@acme.test' })).toBe('#12 stopped by alice@acme.test');
    expect(statusDescription('error', { ...facts, reason: 'sluice.yml: line 3:\n  unknown key "profilez"' })).toBe('#12 error: sluice.yml: line 3: unknown key "profilez"');
    const long = statusDescription('error', { ...facts, reason: 'x'.repeat(500) });
    expect(long).toHaveLength(140);
    expect(long.endsWith('…')).toBe(true);
  });
});

describe('GitHub', () => {
  it('POST /repos/{owner}/{repo}/statuses/{sha} with a Bearer token, the API version and state, target_url, description, context', () => {
    const r = ok(statusRequest({ provider: 'github', apiUrl: null, repo: 'acme/app', token: TOKEN }, update()));
    expect(r.method).toBe('POST');
    expect(r.url).toBe(`https://api.github.com/repos/acme/app/statuses/${SHA}`);
    expect(r.headers).toEqual({
      'content-type': 'application/json',
      'user-agent': 'Sluice-Status/1',
      accept: 'application/vnd.github+json',
      'x-github-api-version': '2022-11-28',
      authorization: `Bearer ${TOKEN}`,
    });
    expect(r.body).toEqual({ state: 'pending', target_url: REPORT, description: '#12 running', context: 'sluice/default' });
    expect(r.state).toBe('pending');
  });

  it('GitHub Enterprise: under the configured base URL, its path kept, trailing slashes dropped', () => {
    const r = ok(statusRequest({ provider: 'github', apiUrl: 'https://ghe.acme.test/api/v3/', repo: 'acme/app', token: TOKEN }, update({ phase: 'failed' })));
    expect(r.url).toBe(`https://ghe.acme.test/api/v3/repos/acme/app/statuses/${SHA}`);
    expect(r.body.state).toBe('failure');
  });

  it('the token is in the Authorization header only: not in the URL or body', () => {
    const r = ok(statusRequest({ provider: 'github', apiUrl: null, repo: 'acme/app', token: TOKEN }, update()));
    expect(r.url).not.toContain(TOKEN);
    expect(JSON.stringify(r.body)).not.toContain(TOKEN);
  });
});

describe('GitLab', () => {
  it('POST /projects/{url-encoded path}/statuses/{sha} with PRIVATE-TOKEN and state, name, target_url, description, ref', () => {
    const r = ok(statusRequest({ provider: 'gitlab', apiUrl: null, repo: 'acme/platform/app', token: TOKEN }, update({ phase: 'passed', description: '#12 passed: 3 test files' })));
    expect(r.url).toBe(`https://gitlab.com/api/v4/projects/acme%2Fplatform%2Fapp/statuses/${SHA}`);
    expect(r.headers['private-token']).toBe(TOKEN);
    expect(r.headers.authorization).toBeUndefined();
    expect(r.body).toEqual({ state: 'success', name: 'sluice/default', target_url: REPORT, description: '#12 passed: 3 test files', ref: 'master' });
  });

  it('a numeric project id; no ref for a pull request or tag build', () => {
    const r = ok(statusRequest({ provider: 'gitlab', apiUrl: 'https://gitlab.acme.test/api/v4', repo: '4711', token: TOKEN }, update({ ref: null, phase: 'stopped' })));
    expect(r.url).toBe(`https://gitlab.acme.test/api/v4/projects/4711/statuses/${SHA}`);
    expect(r.body).not.toHaveProperty('ref');
    expect(r.body.state).toBe('canceled');
  });
});

describe('Gitea and Forgejo', () => {
  it('POST {api}/repos/{owner}/{repo}/statuses/{sha} with "Authorization: token"; the base URL is required', () => {
    const r = ok(statusRequest({ provider: 'gitea', apiUrl: 'https://gitea.acme.test/api/v1', repo: 'acme/app', token: TOKEN }, update({ phase: 'error' })));
    expect(r.url).toBe(`https://gitea.acme.test/api/v1/repos/acme/app/statuses/${SHA}`);
    expect(r.headers.authorization).toBe(`token ${TOKEN}`);
    expect(r.body).toEqual({ state: 'error', target_url: REPORT, description: '#12 running', context: 'sluice/default' });
    expect(statusRequest({ provider: 'gitea', apiUrl: null, repo: 'acme/app', token: TOKEN }, update())).toEqual({ error: 'status_api_url is required for gitea' });
  });
});

describe('Bitbucket Cloud', () => {
  it('POST /repositories/{workspace}/{slug}/commit/{sha}/statuses/build with a Bearer token and key, state, name, url, description, refname', () => {
    const r = ok(statusRequest({ provider: 'bitbucket', apiUrl: null, repo: 'acme/app', token: TOKEN }, update({ phase: 'stopped' })));
    expect(r.url).toBe(`https://api.bitbucket.org/2.0/repositories/acme/app/commit/${SHA}/statuses/build`);
    expect(r.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(r.body).toEqual({ key: 'sluice/default', state: 'STOPPED', name: 'sluice/default', url: REPORT, description: '#12 running', refname: 'master' });
  });

  it('user:secret (an app password, or an API token with its e-mail) goes as Basic', () => {
    const r = ok(statusRequest({ provider: 'bitbucket', apiUrl: null, repo: 'acme/app', token: 'jdoe:app-pass' }, update()));
    expect(r.headers.authorization).toBe(`Basic ${Buffer.from('jdoe:app-pass').toString('base64')}`);
  });

  it('keys stay within 40 characters, and apart', () => {
    expect(bitbucketKey('sluice/unit')).toBe('sluice/unit');
    const a = bitbucketKey(`sluice/${'a'.repeat(60)}`);
    const b = bitbucketKey(`sluice/${'a'.repeat(59)}b`);
    expect(a).toHaveLength(40);
    expect(b).toHaveLength(40);
    expect(a).not.toBe(b);
  });
});

describe('Bitbucket Server and Data Center', () => {
  const BASE = 'https://bitbucket.acme.test';
  const target = { provider: 'bitbucket-server' as const, apiUrl: BASE, repo: 'PLAT/app', token: TOKEN };

  it('POST {base}/rest/api/latest/projects/{key}/repos/{slug}/commits/{sha}/builds with a Bearer token and key, state, name, url, description, ref', () => {
    const r = ok(statusRequest(target, update()));
    expect(r.method).toBe('POST');
    expect(r.url).toBe(`${BASE}/rest/api/latest/projects/PLAT/repos/app/commits/${SHA}/builds`);
    expect(r.headers).toEqual({
      'content-type': 'application/json',
      'user-agent': 'Sluice-Status/1',
      accept: 'application/json',
      authorization: `Bearer ${TOKEN}`,
    });
    expect(r.body).toEqual({ key: 'sluice/default', state: 'INPROGRESS', name: 'sluice/default', url: REPORT, description: '#12 running', ref: 'refs/heads/master' });
    expect(r.state).toBe('INPROGRESS');
  });

  it.each<[StatusPhase, string]>([
    ['passed', 'SUCCESSFUL'],
    ['failed', 'FAILED'],
    ['error', 'FAILED'],
    ['stopped', 'CANCELLED'],
  ])('%s: state %s in the body', (phase, state) => {
    const r = ok(statusRequest(target, update({ phase, description: `#12 ${phase}` })));
    expect(r.body).toEqual({ key: 'sluice/default', state, name: 'sluice/default', url: REPORT, description: `#12 ${phase}`, ref: 'refs/heads/master' });
  });

  it('no ref for a pull request or tag build; a context path kept; a personal repository', () => {
    const r = ok(statusRequest({ ...target, apiUrl: `${BASE}/bitbucket/`, repo: '~JDOE/app' }, update({ ref: null, context: 'sluice' })));
    expect(r.url).toBe(`${BASE}/bitbucket/rest/api/latest/projects/~JDOE/repos/app/commits/${SHA}/builds`);
    expect(r.body).toEqual({ key: 'sluice', state: 'INPROGRESS', name: 'sluice', url: REPORT, description: '#12 running' });
  });

  it('user:secret goes as Basic; the token is in the Authorization header only', () => {
    expect(ok(statusRequest({ ...target, token: 'jdoe:pat' }, update())).headers.authorization).toBe(`Basic ${Buffer.from('jdoe:pat').toString('base64')}`);
    const r = ok(statusRequest(target, update()));
    expect(r.url).not.toContain(TOKEN);
    expect(JSON.stringify(r.body)).not.toContain(TOKEN);
  });

  it('the base URL is required; the repository is PROJECT/slug', () => {
    expect(statusRequest({ ...target, apiUrl: null }, update())).toEqual({ error: 'status_api_url is required for bitbucket-server' });
    expect(statusRequest({ ...target, repo: 'PLAT/sub/app' }, update())).toEqual({ error: 'status_repo: expected owner/name (PROJECT/repository slug)' });
  });
});

describe('what makes no request', () => {
  it.each([
    ['a short commit id', { commitId: '0123456' }, /not a full commit id/],
    ['a commit id with other characters', { commitId: `${SHA.slice(0, 39)}g` }, /not a full commit id/],
  ])('%s', (_name, over, error) => {
    const r = statusRequest({ provider: 'github', apiUrl: null, repo: 'acme/app', token: TOKEN }, update(over));
    expect('error' in r && r.error).toMatch(error);
  });

  it('a token an HTTP header cannot carry, said without the token', () => {
    const r = statusRequest({ provider: 'github', apiUrl: null, repo: 'acme/app', token: 'two words' }, update());
    expect(r).toEqual({ error: 'the status token is not printable ASCII without spaces' });
  });

  it('a SHA-256 commit id is taken', () => {
    expect('error' in statusRequest({ provider: 'github', apiUrl: null, repo: 'acme/app', token: TOKEN }, update({ commitId: 'a'.repeat(64) }))).toBe(false);
  });
});

describe('repository paths', () => {
  it('owner/name for GitHub, Gitea and Bitbucket; a path or id for GitLab', () => {
    expect(statusRepoProblem('github', 'acme/app')).toBeNull();
    expect(statusRepoProblem('github', 'acme/app.js')).toBeNull();
    expect(statusRepoProblem('github', 'acme')).toMatch(/owner\/name/);
    expect(statusRepoProblem('github', 'acme/sub/app')).toMatch(/owner\/name/);
    expect(statusRepoProblem('gitea', 'acme/..')).toMatch(/owner\/name/);
    expect(statusRepoProblem('bitbucket', 'acme/app name')).toMatch(/workspace/);
    expect(statusRepoProblem('bitbucket-server', 'PLAT/app')).toBeNull();
    expect(statusRepoProblem('bitbucket-server', '~jdoe/app')).toBeNull();
    expect(statusRepoProblem('bitbucket-server', 'app')).toMatch(/PROJECT\/repository slug/);
    expect(statusRepoProblem('bitbucket-server', 'scm/plat/app')).toMatch(/PROJECT\/repository slug/);
    expect(statusRepoProblem('gitlab', 'group/sub/app')).toBeNull();
    expect(statusRepoProblem('gitlab', '4711')).toBeNull();
    expect(statusRepoProblem('gitlab', 'app')).toMatch(/GitLab project/);
  });

  it('the pull URL suggests one', () => {
    expect(repoPathFromPullUrl('github', 'git@github.com:acme/app.git')).toBe('acme/app');
    expect(repoPathFromPullUrl('github', 'ssh://git@github.com/acme/app.git')).toBe('acme/app');
    expect(repoPathFromPullUrl('gitlab', 'ssh://git@gitlab.acme.test:2222/group/sub/app.git')).toBe('group/sub/app');
    expect(repoPathFromPullUrl('github', 'ssh://git@github.com/group/sub/app.git')).toBeNull();
    expect(repoPathFromPullUrl('github', '/srv/git/app.git')).toBeNull();
    // Bitbucket Server: SSH on its own port, HTTP under /scm/ (after any context path); the key as spelled.
    expect(repoPathFromPullUrl('bitbucket-server', 'ssh://git@bitbucket.acme.test:7999/plat/app.git')).toBe('plat/app');
    expect(repoPathFromPullUrl('bitbucket-server', 'https://bitbucket.acme.test/scm/PLAT/app.git')).toBe('PLAT/app');
    expect(repoPathFromPullUrl('bitbucket-server', 'https://bitbucket.acme.test/bitbucket/scm/plat/app.git')).toBe('plat/app');
    expect(repoPathFromPullUrl('bitbucket-server', 'https://bitbucket.acme.test/scm/~jdoe/app.git')).toBe('~jdoe/app');
    expect(repoPathFromPullUrl('bitbucket-server', 'https://bitbucket.acme.test/bitbucket/other/plat/app.git')).toBeNull();
    expect(repoPathFromPullUrl('github', 'https://github.com/scm/acme/app.git')).toBeNull();
  });
});

describe('retry rules beyond send.ts', () => {
  it("GitHub's rate limits (403 or 429 with Retry-After, or a spent x-ratelimit-remaining) wait; other 403s do not", () => {
    const now = 1_700_000_000_000;
    expect(rateLimitWaitMs(403, { 'retry-after': '30' }, now)).toBe(30_000);
    expect(rateLimitWaitMs(403, { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(now / 1000 + 90) }, now)).toBe(90_000);
    expect(rateLimitWaitMs(429, { 'x-ratelimit-remaining': '0' }, now)).toBe(60_000);
    expect(rateLimitWaitMs(403, { 'x-ratelimit-remaining': '4999' }, now)).toBeUndefined();
    expect(rateLimitWaitMs(401, { 'retry-after': '30' }, now)).toBeUndefined();
  });

  it("GitLab's 'Cannot transition status' is a state already reached", () => {
    expect(alreadyInState('gitlab', 400, '{"message":"Cannot transition status via :run from :running"}')).toBe(true);
    expect(alreadyInState('gitlab', 400, '{"message":"state is invalid"}')).toBe(false);
    expect(alreadyInState('github', 400, 'Cannot transition status')).toBe(false);
  });
});

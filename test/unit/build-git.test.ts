import {
  classifyGitFailure,
  displayUrl,
  isSafeRefspec,
  isSafeRevision,
  isSshUrl,
  scrubSecrets,
  summarizeGitStderr,
} from '../../src/steps/checkout/git';
import { checkTestPattern } from '../../src/steps/tests/discover';

describe('isSshUrl', () => {
  it.each([
    'ssh://git@github.com/org/repo.git',
    'ssh://git@127.0.0.1:2222/srv/repo.git',
    'ssh://host/repo',
    'git+ssh://git@host/repo',
    'ssh://git@[::1]:22/repo',
    'git@github.com:org/repo.git',
    'host:repo',
    'git@[127.0.0.1:2222]:/srv/repo.git',
  ])('accepts %s', (url) => expect(isSshUrl(url)).toBe(true));

  it.each([
    'https://github.com/org/repo.git',
    'file:///srv/repo.git',
    '/srv/repo.git',
    './repo',
    'ext::sh -c touch% /tmp/pwned',
    'ssh://-oProxyCommand=touch/x',
    '-oProxyCommand=x:repo',
    'ssh://host',
    'git@host:',
    'git@host:repo with space',
    'git@host:repo\n',
    '',
  ])('rejects %j', (url) => expect(isSshUrl(url)).toBe(false));
});

describe('displayUrl', () => {
  it('blanks a password', () => {
    expect(displayUrl('ssh://git:hunter2@host/repo')).toBe('ssh://git:***@host/repo');
  });
  it('leaves other URLs alone', () => {
    expect(displayUrl('ssh://git@host:22/repo')).toBe('ssh://git@host:22/repo');
    expect(displayUrl('git@host:repo')).toBe('git@host:repo');
  });
});

describe('isSafeRevision / isSafeRefspec', () => {
  it.each(['master', 'feature/x', 'v1.0', 'refs/pull/12/head', 'a'.repeat(40), 'HEAD'])('accepts %s', (r) =>
    expect(isSafeRevision(r)).toBe(true),
  );
  it.each(['', '-x', '--upload-pack=evil', 'a..b', 'a^', 'a~1', 'a:b', 'a b', 'x*', 'a\\b', 'a@{1}', 'x/', 'x.lock', 'a\nb'])(
    'rejects %j',
    (r) => expect(isSafeRevision(r)).toBe(false),
  );
  it.each(['+refs/pull/*/head:refs/remotes/pr/*', 'refs/heads/x:refs/x', 'refs/changes/1/1/1'])('refspec %s ok', (s) =>
    expect(isSafeRefspec(s)).toBe(true),
  );
  it.each(['--upload-pack=x', 'a:b:c', '+-x:y', 'a**:b'])('refspec %j refused', (s) => expect(isSafeRefspec(s)).toBe(false));
});

describe('scrubSecrets', () => {
  const key = [
    '-----BEGIN OPENSSH PRIVATE KEY-----',
    'b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW',
    'QyNTUxOQAAACBvdlmpJ1xH2VQLm2tbjh7iS0K9EOUeRTjSg07ThkHdHAAAAJC0Ha6AtB2u',
    '-----END OPENSSH PRIVATE KEY-----',
  ].join('\n');

  it('removes the key file path, PEM blocks and key lines', () => {
    const text = [
      "Warning: Identity file /tmp/sluice-git-abc/key/id not accessible",
      key,
      'Load key "x": QyNTUxOQAAACBvdlmpJ1xH2VQLm2tbjh7iS0K9EOUeRTjSg07ThkHdHAAAAJC0Ha6AtB2u',
    ].join('\n');
    const out = scrubSecrets(text, { privateKey: key, paths: ['/tmp/sluice-git-abc/key/id', '/tmp/sluice-git-abc'] });
    expect(out).not.toContain('sluice-git-abc');
    expect(out).not.toContain('BEGIN');
    expect(out).not.toContain('QyNTUxOQ');
    expect(out).not.toContain('b3BlbnNzaC1rZXkt');
  });

  it('removes a PEM block cut off before its END line', () => {
    expect(scrubSecrets('x -----BEGIN OPENSSH PRIVATE KEY-----\nAAAA', {})).toBe('x [redacted]');
  });

  it('removes long base64-looking runs but keeps commit ids and ordinary paths', () => {
    const sha = '475ee9bc5f050e21c47c8c9c155bbccee69b2889';
    const text = `fatal: bad object ${sha} in /srv/repositories/organisation/project/repository.git: Zm9vYmFyYmF6cXV4cXV1eDEyMzQ1Njc4OTBBQkNERUZH`;
    expect(scrubSecrets(text, {})).toBe(
      `fatal: bad object ${sha} in /srv/repositories/organisation/project/repository.git: [redacted]`,
    );
  });
});

describe('summarizeGitStderr', () => {
  it('keeps what matters and drops the boilerplate', () => {
    const stderr =
      'git@127.0.0.1: Permission denied (publickey).\r\nfatal: Could not read from remote repository.\n\nPlease make sure you have the correct access rights\nand the repository exists.\n';
    expect(summarizeGitStderr(stderr)).toBe('git@127.0.0.1: Permission denied (publickey).');
  });
  it('keeps the boilerplate when it is all there is', () => {
    expect(summarizeGitStderr('fatal: Could not read from remote repository.\n')).toBe('Could not read from remote repository.');
  });
});

describe('classifyGitFailure', () => {
  it.each([
    ['git@h: Permission denied (publickey).', 'denied'],
    ['Host key verification failed.', 'denied'],
    ["fatal: '/x' does not appear to be a git repository", 'not-found'],
    ['ERROR: Repository not found.', 'not-found'],
    ['ssh: connect to host h port 22: Connection refused', 'unreachable'],
    ['ssh: Could not resolve hostname nope: Name or service not known', 'unreachable'],
    ['ssh: connect to host h port 22: Connection timed out', 'unreachable'],
    ["fatal: couldn't find remote ref refs/heads/nope", 'missing-ref'],
    ['fatal: something else', 'failed'],
  ])('%s → %s', (stderr, reason) => expect(classifyGitFailure(stderr)).toBe(reason));
});

describe('checkTestPattern', () => {
  it.each(['tests/**/*.sh', '*.test.js', 'a/{b,c}/*.sh', 'test{1..9}.sh', '.ci/*.sh', 'x..y/*.sh'])('accepts %s', (p) =>
    expect(checkTestPattern(p)).toBeNull(),
  );
  it.each(['', '  ', '/etc/*', '../*', 'tests/../../*', '..', 'a/..', '{a,..}/x', '{..,a}/x', 'a\\..\\b', '~/x', 'C:/x'])(
    'rejects %j',
    (p) => expect(checkTestPattern(p)).toEqual(expect.any(String)),
  );
});

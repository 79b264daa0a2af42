import { utils } from 'ssh2';
import { generateRepoKeyPair, publicKeyFingerprint } from '../../src/ssh/keys';
import { parseGitCommand } from '../support/sshGitServer';

describe('generateRepoKeyPair', () => {
  it('makes an ed25519 pair in OpenSSH formats that belong together', () => {
    const pair = generateRepoKeyPair('sluice:acme/widgets');
    expect(pair.publicKey).toMatch(/^ssh-ed25519 AAAA[A-Za-z0-9+/]+=* sluice:acme\/widgets$/);
    expect(pair.privateKey).toMatch(/^-----BEGIN OPENSSH PRIVATE KEY-----\n[\s\S]+\n-----END OPENSSH PRIVATE KEY-----\n?$/);
    const pub = utils.parseKey(pair.publicKey);
    const priv = utils.parseKey(pair.privateKey);
    if (pub instanceof Error || priv instanceof Error) throw new Error('unparseable key');
    const data = Buffer.from('challenge');
    expect(pub.verify(data, priv.sign(data))).toBe(true);
    expect(pub.getPublicSSH().equals(priv.getPublicSSH())).toBe(true);
  });

  it('never hands out a key SSH cannot read (ssh2 mangles about 1 in 128 ed25519 keys)', () => {
    for (let i = 0; i < 1500; i++) {
      const pair = generateRepoKeyPair('sluice:acme/widgets');
      const pub = utils.parseKey(pair.publicKey);
      if (pub instanceof Error) throw new Error(`unparseable public key ${pair.publicKey}: ${pub.message}`);
      // string "ssh-ed25519" (4 + 11 bytes) then string key (4 + 32 bytes)
      expect(pub.getPublicSSH().length).toBe(51);
    }
  });

  it('makes a different pair each time', () => {
    expect(generateRepoKeyPair('a').privateKey).not.toBe(generateRepoKeyPair('a').privateKey);
  });

  it('keeps the public key on one line whatever the comment', () => {
    const pair = generateRepoKeyPair('evil\nssh-ed25519 AAAA other');
    expect(pair.publicKey.split('\n')).toHaveLength(1);
  });
});

describe('publicKeyFingerprint', () => {
  it('is SHA256:<unpadded base64>', () => {
    expect(publicKeyFingerprint(generateRepoKeyPair('x').publicKey)).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
  });
  it('refuses garbage', () => {
    expect(() => publicKeyFingerprint('not a key')).toThrow(/not an SSH public key/);
  });
});

describe('parseGitCommand (test SSH server)', () => {
  it.each([
    ["git-upload-pack '/srv/r.git'", { service: 'git-upload-pack', path: '/srv/r.git' }],
    ["git-receive-pack '/srv/r.git'", { service: 'git-receive-pack', path: '/srv/r.git' }],
    ["git-upload-pack '/srv/it'\\''s.git'", { service: 'git-upload-pack', path: "/srv/it's.git" }],
  ])('%s', (command, expected) => expect(parseGitCommand(command)).toEqual(expected));

  it.each([
    'ls /',
    "git-upload-pack 'relative.git'",
    "git-upload-pack '/r.git'; rm -rf /",
    "git-upload-archive '/r.git'",
    "git upload-pack '/r.git'",
    "git-upload-pack '/r.git' '/other'",
  ])('refuses %j', (command) => expect(parseGitCommand(command)).toBeNull());
});

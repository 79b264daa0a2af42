/**
 * `image:` in sluice.yml and on a suite: where it may be said (top level, a profile), which one
 * a build runs in (a profile's own wins, sluice.yml's top level over the suite's), and how a bad
 * reference is told, with its line.
 */
import { imageOf, resolveBuildSetup } from '../../src/core/buildSetup';
import { resolveProfiles, type Profile } from '../../src/core/profiles';
import { parseSluiceYml } from '../../src/core/sluiceYml';

const ok = (text: string) => {
  const r = parseSluiceYml(text);
  if (!r.ok) throw new Error(`expected ok, got: ${r.error}`);
  return r.config;
};
const fail = (text: string) => {
  const r = parseSluiceYml(text);
  if (r.ok) throw new Error(`expected an error, got: ${JSON.stringify(r.config)}`);
  return r.error;
};

const suiteDefault: Profile = { name: 'default', test_pattern: 'test/*.sh' };

/** The image the build of `profileName` runs in, from the suite's settings and the file. */
function imageFor(file: string, profileName: string | null, suite: { image?: string | null; profiles?: Profile[] } = {}) {
  const config = ok(file);
  const resolved = resolveProfiles({ suiteDefault, suiteProfiles: suite.profiles ?? [], fileConfig: config, requestedProfile: profileName });
  if ('error' in resolved) throw new Error(resolved.error);
  const setup = resolveBuildSetup(suite.image !== undefined ? { image: suite.image } : {}, config.setup);
  return imageOf(resolved.profiles[0]!, setup);
}

describe('image: in sluice.yml', () => {
  it('at the top level, and per profile', () => {
    const config = ok(`
image: node:22
profiles:
  legacy:
    test_pattern: "test/*.sh"
    image: registry.example.com:5000/team/node:20
  bare:
    test_pattern: "test/*.sh"
    image: null
`);
    expect(config.setup).toEqual({ image: 'node:22' });
    expect(config.profiles.legacy!.image).toBe('registry.example.com:5000/team/node:20');
    expect(config.profiles.bare!.image).toBeNull();
  });

  it('a profile’s own wins; null runs it on the runner’s own toolchain; else the top level', () => {
    const file = `
image: node:22
profiles:
  legacy: { test_pattern: "t/*.sh", image: "node:20" }
  bare: { test_pattern: "t/*.sh", image: null }
  plain: { test_pattern: "t/*.sh" }
`;
    expect(imageFor(file, 'legacy')).toBe('node:20');
    expect(imageFor(file, 'bare')).toBeNull();
    expect(imageFor(file, 'plain')).toBe('node:22');
    expect(imageFor(file, null)).toBe('node:22');
  });

  it('the file’s top level wins over the suite’s image; null in the file turns the suite’s off', () => {
    expect(imageFor('image: node:22', null, { image: 'node:18' })).toBe('node:22');
    expect(imageFor('image: null', null, { image: 'node:18' })).toBeNull();
    expect(imageFor('profiles: {}', null, { image: 'node:18' })).toBe('node:18');
    expect(imageFor('profiles: {}', null)).toBeNull();
  });

  it('a suite profile’s image wins over the file’s top level unless the file says otherwise for that profile', () => {
    const profiles = [{ name: 'unit', test_pattern: 't/*.sh', image: 'ghcr.io/acme/ci:3' }];
    expect(imageFor('image: node:22', 'unit', { profiles })).toBe('ghcr.io/acme/ci:3');
    expect(imageFor('image: node:22\nprofiles:\n  unit: { image: "node:23" }', 'unit', { profiles })).toBe('node:23');
  });

  it('a bad reference is refused with its line and why', () => {
    expect(fail('workers_typo: 1\nimage: "Node:22"')).toContain('sluice.yml line 2: image has a name component "Node"');
    expect(fail('profiles:\n  unit:\n    test_pattern: "t/*.sh"\n    image: 22')).toContain('line 4: profiles.unit.image must be an image reference');
    expect(fail('image: https://ghcr.io/acme/ci')).toContain('not a URL');
  });
});

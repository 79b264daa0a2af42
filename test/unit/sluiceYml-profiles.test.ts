/**
 * resolveProfiles: which profiles a build runs. The default profile unless a plan is configured
 * or the trigger gives profile_name (which forces that one); sluice.yml wins over the suite.
 */
import { resolveProfiles, type Profile, type ResolveInput, type ResolvedProfile, type ResolveResult } from '../../src/core/profiles';
import { parseSluiceYml } from '../../src/core/sluiceYml';

const suiteDefault: Profile = { name: 'default', test_pattern: 'test/*_test.sh', test_command: 'bash', workers: 2 };
const suiteProfiles: Profile[] = [
  { name: 'unit', test_pattern: 'test/unit/*.sh' },
  { name: 'integration', test_pattern: 'test/integration/*.sh', workers: 4, env: { DB: 'pg' }, junit_pattern: 'out/*.xml' },
];

const full = (p: Partial<ResolvedProfile> & { name: string; test_pattern: string }): ResolvedProfile => ({
  test_command: null,
  env: {},
  workers: 1,
  junit_pattern: null,
  retry_failed: 0,
  ...p,
});
const DEFAULT = full({ name: 'default', test_pattern: 'test/*_test.sh', test_command: 'bash', workers: 2 });
const UNIT = full({ name: 'unit', test_pattern: 'test/unit/*.sh' });
const INTEGRATION = full({ name: 'integration', test_pattern: 'test/integration/*.sh', workers: 4, env: { DB: 'pg' }, junit_pattern: 'out/*.xml' });

function resolve(input: Partial<ResolveInput>): ResolveResult {
  return resolveProfiles({ suiteDefault, ...input });
}
function file(text: string) {
  const r = parseSluiceYml(text);
  if (!r.ok) throw new Error(r.error);
  return r.config;
}
const names = (r: ResolveResult) => ('error' in r ? r : { names: r.profiles.map((p) => p.name), isPlan: r.isPlan });

describe('without sluice.yml', () => {
  it('runs the default profile: the suite settings', () => {
    expect(resolve({})).toEqual({ profiles: [DEFAULT], isPlan: false });
    expect(resolve({ suiteProfiles, fileConfig: null, requestedProfile: null })).toEqual({ profiles: [DEFAULT], isPlan: false });
  });

  it("runs the suite's plan, in its order, when it has one", () => {
    expect(resolve({ suiteProfiles, suitePlan: ['integration', 'unit'] })).toEqual({ profiles: [INTEGRATION, UNIT], isPlan: true });
    expect(resolve({ suiteProfiles, suitePlan: ['default', 'unit'] })).toEqual({ profiles: [DEFAULT, UNIT], isPlan: true });
  });

  it('a plan of one profile is still a plan', () => {
    expect(names(resolve({ suiteProfiles, suitePlan: ['unit'] }))).toEqual({ names: ['unit'], isPlan: true });
  });

  it('an empty plan is no plan', () => {
    expect(resolve({ suiteProfiles, suitePlan: [] })).toEqual({ profiles: [DEFAULT], isPlan: false });
  });

  it('profile_name forces that single profile, over the default and over a plan', () => {
    expect(resolve({ suiteProfiles, requestedProfile: 'unit' })).toEqual({ profiles: [UNIT], isPlan: false });
    expect(resolve({ suiteProfiles, suitePlan: ['unit', 'integration'], requestedProfile: 'integration' })).toEqual({
      profiles: [INTEGRATION],
      isPlan: false,
    });
    expect(resolve({ suiteProfiles, suitePlan: ['unit'], requestedProfile: 'default' })).toEqual({ profiles: [DEFAULT], isPlan: false });
  });

  it('an empty profile_name is not given', () => {
    expect(resolve({ suiteProfiles, requestedProfile: '' })).toEqual({ profiles: [DEFAULT], isPlan: false });
  });

  it('an unknown profile_name is an error naming the known ones', () => {
    expect(resolve({ suiteProfiles, requestedProfile: 'nightly' })).toEqual({
      error: 'unknown profile "nightly" (profiles: "default", "unit", "integration")',
    });
    // Profile names are case-sensitive.
    expect(resolve({ suiteProfiles, requestedProfile: 'Unit' })).toHaveProperty('error');
  });

  it("a suite plan naming a profile that doesn't exist, or one twice", () => {
    expect(resolve({ suiteProfiles, suitePlan: ['unit', 'lint'] })).toEqual({
      error: `the suite's plan names profile "lint", which is not defined (profiles: "default", "unit", "integration")`,
    });
    expect(resolve({ suiteProfiles, suitePlan: ['unit', 'unit'] })).toEqual({ error: "the suite's plan lists a profile more than once" });
  });

  it('a suite defining a profile twice', () => {
    expect(resolve({ suiteProfiles: [...suiteProfiles, { name: 'unit', test_pattern: 'x' }] })).toEqual({
      error: 'the suite defines profile "unit" more than once',
    });
    expect(resolve({ suiteProfiles: [{ name: 'default', test_pattern: 'x' }] })).toHaveProperty('error');
  });

  it('returns copies: changing a result changes no input', () => {
    const r = resolve({ suiteProfiles, requestedProfile: 'integration' });
    if ('error' in r) throw new Error(r.error);
    r.profiles[0]!.env.DB = 'changed';
    expect(suiteProfiles[1]!.env).toEqual({ DB: 'pg' });
  });
});

describe('sluice.yml wins over the suite', () => {
  it('its plan replaces the suite plan', () => {
    const fileConfig = file('plan: [unit]\n');
    expect(names(resolve({ suiteProfiles, suitePlan: ['integration'], fileConfig }))).toEqual({ names: ['unit'], isPlan: true });
  });

  it('an empty plan in the file turns the suite plan off', () => {
    expect(resolve({ suiteProfiles, suitePlan: ['integration'], fileConfig: file('plan: []\n') })).toEqual({ profiles: [DEFAULT], isPlan: false });
  });

  it('no plan in the file leaves the suite plan in force', () => {
    const fileConfig = file('profiles:\n  unit:\n    workers: 3\n');
    expect(resolve({ suiteProfiles, suitePlan: ['unit'], fileConfig })).toEqual({ profiles: [{ ...UNIT, workers: 3 }], isPlan: true });
  });

  it('its profiles replace the suite profile of the same name key by key; the rest stays', () => {
    const fileConfig = file(`
profiles:
  default:
    test_pattern: "spec/*.sh"
  integration:
    env: { DB: sqlite, EXTRA: "1" }
    junit_pattern: null
`);
    expect(resolve({ suiteProfiles, fileConfig, requestedProfile: 'default' })).toEqual({
      profiles: [{ ...DEFAULT, test_pattern: 'spec/*.sh' }],
      isPlan: false,
    });
    expect(resolve({ suiteProfiles, fileConfig, requestedProfile: 'integration' })).toEqual({
      profiles: [{ ...INTEGRATION, env: { DB: 'sqlite', EXTRA: '1' }, junit_pattern: null }],
      isPlan: false,
    });
  });

  it('test_command: null in the file means: run each file itself', () => {
    const fileConfig = file('profiles:\n  default:\n    test_command: null\n');
    expect(resolve({ fileConfig })).toEqual({ profiles: [{ ...DEFAULT, test_command: null }], isPlan: false });
  });

  it('new profiles of its own, and default_profile picks the default', () => {
    const fileConfig = file(`
default_profile: lint
profiles:
  lint:
    test_pattern: "lint/*.sh"
    test_command: sh
`);
    const LINT = full({ name: 'lint', test_pattern: 'lint/*.sh', test_command: 'sh' });
    expect(resolve({ suiteProfiles, fileConfig })).toEqual({ profiles: [LINT], isPlan: false });
    // ... and profile_name still forces another.
    expect(resolve({ suiteProfiles, fileConfig, requestedProfile: 'default' })).toEqual({ profiles: [DEFAULT], isPlan: false });
    // ... and a plan still wins over the default.
    expect(names(resolve({ suiteProfiles, suitePlan: ['unit'], fileConfig }))).toEqual({ names: ['unit'], isPlan: true });
  });

  it('default_profile may name a suite profile', () => {
    expect(resolve({ suiteProfiles, fileConfig: file('default_profile: unit\n') })).toEqual({ profiles: [UNIT], isPlan: false });
  });

  it('its plan may name suite profiles and its own', () => {
    const fileConfig = file('plan: [lint, integration, default]\nprofiles:\n  lint: {test_pattern: "l/*.sh"}\n');
    expect(names(resolve({ suiteProfiles, fileConfig }))).toEqual({ names: ['lint', 'integration', 'default'], isPlan: true });
  });

  it('profile_name may name a profile only the file defines', () => {
    const fileConfig = file('profiles:\n  lint: {test_pattern: "l/*.sh"}\n');
    expect(names(resolve({ fileConfig, requestedProfile: 'lint' }))).toEqual({ names: ['lint'], isPlan: false });
    expect(resolve({ fileConfig, requestedProfile: 'nope' })).toEqual({ error: 'unknown profile "nope" (profiles: "default", "lint")' });
  });

  it('an empty file changes nothing', () => {
    expect(resolve({ suiteProfiles, suitePlan: ['unit'], fileConfig: file('') })).toEqual(resolve({ suiteProfiles, suitePlan: ['unit'] }));
  });
});

describe('affected: selection of the test files a change can affect', () => {
  it('is off unless a profile asks; `true` takes the defaults, a mapping its own; sluice.yml can turn it off', () => {
    expect(resolve({})).toEqual({ profiles: [DEFAULT], isPlan: false });
    const on = resolve({ fileConfig: file('profiles:\n  default:\n    affected: true\n') });
    expect(on).toEqual({ profiles: [{ ...DEFAULT, affected: { map_every: 10, always_full: [] } }], isPlan: false });
    const tuned = resolve({ fileConfig: file('profiles:\n  default:\n    affected:\n      map_every: 5\n      always_full: [jest.config.js, "test/support/**"]\n') });
    expect(tuned).toEqual({ profiles: [{ ...DEFAULT, affected: { map_every: 5, always_full: ['jest.config.js', 'test/support/**'] } }], isPlan: false });
    const suiteOn: Profile[] = [{ name: 'unit', test_pattern: 'test/unit/*.sh', affected: true }];
    expect(resolve({ suiteProfiles: suiteOn, fileConfig: file('profiles:\n  unit:\n    affected: false\n'), requestedProfile: 'unit' })).toEqual({ profiles: [UNIT], isPlan: false });
  });
});

describe('sluice.yml mistakes show on every build', () => {
  it('a new profile without test_pattern', () => {
    const fileConfig = file('profiles:\n  lint:\n    workers: 2\n');
    const error = { error: 'profile "lint" has no test_pattern (sluice.yml must give one for a profile the suite does not define)' };
    expect(resolve({ fileConfig })).toEqual(error);
    expect(resolve({ fileConfig, requestedProfile: 'default' })).toEqual(error);
  });

  it('a plan naming an unknown profile, even when profile_name is given', () => {
    const fileConfig = file('plan: [unit, ghost]\n');
    const error = { error: 'the plan in sluice.yml names profile "ghost", which is not defined (profiles: "default", "unit", "integration")' };
    expect(resolve({ suiteProfiles, fileConfig })).toEqual(error);
    expect(resolve({ suiteProfiles, fileConfig, requestedProfile: 'unit' })).toEqual(error);
  });

  it('default_profile naming an unknown profile', () => {
    expect(resolve({ fileConfig: file('default_profile: ghost\n') })).toEqual({
      error: 'default_profile names profile "ghost", which is not defined (profiles: "default")',
    });
  });

  it('a profile the file names without settings must exist in the suite', () => {
    expect(resolve({ suiteProfiles, fileConfig: file('profiles:\n  unit:\n') })).toEqual({ profiles: [DEFAULT], isPlan: false });
    expect(resolve({ fileConfig: file('profiles:\n  unit:\n') })).toHaveProperty('error', expect.stringContaining('profile "unit" has no test_pattern'));
  });
});

describe('limits', () => {
  it('at most 32 profiles in a suite plan', () => {
    const many = Array.from({ length: 33 }, (_, i) => ({ name: `p${i}`, test_pattern: 'x' }));
    expect(resolve({ suiteProfiles: many, suitePlan: many.map((p) => p.name) })).toEqual({ error: "the suite's plan lists more than 32 profiles" });
    expect(names(resolve({ suiteProfiles: many, suitePlan: many.slice(0, 32).map((p) => p.name) }))).toMatchObject({ isPlan: true });
  });
});

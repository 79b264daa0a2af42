/**
 * parseSluiceYml: what a repository's sluice.yml may say, and how clearly it is told when it
 * says something wrong (with the line).
 */
import { parseSluiceYml, type ParseResult } from '../../src/core/sluiceYml';

const ok = (text: string) => {
  const r = parseSluiceYml(text);
  if (!r.ok) throw new Error(`expected ok, got: ${r.error}`);
  return r.config;
};
const fail = (text: string): string => {
  const r: ParseResult = parseSluiceYml(text);
  if (r.ok) throw new Error(`expected an error, got: ${JSON.stringify(r.config)}`);
  return r.error;
};

describe('parseSluiceYml: accepted', () => {
  it('the full example of docs/sluice-yml.md', () => {
    const config = ok(`
# Sluice settings of this repository
default_profile: unit
plan: [unit, integration]
profiles:
  unit:
    test_pattern: "test/unit/**/*_test.sh"
    test_command: bash -e
    env:
      LOG_LEVEL: debug
      RETRIES: 3
      STRICT: true
    workers: 4
    junit_pattern: "reports/unit/*.xml"
  integration:
    test_pattern: "test/integration/*_test.sh"
`);
    expect(config).toEqual({
      default_profile: 'unit',
      plan: ['unit', 'integration'],
      profiles: {
        unit: {
          test_pattern: 'test/unit/**/*_test.sh',
          test_command: 'bash -e',
          env: { LOG_LEVEL: 'debug', RETRIES: '3', STRICT: 'true' },
          workers: 4,
          junit_pattern: 'reports/unit/*.xml',
        },
        integration: { test_pattern: 'test/integration/*_test.sh' },
      },
    });
  });

  it('an empty file, or one with only comments, configures nothing', () => {
    expect(ok('')).toEqual({ profiles: {} });
    expect(ok('# nothing yet\n')).toEqual({ profiles: {} });
    expect(ok('---\n')).toEqual({ profiles: {} });
  });

  it('a profile without settings (it takes the suite profile of that name), and null to clear a setting', () => {
    expect(ok('profiles:\n  default:\n  lint:\n    test_pattern: lint.sh\n    test_command: null\n    junit_pattern: null\n')).toEqual({
      profiles: { default: {}, lint: { test_pattern: 'lint.sh', test_command: null, junit_pattern: null } },
    });
  });

  it('an empty plan (turns a suite plan off), and a plan alone', () => {
    expect(ok('plan: []\n')).toEqual({ profiles: {}, plan: [] });
    expect(ok('plan:\n  - a\n  - b.c_d-1\n')).toEqual({ profiles: {}, plan: ['a', 'b.c_d-1'] });
  });

  it('YAML anchors and merge keys, to share settings between profiles', () => {
    const config = ok(`
profiles:
  unit: &base
    test_pattern: "t/*.sh"
    env: { A: "1" }
  slow:
    <<: *base
    workers: 2
`);
    expect(config.profiles.slow).toEqual({ test_pattern: 't/*.sh', env: { A: '1' }, workers: 2 });
  });

  it('trims patterns and commands, and keeps numbers in env as text', () => {
    expect(ok('profiles:\n  a:\n    test_pattern: "  t/*.sh "\n    test_command: " node "\n    env: {X: 1.50, Y: 0x1F, Z: false}\n')).toEqual({
      profiles: { a: { test_pattern: 't/*.sh', test_command: 'node', env: { X: '1.5', Y: '31', Z: 'false' } } },
    });
  });

  it('a byte order mark is fine', () => {
    expect(ok('\ufeffplan: [a]\n')).toEqual({ profiles: {}, plan: ['a'] });
  });
});

describe('parseSluiceYml: refused, with the line', () => {
  it('broken YAML', () => {
    expect(fail('profiles:\n  a: [1, 2\n')).toMatch(/^sluice\.yml line \d+: .*Flow sequence/);
    expect(fail('profiles:\n  a:\n    test_pattern: x\n  a:\n    test_pattern: y\n')).toBe('sluice.yml line 4: Map keys must be unique');
    expect(fail('plan: [a]\n\tworkers: 3\n')).toMatch(/^sluice\.yml line 2: /);
  });

  it('several documents', () => {
    expect(fail('plan: [a]\n---\nplan: [b]\n')).toMatch(/^sluice\.yml line 2: Source contains multiple documents/);
  });

  it('not a mapping at the top', () => {
    expect(fail('- a\n- b\n')).toBe('sluice.yml line 1: the file must be a mapping with the keys profiles, plan, default_profile, image, hooks, cache, services and artifacts');
    expect(fail('just text\n')).toMatch(/^sluice\.yml line 1: the file must be a mapping/);
  });

  it('unknown keys, at the top and in a profile (typos do not pass silently)', () => {
    expect(fail('plan: [a]\nprofile: {}\n')).toBe('sluice.yml line 2: unknown key "profile"');
    expect(fail('profiles:\n  unit:\n    test_pattern: x\n    test_patern: y\n')).toBe(
      'sluice.yml line 4: profiles.unit: unknown key "test_patern"',
    );
  });

  it('wrong types', () => {
    expect(fail('profiles: [a]\n')).toBe('sluice.yml line 1: profiles must be a mapping of profile names to settings');
    expect(fail('profiles:\n  a: 3\n')).toMatch(/^sluice\.yml line 2: profiles\.a must be a mapping of profile settings/);
    expect(fail('plan: a\n')).toBe('sluice.yml line 1: plan must be a list of profile names');
    expect(fail('profiles:\n  a:\n    test_pattern: 3\n')).toBe('sluice.yml line 3: profiles.a.test_pattern must be a string (a glob)');
    expect(fail('profiles:\n  a:\n    env: [A]\n')).toBe('sluice.yml line 3: profiles.a.env must be a mapping of variable names to values');
    expect(fail('profiles:\n  a:\n    env:\n      A: {b: 1}\n')).toBe('sluice.yml line 4: profiles.a.env.A must be a string, a number or true/false');
    expect(fail('profiles:\n  a:\n    env:\n      A:\n')).toBe('sluice.yml line 4: profiles.a.env.A must be a string, a number or true/false');
  });

  it('workers out of range or not whole', () => {
    expect(fail('profiles:\n  a:\n    workers: 0\n')).toBe('sluice.yml line 3: profiles.a.workers must be from 1 to 64');
    expect(fail('profiles:\n  a:\n    workers: 65\n')).toBe('sluice.yml line 3: profiles.a.workers must be from 1 to 64');
    expect(fail('profiles:\n  a:\n    workers: 1.5\n')).toBe('sluice.yml line 3: profiles.a.workers must be a whole number from 1 to 64');
    expect(fail('profiles:\n  a:\n    workers: "4"\n')).toBe('sluice.yml line 3: profiles.a.workers must be a number from 1 to 64');
  });

  it('affected: true, false or its settings, each checked', () => {
    expect(fail('profiles:\n  a:\n    affected: yes please\n')).toBe('sluice.yml line 3: profiles.a.affected must be true, false or a mapping of map_every and always_full');
    expect(fail('profiles:\n  a:\n    affected:\n      map_every: 0\n')).toBe('sluice.yml line 4: profiles.a.affected.map_every must be from 1 to 1000');
    expect(fail('profiles:\n  a:\n    affected:\n      always_full: jest.config.js\n')).toBe('sluice.yml line 4: profiles.a.affected.always_full must be a list of globs');
    expect(fail('profiles:\n  a:\n    affected:\n      always_full: ["../x"]\n')).toBe("sluice.yml line 4: profiles.a.affected.always_full.0 must not contain '..'");
    expect(fail('profiles:\n  a:\n    affected:\n      map_evry: 3\n')).toMatch(/^sluice\.yml line 4: .*unknown key "map_evry"/);
  });

  it('patterns that leave the repository, or are empty', () => {
    expect(fail('profiles:\n  a:\n    test_pattern: /etc/*\n')).toBe('sluice.yml line 3: profiles.a.test_pattern must be relative to the repository root');
    expect(fail('profiles:\n  a:\n    test_pattern: ~/x\n')).toMatch(/must be relative to the repository root$/);
    expect(fail('profiles:\n  a:\n    test_pattern: "t/../../x"\n')).toBe("sluice.yml line 3: profiles.a.test_pattern must not contain '..'");
    expect(fail('profiles:\n  a:\n    junit_pattern: "{r,..}/*.xml"\n')).toBe("sluice.yml line 3: profiles.a.junit_pattern must not contain '..'");
    expect(fail('profiles:\n  a:\n    test_pattern: "  "\n')).toBe('sluice.yml line 3: profiles.a.test_pattern must not be empty');
    expect(fail('profiles:\n  a:\n    test_command: ""\n')).toBe('sluice.yml line 3: profiles.a.test_command must not be empty (null: run each file itself)');
    expect(fail('profiles:\n  a:\n    test_command: "a\\nb"\n')).toBe('sluice.yml line 3: profiles.a.test_command must not contain control characters');
  });

  it('bad profile and variable names, at the key', () => {
    expect(fail('profiles:\n  "unit tests":\n    test_pattern: x\n')).toMatch(/^sluice\.yml line 2: profiles: "unit tests" must be a profile name/);
    expect(fail('profiles:\n  -x: {}\n')).toMatch(/^sluice\.yml line 2: profiles: "-x" must be a profile name/);
    expect(fail('profiles:\n  a:\n    env:\n      OK: 1\n      1BAD: 2\n')).toBe(
      'sluice.yml line 5: profiles.a.env: "1BAD" is not an environment variable name (letters, digits and "_", not starting with a digit)',
    );
    expect(fail('plan: [a, "b c"]\n')).toMatch(/^sluice\.yml line 1: plan\.1 must be a profile name/);
    expect(fail('default_profile: ""\n')).toMatch(/^sluice\.yml line 1: default_profile must be a profile name/);
  });

  it('a plan that lists a profile twice, or too many', () => {
    expect(fail('plan:\n  - a\n  - b\n  - a\n')).toBe('sluice.yml line 4: plan.2 lists "a" more than once');
    const many = Array.from({ length: 33 }, (_, i) => `p${i}`).join(', ');
    expect(fail(`plan: [${many}]\n`)).toBe('sluice.yml line 1: plan must list at most 32 profiles');
  });

  it('__proto__ anywhere', () => {
    expect(fail('profiles:\n  a:\n    env:\n      __proto__: {x: 1}\n')).toBe('sluice.yml line 4: profiles.a.env: the key "__proto__" is not allowed');
    expect(fail('__proto__: {plan: [x]}\n')).toBe('sluice.yml line 1: the key "__proto__" is not allowed');
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });

  it('an alias bomb', () => {
    const bomb = [
      'a: &a ["x","x","x","x","x","x","x","x","x","x"]',
      'b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]',
      'c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]',
      'd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]',
      'e: [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]',
    ].join('\n');
    expect(fail(bomb)).toMatch(/^sluice\.yml: .*alias/i);
  });

  it('lists several problems at once, at most five', () => {
    const error = fail('profiles:\n  a:\n    workers: 0\n  b:\n    workers: 99\nplan: x\nextra: 1\n');
    // In the order of the file.
    expect(error.split('; ')).toEqual([
      'sluice.yml line 3: profiles.a.workers must be from 1 to 64',
      'sluice.yml line 5: profiles.b.workers must be from 1 to 64',
      'sluice.yml line 6: plan must be a list of profile names',
      'sluice.yml line 7: unknown key "extra"',
    ]);
    const seven = fail(Array.from({ length: 7 }, (_, i) => `k${i}: 1`).join('\n'));
    expect(seven.split('; ')).toEqual([1, 2, 3, 4, 5].map((line) => `sluice.yml line ${line}: unknown key "k${line - 1}"`));
  });
});

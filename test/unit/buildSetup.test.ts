/**
 * A build's setup (issue 21): what sluice.yml's `hooks`, `cache`, `services` and `artifacts` may
 * say, how they combine with a suite's, and whose cache entries a build may read and write.
 */
import { cacheScopes, resolveBuildSetup } from '../../src/core/buildSetup';
import { parseSluiceYml } from '../../src/core/sluiceYml';

const ok = (text: string) => {
  const r = parseSluiceYml(text);
  if (!r.ok) throw new Error(`expected ok, got: ${r.error}`);
  return r.config;
};
const fail = (text: string): string => {
  const r = parseSluiceYml(text);
  if (r.ok) throw new Error(`expected an error, got: ${JSON.stringify(r.config)}`);
  return r.error;
};

describe('sluice.yml: the setup keys', () => {
  it("the issue's example, whole", () => {
    const config = ok(`
hooks:
  pre_setup: ./script/prepare
  package_setup: npm ci
  worker_setup: ./script/db-schema
  post_setup: echo ready
  post_worker: ./script/collect
  post_build: ./script/notify
cache:
  key_paths: [package-lock.json]
  save_paths: [node_modules, ~/.npm]
services: [postgresql, mysql, redis]
artifacts: ["coverage/**", "reports/*.html"]
`);
    expect(config.setup).toEqual({
      hooks: {
        pre_setup: './script/prepare',
        package_setup: 'npm ci',
        worker_setup: './script/db-schema',
        post_setup: 'echo ready',
        post_worker: './script/collect',
        post_build: './script/notify',
      },
      cache: { key_paths: ['package-lock.json'], save_paths: ['node_modules', '~/.npm'] },
      services: ['postgresql', 'mysql', 'redis'],
      artifacts: ['coverage/**', 'reports/*.html'],
    });
  });

  it('multi-line hooks, package_setup false, cache false, a hook turned off with null', () => {
    const config = ok(`
hooks:
  worker_setup: |
    createdb_schema
    seed --fast
  package_setup: false
  post_build: null
cache: false
`);
    expect(config.setup).toEqual({
      hooks: { worker_setup: 'createdb_schema\nseed --fast', package_setup: false, post_build: null },
      cache: false,
    });
  });

  it('a file that sets none of them has no setup of its own', () => {
    expect(ok('profiles: {}\n').setup).toBeUndefined();
  });

  it.each([
    ['hooks:\n  pre_stup: x\n', 'line 2: hooks: unknown key "pre_stup"'],
    ['hooks:\n  worker_setup: ""\n', 'line 2: hooks.worker_setup must not be empty'],
    ['hooks:\n  worker_setup: [a, b]\n', 'line 2: hooks.worker_setup must be a command'],
    ['hooks:\n  package_setup: true\n', 'line 2: hooks.package_setup must be a command, or false for no package setup'],
    ['cache:\n  key_paths: [package-lock.json]\n', 'line 2: cache'],
    ['cache:\n  key_paths: [/etc/passwd]\n  save_paths: [node_modules]\n', 'line 2: cache.key_paths.0 must be relative to the checkout'],
    ['cache:\n  key_paths: [a]\n  save_paths: [../up]\n', "line 3: cache.save_paths.0 must not contain '..'"],
    ['cache:\n  key_paths: [a]\n  save_paths: ["~"]\n', 'line 3: cache.save_paths.0 must be relative to the checkout, or start with ~/'],
    ['cache:\n  key_paths: [a]\n  save_paths: [.git/hooks]\n', 'line 3: cache.save_paths.0 must not be inside .git'],
    ['cache:\n  key_paths: [a]\n  save_paths: []\n', 'line 3: cache.save_paths must list at least one path'],
    ['services: [postgres]\n', 'line 1: services.0 must be one of postgresql, mysql, redis'],
    ['services: [redis, redis]\n', 'line 1: services must not list a service twice'],
    ['artifacts: [/var/log/*]\n', 'line 1: artifacts.0 must be relative to the checkout'],
    ['artifacts: coverage\n', 'line 1: artifacts must be a list of glob patterns'],
  ])('refuses %j', (text, message) => {
    expect(fail(text)).toContain(message);
  });
});

describe('resolveBuildSetup: sluice.yml over the suite, key by key', () => {
  const suite = {
    hooks: { worker_setup: 'suite-schema', post_build: 'suite-notify' },
    cache: { key_paths: ['yarn.lock'], save_paths: ['node_modules'] },
    services: ['postgresql' as const],
    artifacts: ['coverage/**'],
  };

  it('with no file, the suite decides; with neither, nothing is set up but what package setup detects', () => {
    expect(resolveBuildSetup(suite, undefined)).toEqual({ ...suite, hooks: { ...suite.hooks } });
    expect(resolveBuildSetup(undefined, undefined)).toEqual({ hooks: {}, cache: null, services: [], artifacts: [] });
  });

  it('a hook the file names replaces the suite hook of that name; null turns it off; the others stay', () => {
    const setup = resolveBuildSetup(suite, { hooks: { worker_setup: 'file-schema', post_build: null } });
    expect(setup.hooks).toEqual({ worker_setup: 'file-schema', post_build: null });
  });

  it('cache, services and artifacts from the file replace the suite whole; cache false turns it off', () => {
    const setup = resolveBuildSetup(suite, { cache: false, services: ['redis'], artifacts: [] });
    expect(setup).toMatchObject({ cache: false, services: ['redis'], artifacts: [] });
  });
});

describe('cacheScopes: GitHub Actions’ rule', () => {
  it('a push to a feature branch reads its own entries, then the default branch’s, and writes its own', () => {
    expect(cacheScopes({ branch: 'feature', defaultBranch: 'master', mayWrite: true })).toEqual({ readScopes: ['feature', 'master'], writeScope: 'feature' });
  });

  it('the default branch reads only its own', () => {
    expect(cacheScopes({ branch: 'master', defaultBranch: 'master', mayWrite: true })).toEqual({ readScopes: ['master'], writeScope: 'master' });
  });

  it('a build that may not write (a pull request, a trigger with its own env) reads the same and writes nowhere', () => {
    expect(cacheScopes({ branch: 'master', defaultBranch: 'master', mayWrite: false }).writeScope).toBeNull();
  });
});

/** Settings of a build's setup read from the environment: the cache store, size limits, hooks, services. */
import { loadConfig } from '../../src/config';

const base = { SLUICE_SECRET_KEY: Buffer.alloc(32, 9).toString('base64') };
const MiB = 1024 * 1024;

describe('cache, artifact and hook settings', () => {
  it('default to a directory store, 2 GiB an entry, 10 GiB a repository, 20 GiB of local copies, 512 MiB an artifact, 2 GiB a build, 30 min a hook', () => {
    expect(loadConfig(base, 'runner')).toMatchObject({
      store: { kind: 'dir', dir: '/tmp/sluice-cache' },
      cacheLocal: { dir: '/tmp/sluice-cache-local', maxBytes: 20480 * MiB },
      cacheLimits: { maxEntryBytes: 2048 * MiB, maxRepoBytes: 10240 * MiB },
      artifactLimits: { maxFileBytes: 512 * MiB, maxBuildBytes: 2048 * MiB },
      hookTimeoutMs: 30 * 60_000,
      services: { postgresql: undefined, mysql: undefined, redis: undefined },
    });
  });

  it('take sizes in megabytes', () => {
    const config = loadConfig({ ...base, SLUICE_CACHE_MAX_ENTRY_MB: '100', SLUICE_CACHE_MAX_REPO_MB: '1000', SLUICE_CACHE_LOCAL_MAX_MB: '5', SLUICE_ARTIFACT_MAX_FILE_MB: '1', SLUICE_ARTIFACT_MAX_BUILD_MB: '2', SLUICE_GIT_MIRROR_MAX_MB: '7' }, 'runner');
    expect(config.gitMirrorMaxBytes).toBe(7 * MiB);
    expect(config.cacheLimits).toEqual({ maxEntryBytes: 100 * MiB, maxRepoBytes: 1000 * MiB });
    expect(config.cacheLocal?.maxBytes).toBe(5 * MiB);
    expect(config.artifactLimits).toEqual({ maxFileBytes: MiB, maxBuildBytes: 2 * MiB });
  });

  it('read an s3:// store with its endpoint, path style by default where there is one', () => {
    const config = loadConfig(
      { ...base, SLUICE_CACHE_URL: 's3://ci-cache/sluice/prod/', SLUICE_CACHE_S3_ENDPOINT: 'http://127.0.0.1:9000', SLUICE_CACHE_S3_ACCESS_KEY_ID: 'id', SLUICE_CACHE_S3_SECRET_ACCESS_KEY: 'secret' },
      'runner',
    );
    expect(config.store).toEqual({
      kind: 's3',
      bucket: 'ci-cache',
      prefix: 'sluice/prod/',
      endpoint: 'http://127.0.0.1:9000',
      region: 'us-east-1',
      accessKeyId: 'id',
      secretAccessKey: 'secret',
      forcePathStyle: true,
    });
    expect(loadConfig({ ...base, SLUICE_CACHE_URL: 's3://ci-cache' }, 'runner').store).toMatchObject({ prefix: '', forcePathStyle: false });
    expect(loadConfig({ ...base, SLUICE_CACHE_URL: 'file:///srv/sluice-cache' }, 'runner').store).toEqual({ kind: 'dir', dir: '/srv/sluice-cache' });
  });

  it.each([
    ['SLUICE_CACHE_URL', 'relative/dir'],
    ['SLUICE_CACHE_URL', 'https://cache.example'],
    ['SLUICE_CACHE_MAX_ENTRY_MB', 'plenty'],
    ['SLUICE_HOOK_TIMEOUT_MS', 'soon'],
    ['SLUICE_SERVICE_POSTGRESQL_URL', 'mysql://root@db'],
    ['SLUICE_SERVICE_REDIS_URL', '127.0.0.1:6379'],
  ])('refuse %s=%p, naming it and never echoing its value', (name, value) => {
    expect(() => loadConfig({ ...base, [name]: value }, 'runner')).toThrow(new RegExp(name));
    expect(() => loadConfig({ ...base, [name]: value }, 'runner')).not.toThrow(new RegExp(value.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')));
  });

  it('refuse a size of 0', () => {
    expect(() => loadConfig({ ...base, SLUICE_CACHE_MAX_ENTRY_MB: '0' }, 'runner')).toThrow(/SLUICE_CACHE_MAX_ENTRY_MB/);
  });

  it('keep 4 trees of ended builds by default, as many as SLUICE_KEPT_TREES says (0: none), and refuse what is not a count', () => {
    expect(loadConfig(base, 'runner').keptTrees).toBe(4);
    expect(loadConfig({ ...base, SLUICE_KEPT_TREES: '0' }, 'runner').keptTrees).toBe(0);
    expect(loadConfig({ ...base, SLUICE_KEPT_TREES: '12' }, 'runner').keptTrees).toBe(12);
    expect(() => loadConfig({ ...base, SLUICE_KEPT_TREES: 'many' }, 'runner')).toThrow(/SLUICE_KEPT_TREES/);
    expect(() => loadConfig({ ...base, SLUICE_KEPT_TREES: '-1' }, 'runner')).toThrow(/SLUICE_KEPT_TREES/);
  });
});

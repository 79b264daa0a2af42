import { planTemporalCli, type CliFacts } from '../../src/temporal/cli';

/** Facts for a machine whose only executables are `files`. */
function facts(env: NodeJS.ProcessEnv, files: string[]): CliFacts {
  const set = new Set(files);
  return { env, homeDir: '/home/u', isExecutable: (f) => set.has(f) };
}

const PATH = '/usr/local/bin:/usr/bin';
const CACHED = '/home/u/.cache/sluice/bin/temporal';

describe('planTemporalCli', () => {
  it('uses $TEMPORAL_CLI first, even when others exist', () => {
    const plan = planTemporalCli(facts({ TEMPORAL_CLI: '/opt/t', PATH }, ['/opt/t', '/usr/bin/temporal', CACHED]));
    expect(plan).toEqual({ action: 'use', path: '/opt/t', source: 'TEMPORAL_CLI' });
  });

  it('fails when $TEMPORAL_CLI names something that is not there, instead of falling back', () => {
    const plan = planTemporalCli(facts({ TEMPORAL_CLI: '/nope', PATH }, ['/usr/bin/temporal']));
    expect(plan).toEqual({ action: 'fail', message: expect.stringContaining('TEMPORAL_CLI=/nope') });
  });

  it('then takes the first `temporal` on PATH, in PATH order', () => {
    const plan = planTemporalCli(facts({ PATH }, ['/usr/bin/temporal', '/usr/local/bin/temporal', CACHED]));
    expect(plan).toEqual({ action: 'use', path: '/usr/local/bin/temporal', source: 'PATH' });
  });

  it('then the cached build under ~/.cache/sluice', () => {
    const plan = planTemporalCli(facts({ PATH }, [CACHED, '/usr/bin/go']));
    expect(plan).toEqual({ action: 'use', path: CACHED, source: 'cache' });
  });

  it('honours $SLUICE_CACHE_DIR for the cache', () => {
    const plan = planTemporalCli(facts({ PATH, SLUICE_CACHE_DIR: '/var/cache/s' }, ['/var/cache/s/bin/temporal']));
    expect(plan).toEqual({ action: 'use', path: '/var/cache/s/bin/temporal', source: 'cache' });
  });

  it('builds into the cache with the go on PATH when nothing is there', () => {
    const plan = planTemporalCli(facts({ PATH }, ['/usr/bin/go']));
    expect(plan).toEqual({ action: 'build', go: '/usr/bin/go', gobin: '/home/u/.cache/sluice/bin', path: CACHED });
  });

  it('finds go in /usr/local/go/bin when it is not on PATH', () => {
    const plan = planTemporalCli(facts({ PATH }, ['/usr/local/go/bin/go']));
    expect(plan).toMatchObject({ action: 'build', go: '/usr/local/go/bin/go' });
  });

  it('fails with every option spelled out when there is neither a CLI nor Go', () => {
    const plan = planTemporalCli(facts({ PATH }, []));
    expect(plan.action).toBe('fail');
    const message = (plan as { message: string }).message;
    for (const option of ['PATH', 'TEMPORAL_CLI', 'install Go', 'TEMPORAL_ADDRESS']) expect(message).toContain(option);
  });

  it('copes with an unset or empty PATH', () => {
    expect(planTemporalCli(facts({}, [CACHED]))).toMatchObject({ source: 'cache' });
    expect(planTemporalCli(facts({ PATH: '' }, []))).toMatchObject({ action: 'fail' });
  });
});

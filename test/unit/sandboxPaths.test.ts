import { insideSandbox, outsideSandbox, sandboxArgv, SANDBOX_HOME, SANDBOX_TREE } from '../../src/steps/isolation/sandbox';

const dirs = { tree: '/ws/session-12-1', home: '/ws/session-12-1.home' };

describe('the same paths in every sandbox', () => {
  it('shows the checkout and the home at fixed places, in paths, PATH lists and command lines', () => {
    expect(insideSandbox(dirs, '/ws/session-12-1')).toBe(SANDBOX_TREE);
    expect(insideSandbox(dirs, '/ws/session-12-1/test/a.js')).toBe(`${SANDBOX_TREE}/test/a.js`);
    expect(insideSandbox(dirs, '/ws/session-12-1.home/.sluice-reports/b1')).toBe(`${SANDBOX_HOME}/.sluice-reports/b1`);
    expect(insideSandbox(dirs, '/ws/session-12-1/node_modules/.bin:/ws/session-12-1.home/.local/bin:/usr/bin')).toBe(
      `${SANDBOX_TREE}/node_modules/.bin:${SANDBOX_HOME}/.local/bin:/usr/bin`,
    );
    expect(insideSandbox(dirs, "cd '/ws/session-12-1' && ls /ws/session-12-1.home")).toBe(`cd '${SANDBOX_TREE}' && ls ${SANDBOX_HOME}`);
  });

  it('leaves other paths alone, even those that start the same', () => {
    expect(insideSandbox(dirs, '/ws/session-12-10/test')).toBe('/ws/session-12-10/test');
    expect(insideSandbox(dirs, '/ws/session-12')).toBe('/ws/session-12');
    expect(insideSandbox(dirs, '/usr/bin/node')).toBe('/usr/bin/node');
  });

  it('maps what a build printed back to the host', () => {
    expect(outsideSandbox(dirs, `${SANDBOX_TREE}/test/a.js`)).toBe('/ws/session-12-1/test/a.js');
    expect(outsideSandbox(dirs, `${SANDBOX_HOME}/x`)).toBe('/ws/session-12-1.home/x');
    expect(outsideSandbox(dirs, '/sluice/treehouse/a.js')).toBe('/sluice/treehouse/a.js');
    expect(outsideSandbox(dirs, 'test/a.js')).toBe('test/a.js');
  });

  it('binds them there and starts the process there', () => {
    const argv = sandboxArgv({ bwrap: 'bwrap', network: true }, dirs, dirs.tree, ['/ws/session-12-1/a_test.sh']);
    const joined = argv.join(' ');
    expect(joined).toContain(`--bind ${dirs.tree} ${SANDBOX_TREE} --bind ${dirs.home} ${SANDBOX_HOME}`);
    expect(argv.slice(-4)).toEqual(['--chdir', SANDBOX_TREE, '--', `${SANDBOX_TREE}/a_test.sh`]);
  });
});

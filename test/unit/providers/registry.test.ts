import { getProvider, providers } from '../../../src/providers';

describe('provider registry', () => {
  it('has one adapter per provider path, each named by its key', () => {
    expect(Object.keys(providers).sort()).toEqual(['bitbucket', 'builds', 'gerrit', 'gitea', 'github', 'gitlab', 'gogs', 'stash']);
    for (const [name, adapter] of Object.entries(providers)) expect(adapter.name).toBe(name);
  });

  it('getProvider finds each one', () => {
    for (const name of Object.keys(providers)) expect(getProvider(name)).toBe(providers[name]);
  });

  it.each(['build', 'Builds', 'GitHub', 'svn', '', 'constructor', '__proto__', 'toString', 'hasOwnProperty'])('%j is no provider', (name) => {
    expect(getProvider(name)).toBeUndefined();
  });

  it('cannot be changed at run time', () => {
    expect(Object.isFrozen(providers)).toBe(true);
  });
});

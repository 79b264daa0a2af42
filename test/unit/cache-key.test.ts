// What names a cache entry: the runner's platform and arch, the save paths, the key files'
// paths and contents; and which paths a cache may name at all.
import { cacheFamily, cacheKey, parseCachePath, parseSavePaths, type KeyInput } from '../../src/steps/cache/key';

const base: KeyInput = {
  platform: 'linux',
  arch: 'x64',
  savePaths: parseSavePaths(['node_modules', '~/.npm']),
  keyFiles: [{ rel: 'package-lock.json', content: 'sha256:aaaa' }],
};

describe('cacheKey', () => {
  it('is the same for the same inputs, whatever the order of save paths and key files', () => {
    const again = cacheKey({
      ...base,
      savePaths: parseSavePaths(['~/.npm', './node_modules/']),
      keyFiles: [...base.keyFiles],
    });
    expect(cacheKey(base)).toBe(again);
    const two = { ...base, keyFiles: [{ rel: 'a', content: 'missing' }, { rel: 'b', content: 'sha256:1' }] };
    expect(cacheKey(two)).toBe(cacheKey({ ...two, keyFiles: [...two.keyFiles].reverse() }));
    expect(cacheKey(base)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('changes with the platform, the arch, the save paths, a key file path or content', () => {
    const keys = new Set([
      cacheKey(base),
      cacheKey({ ...base, platform: 'darwin' }),
      cacheKey({ ...base, arch: 'arm64' }),
      cacheKey({ ...base, savePaths: parseSavePaths(['node_modules']) }),
      cacheKey({ ...base, savePaths: parseSavePaths(['node_modules', '.npm']) }),
      cacheKey({ ...base, keyFiles: [{ rel: 'package-lock.json', content: 'sha256:bbbb' }] }),
      cacheKey({ ...base, keyFiles: [{ rel: 'package-lock.json', content: 'missing' }] }),
      cacheKey({ ...base, keyFiles: [{ rel: 'yarn.lock', content: 'sha256:aaaa' }] }),
      cacheKey({ ...base, keyFiles: [] }),
    ]);
    expect(keys.size).toBe(9);
  });

  it('keeps the family when only key files change, so a fallback may restore across lock files but not across machines or paths', () => {
    const family = cacheFamily(base);
    expect(cacheFamily({ ...base, keyFiles: [] } as KeyInput)).toBe(family);
    expect(cacheFamily({ ...base, arch: 'arm64' })).not.toBe(family);
    expect(cacheFamily({ ...base, savePaths: parseSavePaths(['node_modules']) })).not.toBe(family);
  });
});

describe('cache paths', () => {
  it('normalizes paths of the checkout and of the home', () => {
    expect(parseCachePath('./node_modules/', true)).toEqual({ root: 'tree', rel: 'node_modules', written: './node_modules/' });
    expect(parseCachePath('~/.cache//pip', true)).toEqual({ root: 'home', rel: '.cache/pip', written: '~/.cache//pip' });
    expect(parseCachePath('a/b.json', false)).toEqual({ root: 'tree', rel: 'a/b.json', written: 'a/b.json' });
  });

  it.each([
    ['/etc/passwd', true, /relative/],
    ['~/../x', true, /'\.\.'/],
    ['a/../../x', true, /'\.\.'/],
    ['~', true, /relative/],
    ['~/', true, /inside/],
    ['.', true, /inside/],
    ['~root/x', true, /relative/],
    ['~/x', false, /relative/],
    ['.git/hooks', true, /\.git/],
    ['a\nb', true, /relative/],
  ])('refuses %j', (p, allowHome, why) => {
    expect(() => parseCachePath(p as string, allowHome as boolean)).toThrow(why as RegExp);
  });

  it('refuses save paths one inside another, and keeps one of two that are the same', () => {
    expect(() => parseSavePaths(['node_modules', 'node_modules/.cache'])).toThrow(/overlap/);
    expect(() => parseSavePaths(['~/.npm/_cacache', '~/.npm'])).toThrow(/overlap/);
    expect(parseSavePaths(['node_modules', './node_modules', 'node_modules_b']).map((p) => p.rel)).toEqual(['node_modules', 'node_modules_b']);
    // The home's .npm and the checkout's .npm are different places.
    expect(parseSavePaths(['.npm', '~/.npm'])).toHaveLength(2);
  });
});

/** Where `sluice login` keeps the admin token (src/cli/configFile.ts): the user's alone, read back checked. */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { configPath, readConfig, writeConfig } from '../../src/cli/configFile';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-cli-config-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('configPath', () => {
  it('is under XDG_CONFIG_HOME when it is absolute, else under ~/.config', () => {
    expect(configPath({ XDG_CONFIG_HOME: '/x/conf', HOME: '/home/ada' })).toBe('/x/conf/sluice/config.json');
    expect(configPath({ XDG_CONFIG_HOME: 'relative', HOME: '/home/ada' })).toBe('/home/ada/.config/sluice/config.json');
    expect(configPath({ HOME: '/home/ada' })).toBe('/home/ada/.config/sluice/config.json');
  });
});

describe('writeConfig and readConfig', () => {
  it('writes mode 0600 in a 0700 directory, tightening one left open, and reads it back', () => {
    const sluiceDir = path.join(dir, 'sluice');
    mkdirSync(sluiceDir, { mode: 0o755 });
    chmodSync(sluiceDir, 0o755);
    const file = path.join(sluiceDir, 'config.json');
    writeConfig(file, { url: 'http://127.0.0.1:8080', token: 'admin-0123456789abcdef' });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(sluiceDir).mode & 0o777).toBe(0o700);
    expect(readConfig(file)).toEqual({ url: 'http://127.0.0.1:8080', token: 'admin-0123456789abcdef' });
  });

  it('reads no file as not signed in, and refuses one that is not a config without quoting it', () => {
    expect(readConfig(path.join(dir, 'none.json'))).toBeUndefined();
    const file = path.join(dir, 'config.json');
    writeFileSync(file, JSON.stringify({ url: 'http://127.0.0.1:8080', token: 'has a space-secret' }));
    expect(() => readConfig(file)).toThrow(`${file} is not a sluice config (token): run \`sluice login\` again`);
    writeFileSync(file, 'admin-secret-token');
    expect(() => readConfig(file)).toThrow(/is not JSON/);
    expect(() => readConfig(file)).not.toThrow(/admin-secret/);
  });
});

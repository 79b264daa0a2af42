/** Each role's configuration holds only the credentials it uses (config.ts). */
import { loadConfig } from '../../src/config';

const base = { SLUICE_SECRET_KEY: Buffer.alloc(32, 9).toString('base64') };

describe('configuration by role', () => {
  it('workers and runners start without the admin token, and hold none', () => {
    for (const role of ['worker', 'runner'] as const) expect(loadConfig(base, role).adminToken).toBe('');
  });

  it('the API (and npm start, which runs it) requires it, naming the variable', () => {
    for (const role of ['api', 'all'] as const) {
      expect(() => loadConfig(base, role)).toThrow('SLUICE_ADMIN_TOKEN: required by the API (at least 16 characters)');
    }
    expect(loadConfig({ ...base, SLUICE_ADMIN_TOKEN: 'a'.repeat(16) }, 'api').adminToken).toBe('a'.repeat(16));
  });

  it('never echoes a value it refuses', () => {
    expect(() => loadConfig({ ...base, SLUICE_ADMIN_TOKEN: 'short-secret' }, 'api')).toThrow('SLUICE_ADMIN_TOKEN must be at least 16 characters');
    expect(() => loadConfig({ ...base, SLUICE_ADMIN_TOKEN: 'short-secret' }, 'api')).not.toThrow(/short-secret/);
  });
});

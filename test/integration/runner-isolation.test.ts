/**
 * What a runner decides at its start about keeping builds away from itself (issue 23): never
 * as root, in bubblewrap wherever it works, and, where it does not, either a loud warning
 * (`npm start`) or a refusal to start (a runner on its own) unless SLUICE_SANDBOX=none says so.
 * Real probes: bwrap is started for real, and a missing one is a path that does not exist.
 */
import { mkdtemp, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type Config } from '../../src/config';
import { lookupUser } from '../../src/steps/isolation/buildUser';
import { isolationWarning, resolveIsolation } from '../../src/steps/isolation';
import { bwrapWorks } from '../support/pids';
import { removeDir } from '../support/removeDir';

const root = process.getuid?.() === 0;
const sandboxed = bwrapWorks();
if (!sandboxed) console.warn('runner-isolation.test.ts: tests that need a working bubblewrap are skipped: bwrap is missing or user namespaces are not allowed here');
const MISSING_BWRAP = '/nonexistent/bwrap';

let workspaceDir: string;
beforeAll(async () => {
  workspaceDir = await mkdtemp(join(tmpdir(), 'sluice-isolation-'));
});
afterAll(() => removeDir(workspaceDir));

/** A runner's configuration as loadConfig gives it with nothing set but its secret key, and the settings under test. */
const config = (over: Partial<Config> = {}): Config => ({
  ...loadConfig({ SLUICE_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'), SLUICE_WORKSPACE_DIR: workspaceDir }, 'runner'),
  ...over,
});

(sandboxed ? it : it.skip)('by default, runs builds in bubblewrap, and never as root', async () => {
  const isolation = await resolveIsolation(config(), { requireSandbox: true });
  expect(isolation.sandbox).toMatchObject({ bwrap: 'bwrap', network: true });
  expect(isolation.gaps).toEqual([]);
  if (root) {
    // A root runner's own build user, which it creates where the machine lacks it.
    expect(isolation.runAsName).toBe('sluice-build');
    expect(isolation.runAs).toEqual(lookupUser('sluice-build'));
    expect(isolation.runAs!.uid).not.toBe(0);
    // The build user reaches its own trees and cannot list the others.
    expect((await stat(workspaceDir)).mode & 0o777).toBe(0o711);
  } else {
    expect(isolation.runAs).toBeUndefined();
  }
});

it('refuses to start on its own where bubblewrap does not work, saying what to do', async () => {
  await expect(resolveIsolation(config(), { requireSandbox: true, bwrap: MISSING_BWRAP })).rejects.toThrow(
    /SLUICE_SANDBOX=auto: bubblewrap does not work here \(.*ENOENT.*\)\. Install it .* or set SLUICE_SANDBOX=none/,
  );
});

it('runs on under npm start where bubblewrap does not work, and says what builds can reach', async () => {
  const isolation = await resolveIsolation(config(), { requireSandbox: false, bwrap: MISSING_BWRAP });
  expect(isolation.sandbox).toBeUndefined();
  expect(isolation.gaps[0]).toMatch(/^bubblewrap does not work here \(.*ENOENT/);
  expect(isolation.gaps.join('\n')).toMatch(/setsid can outlive it/);
  if (!root) expect(isolation.gaps.join('\n')).toMatch(/runner's own user and can read its environment/);
  const warning = isolationWarning(isolation);
  expect(warning).toMatch(/builds on this runner are NOT isolated/);
  for (const gap of isolation.gaps) expect(warning).toContain(gap);
});

it('refuses SLUICE_SANDBOX=bwrap where it does not work, even under npm start', async () => {
  await expect(resolveIsolation(config({ sandbox: 'bwrap' }), { requireSandbox: false, bwrap: MISSING_BWRAP })).rejects.toThrow(/SLUICE_SANDBOX=bwrap: bubblewrap does not work here/);
});

it('runs without bubblewrap when SLUICE_SANDBOX=none says so, and says so', async () => {
  const isolation = await resolveIsolation(config({ sandbox: 'none' }), { requireSandbox: true, bwrap: MISSING_BWRAP });
  expect(isolation.sandbox).toBeUndefined();
  expect(isolation.gaps).toContain('no sandbox (SLUICE_SANDBOX=none)');
  if (root) expect(isolation.runAs?.uid).not.toBe(0);
});

(root ? it : it.skip)('takes SLUICE_BUILD_USER when it names one, and refuses root', async () => {
  expect((await resolveIsolation(config({ sandbox: 'none', buildUser: 'nobody' }), { requireSandbox: false })).runAsName).toBe('nobody');
  await expect(resolveIsolation(config({ sandbox: 'none', buildUser: 'root' }), { requireSandbox: false })).rejects.toThrow(/is root or in group root/);
  await expect(resolveIsolation(config({ sandbox: 'none', buildUser: 'no-such-user-here' }), { requireSandbox: false })).rejects.toThrow(/no such user/);
});

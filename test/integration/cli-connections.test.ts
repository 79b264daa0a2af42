/**
 * `sluice repos connect|sites|available|activate|site|repair|deactivate` (issue 38): the CLI as
 * its own process (`node --import tsx src/cli/main.ts`) against the API on a throwaway database
 * and a fake GitLab that holds every request to GitLab's documentation. The token goes in on
 * stdin and never appears on the command line or in what the CLI prints.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { parseAllowList } from '../../src/ip/ranges';
import { startApiHarness, type ApiHarness } from '../support/apiApp';
import { startFakeGitLab, type FakeGitLab } from '../support/fakeGitLab';

const CLI = path.join(__dirname, '..', '..', 'src', 'cli', 'main.ts');
const TOKEN = 'glpat-cli-token-0000001';
const NEW_TOKEN = 'glpat-cli-token-0000002';
let h: ApiHarness;
let gitlab: FakeGitLab;

function sluice(args: string[], stdin = ''): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
    env: { PATH: process.env.PATH, HOME: '/nonexistent', SLUICE_URL: h.url, SLUICE_TOKEN: h.config.adminToken },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  child.stdin.end(stdin);
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

beforeAll(async () => {
  gitlab = await startFakeGitLab({
    tokens: { [TOKEN]: { username: 'alice', scopes: ['api'] }, [NEW_TOKEN]: { username: 'alice', scopes: ['api'] } },
    projects: [{ id: 31, path: 'acme/cli', sshUrl: 'git@gitlab.test:acme/cli.git', defaultBranch: 'main', members: { alice: 40 } }],
  });
  h = await startApiHarness({ config: { webhookAllow: parseAllowList('127.0.0.0/8') } });
  expect((await h.admin('POST', '/api/v1/orgs', { name: 'acme', email: 'ci@example.com' })).statusCode).toBe(201);
});
afterAll(async () => {
  await h?.close();
  await gitlab?.close();
});
afterEach(() => expect(gitlab.problems).toEqual([]));

it('connects a site, lists and activates its repository, shows its health, repairs and deactivates it', async () => {
  const connected = await sluice(['repos', 'connect', 'acme', '--site', 'gitlab', '--api-url', gitlab.apiUrl], `${TOKEN}\n`);
  expect(connected).toMatchObject({ code: 0, stderr: '' });
  expect(connected.stdout).toContain('as alice: connection 1');
  expect(connected.stdout).not.toContain(TOKEN);

  const sites = await sluice(['repos', 'sites', 'acme']);
  expect(sites.stdout).toMatch(/1\s+gitlab\s+http:\/\/127\.0\.0\.1:[0-9]+\/api\/v4\s+alice\s+0/);

  const available = await sluice(['repos', 'available', 'acme', '1']);
  expect(available.stdout).toMatch(/31\s+acme\/cli\s+main\s+can activate/);

  const activated = await sluice(['repos', 'activate', 'acme', '1', '31', '--name', 'cli-app']);
  expect(activated).toMatchObject({ code: 0 });
  expect(activated.stdout).toContain('activated acme/cli-app');
  expect(gitlab.hooksOf(31)).toHaveLength(1);

  // The list of repositories is still `sluice repos [org]`.
  expect((await sluice(['repos', 'acme'])).stdout).toMatch(/acme\/cli-app\s+git\s+main\s+git@gitlab\.test:acme\/cli\.git/);

  const site = await sluice(['repos', 'site', 'acme/cli-app', '--json']);
  expect(JSON.parse(site.stdout)).toMatchObject({ site: 'gitlab', site_name: 'acme/cli', hook: 'present', deploy_key: 'present', last_hook_at: null });

  gitlab.dropHook(31, gitlab.hooksOf(31)[0]!.id);
  expect((await sluice(['repos', 'repair', 'acme/cli-app'])).stdout).toContain('repaired acme/cli-app');
  expect(gitlab.hooksOf(31)).toHaveLength(1);

  const renewed = await sluice(['repos', 'token', 'acme', '1'], `${NEW_TOKEN}\n`);
  expect(renewed).toMatchObject({ code: 0, stderr: '' });
  expect(renewed.stdout).toContain('uses the new token of alice, and so do the statuses of its 1 repositories');
  expect(renewed.stdout).not.toContain(NEW_TOKEN);

  expect((await sluice(['repos', 'deactivate', 'acme/cli-app'])).code).toBe(0);
  expect(gitlab.hooksOf(31)).toEqual([]);
  expect(gitlab.keysOf(31)).toEqual([]);
});

it('says what the site refused, with a non-zero exit', async () => {
  const res = await sluice(['repos', 'connect', 'acme', '--site', 'gitlab', '--api-url', gitlab.apiUrl], 'glpat-wrong\n');
  expect(res.code).not.toBe(0);
  expect(res.stderr).toMatch(/refused the token/);
  expect(res.stderr).not.toContain('glpat-wrong');
});

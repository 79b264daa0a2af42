/**
 * The layering of src/ is held by lint (eslint.config.mjs): a deliberate violation in each layer
 * must fail, and what a layer may do must pass. Each snippet is linted as text at a path inside
 * its layer, with the project's own config, by ESLint in a child process (ESLint loads its
 * config with a dynamic import, which Jest's module sandbox refuses).
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';

const root = path.resolve(__dirname, '../..');

const LINT_ALL = `
const { ESLint } = require('eslint');
const path = require('node:path');
(async () => {
  const snippets = JSON.parse(require('node:fs').readFileSync(0, 'utf8'));
  const eslint = new ESLint({ cwd: process.cwd() });
  const out = [];
  for (const { file, code } of snippets) {
    const [r] = await eslint.lintText(code, { filePath: path.join(process.cwd(), file) });
    out.push(r.messages.filter((m) => m.severity === 2).map((m) => m.ruleId || m.message));
  }
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
`;

/** Everything the tests below lint, gathered first and linted in one ESLint run. */
const queued: { file: string; code: string }[] = [];
let results: string[][] = [];
function snippet(file: string, code: string): () => string[] {
  const i = queued.push({ file, code }) - 1;
  return () => results[i]!;
}
beforeAll(() => {
  results = JSON.parse(execFileSync(process.execPath, ['-e', LINT_ALL], { cwd: root, input: JSON.stringify(queued), encoding: 'utf8' }));
}, 60_000);

const IMPORTS = '@typescript-eslint/no-restricted-imports';
const SQL = 'no-restricted-syntax';

describe.each([
  // [layer file, forbidden import, why it is forbidden]
  ['src/workflows/x.ts', "import { readFile } from 'node:fs/promises';", 'a Node built-in in workflow code'],
  ['src/workflows/x.ts', "import path from 'path';", 'a bare Node built-in in workflow code'],
  ['src/workflows/x.ts', "import { parse } from 'yaml';", 'yaml in workflow code'],
  ['src/workflows/x.ts', "import { z } from 'zod';", 'zod in workflow code'],
  ['src/workflows/x.ts', "import { Pool } from 'pg';", 'pg in workflow code'],
  ['src/workflows/x.ts', "import { createControlActivities } from '../activities';", 'an activity implementation in workflow code'],
  ['src/workflows/x.ts', "import { parseSluiceYml } from '../core/sluiceYml';", 'the sluice.yml parser in workflow code'],
  ['src/core/x.ts', "import { Pool } from 'pg';", 'pg in the core'],
  ['src/core/x.ts', "import { Context } from '@temporalio/activity';", 'Temporal in the core'],
  ['src/core/x.ts', "import Fastify from 'fastify';", 'Fastify in the core'],
  ['src/core/x.ts', "import { request } from 'undici';", 'undici in the core'],
  ['src/core/x.ts', "import { readFile } from 'node:fs/promises';", 'file I/O in the core'],
  ['src/providers/github/x.ts', "import { request } from 'undici';", 'I/O in a provider'],
  ['src/api/x.ts', "import { createControlActivities } from '../activities';", 'activity code in the API'],
  ['src/api/routes/x.ts', "import { deliverAttempt } from '../../activities/delivery';", 'activity code in the API'],
  ['src/db/x.ts', "import { attemptOnce } from '../delivery/attempt';", 'delivery code in the data layer'],
  ['src/delivery/x.ts', "import { Context } from '@temporalio/activity';", 'Temporal in the delivery module'],
  ['src/activities/steps/x.ts', "import { runRunner } from '../../runner/run';", "a role's entry point in activity code"],
  ['src/steps/x.ts', "import { Context } from '@temporalio/activity';", "Temporal in the runner's build steps"],
  ['src/steps/x.ts', "import { claimFiles } from '../db/testQueue';", "the database in the runner's build steps (they use BuildRecords)"],
  ['src/steps/x.ts', "import { unseal } from '../crypto/sealed';", "Sluice's secret key in the runner's build steps"],
  ['src/steps/tests/x.ts', "import { createBuildActivities } from '../../activities/steps/activities';", "activity code in the runner's build steps"],
  ['src/api/x.ts', "import { runTestFile } from '../steps/tests/runTestFile';", 'build steps in the API'],
  ['src/workflows/x.ts', "import { fetchTree } from '../steps/checkout/tree';", 'build steps in workflow code'],
  ['src/workflows/x.ts', "import { runRunner } from '../runner/run';", "a role's entry point in workflow code"],
  ['src/workflows/x.ts', "import { builds } from '../metrics/registry';", 'metrics in workflow code (a replay would count again)'],
  ['src/core/x.ts', "import { Counter } from 'prom-client';", 'metrics in the core'],
  ['src/metrics/x.ts', "import { listRunners } from '../db/runners';", 'the database in the metrics module'],
  ['src/metrics/x.ts', "import { Pool } from 'pg';", 'pg in the metrics module'],
  ['src/cli/x.ts', "import { listSessions } from '../db/sessions';", 'the database in the command-line client'],
  ['src/cli/commands/x.ts', "import { asHttpError } from '../../api/http';", 'API server code in the command-line client (it speaks HTTP)'],
  ['src/api/routes/admin/x.ts', "import { findRepo } from '../../../db/repos';", 'the data layer in a JSON route (it calls app/)'],
  ['src/api/web/x.ts', "import { findRepo } from '../../db/repos';", 'the data layer in a web page (it calls app/)'],
  ['src/api/web/x.ts', "import { registerRepoRoutes } from '../routes/admin/repos';", 'a JSON route in a web page'],
  ['src/api/routes/x.ts', "import { page } from '../web/pages';", 'a web page in a JSON route'],
  ['src/cli/x.ts', "import { Client } from '@temporalio/client';", 'Temporal in the command-line client'],
  ['src/cli/x.ts', "import { loadConfig } from '../config';", "the server's configuration in the command-line client"],
  ['src/ip/x.ts', "import { listSessions } from '../db/sessions';", 'the database in a leaf module (ip/)'],
  ['src/crypto/x.ts', "import { Pool } from 'pg';", 'pg in a leaf module (crypto/)'],
  ['src/crypto/x.ts', "import { parseCidr } from '../core/cidr';", 'a layer of Sluice in a leaf module (crypto/)'],
])('%s', (file, code, what) => {
  const broken = snippet(file, `${code}\nvoid 0;\n`);
  it(`refuses ${what}`, () => {
    expect(broken()).toContain(IMPORTS);
  });
});

describe('SQL outside src/db', () => {
  const code = "import type { Pool } from 'pg';\nexport const f = (pool: Pool) => pool.query('SELECT 1');\n";
  const outside = ['src/activities/x.ts', 'src/api/routes/x.ts', 'src/dev.ts'].map((file) => [file, snippet(file, code)] as const);
  const inside = snippet('src/db/x.ts', code);

  it('refuses a query call in an activity, a route or an entry point', () => {
    for (const [file, broken] of outside) expect([file, broken()]).toEqual([file, [SQL]]);
  });

  it('allows it in the data layer', () => {
    expect(inside()).toEqual([]);
  });
});

describe('what the layers may do', () => {
  it.each([
    ['src/workflows/x.ts', "import type { Activities } from '../activities/types';\nimport { sumCounts } from '../core/counts';\nexport type A = Activities;\nexport const s = sumCounts;"],
    ['src/core/x.ts', "import { createHash } from 'node:crypto';\nexport const h = createHash;"],
    ['src/api/x.ts', "import type { Pool } from 'pg';\nimport { attemptOnce } from '../delivery/attempt';\nexport type P = Pool;\nexport const a = attemptOnce;"],
    ['src/activities/x.ts', "import { Context } from '@temporalio/activity';\nimport { attemptOnce } from '../delivery/attempt';\nexport const c = [Context, attemptOnce];"],
    ['src/activities/steps/x.ts', "import { runTestFile } from '../../steps/tests/runTestFile';\nexport const r = runTestFile;"],
    ['src/steps/x.ts', "import { countBatch } from '../metrics/counts';\nexport const c = countBatch;"],
    ['src/metrics/x.ts', "import http from 'node:http';\nimport { Counter } from 'prom-client';\nimport type { Timing } from '../core/types';\nexport type T = Timing;\nexport const c = [http, Counter];"],
    ['src/cli/commands/x.ts', "import { Command } from 'commander';\nimport { z } from 'zod';\nimport { SESSION_STATUSES } from '../../core/types';\nimport { readFileSync } from 'node:fs';\nexport const c = [Command, z, SESSION_STATUSES, readFileSync];"],
    ['src/ip/x.ts', "import net from 'node:net';\nexport const n = net;"],
    ['src/api/web/x.ts', "import type { RepoRow } from '../../db/repos';\nimport { loadRepo } from '../../app/repos';\nimport { webScope } from './routes';\nexport type R = RepoRow;\nexport const l = [loadRepo, webScope];"],
    ['src/steps/x.ts', "import type { Claim } from '../db/testQueue';\nimport type { BuildRecords } from './records';\nimport { maskOutput } from './output';\nexport type C = [Claim, BuildRecords];\nexport const m = maskOutput;"],
  ].map(([file, code]) => [file!, snippet(file!, `${code}\n`)] as const))('%s passes', (_file, broken) => {
    expect(broken()).toEqual([]);
  });
});

/**
 * The roles as production runs them: `npm run build`, then `node dist/api/main.js` and
 * `node dist/worker/main.js` as processes of their own, against a Temporal server Sluice did
 * not start (a bare dev server of this file's, without Sluice's search attributes; not the
 * shared one of globalSetup, which has them). The roles register the attributes themselves:
 * before they did, every trigger answered 503 ("Namespace default has no mapping defined for
 * search attribute SluiceRepo"). Building needs runners, which other tests start.
 */
import { Client, Connection } from '@temporalio/client';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import { msToTs } from '@temporalio/common/lib/time';
import { freePort, type DevServer } from '../../src/temporal/devServer';
import { prepareTemporal } from '../../src/temporal/prepare';
import { SLUICE_SEARCH_ATTRIBUTES } from '../../src/workflows/searchAttributes';
import { createTestDatabase, type TestDatabase } from '../support/db';
import {
  buildDist,
  sluiceEnv,
  startBareTemporal,
  startRole,
  stopAllProcesses,
  waitForHealthy,
  withOwnPort,
} from '../support/processes';
import { eventually } from '../support/wait';
import { callAdmin } from '../support/adminApi';

const WANTED = Object.fromEntries(SLUICE_SEARCH_ATTRIBUTES.map((k) => [k.name, encodeSearchAttributeIndexedValueType(k.type)]));

let temporal: DevServer;
let connection: Connection;
let db: TestDatabase;

beforeAll(async () => {
  const started = await Promise.allSettled([startBareTemporal(), createTestDatabase('sluice_roles'), buildDist(180_000)]);
  if (started[0].status === 'fulfilled') temporal = started[0].value;
  if (started[1].status === 'fulfilled') db = started[1].value;
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  connection = await Connection.connect({ address: temporal.address });
}, 240_000);

afterAll(async () => {
  await stopAllProcesses();
  await connection?.close();
  await db?.drop();
  await temporal?.stop();
});

async function customAttributes(namespace = 'default') {
  return (await connection.operatorService.listSearchAttributes({ namespace })).customAttributes ?? {};
}

async function newNamespace(): Promise<string> {
  const namespace = `roles-${Math.random().toString(36).slice(2, 10)}`;
  await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
  // Registered namespaces reach the frontend's cache a moment later.
  await eventually(`namespace ${namespace}`, () => connection.workflowService.describeNamespace({ namespace }).then(() => true), 30_000);
  return namespace;
}

/** The management API of the API process at env's base URL; throws unless 2xx. */
function admin<T = Record<string, unknown>>(env: NodeJS.ProcessEnv, method: string, path: string, body?: unknown): Promise<T> {
  return callAdmin<T>(env.SLUICE_BASE_URL!, env.SLUICE_ADMIN_TOKEN!, method, path, body);
}

/** An organization, a repository (nothing serves it: no build gets far) and a suite for master. */
async function makeRepo(env: NodeJS.ProcessEnv): Promise<{ label: string; webhookUrl: string }> {
  const name = `org-${Math.random().toString(36).slice(2, 10)}`;
  await admin(env, 'POST', '/api/v1/orgs', { name, email: 'builds@acme.test' });
  const repo = await admin<{ id: number; webhook_url: string }>(env, 'POST', `/api/v1/orgs/${name}/repos`, {
    name: 'app',
    scm: 'git',
    pull_url: 'ssh://git@127.0.0.1:9/nowhere.git',
  });
  await admin(env, 'POST', `/api/v1/repos/${repo.id}/suites`, { branch: 'master', test_pattern: 'test/*_test.sh' });
  return { label: `${name}/app`, webhookUrl: repo.webhook_url };
}

async function trigger(webhookUrl: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(webhookUrl, { method: 'POST' });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('roles as separate processes, against a Temporal server without Sluice search attributes', () => {
  it('the api and a worker register the search attributes at start, and a trigger is accepted', async () => {
    expect(await customAttributes()).toEqual({});
    const env = await sluiceEnv({ databaseUrl: db.url, temporalAddress: temporal.address });
    // Started together: both set out to register at once (and take turns).
    const api = startRole('api', env);
    const worker = startRole('worker', env);
    await Promise.all([waitForHealthy(env.SLUICE_BASE_URL!, 90_000), worker.waitForOutput(/sluice worker: serving /, 90_000)]);
    expect(api.output()).toMatch(/sluice api: Temporal is ready; accepting triggers/);
    expect(await customAttributes()).toMatchObject(WANTED);

    const repo = await makeRepo(env);
    const res = await trigger(repo.webhookUrl);
    expect(res).toMatchObject({ status: 200, body: { status: 0 } });

    // The suite workflow was started with them, and is found by them.
    const client = new Client({ connection, namespace: 'default' });
    const found = await eventually(
      `a workflow with SluiceRepo = "${repo.label}"`,
      async () => {
        const ids: string[] = [];
        for await (const wf of client.workflow.list({ query: `SluiceRepo = "${repo.label}" AND SluiceBranch = "master"` })) ids.push(wf.workflowId);
        return ids.length > 0 && ids;
      },
      30_000,
    );
    expect(found).toEqual(expect.arrayContaining([expect.stringMatching(/^sluice-[0-9a-f]{8}-suite-/)]));
  });

  it('two processes registering at once both succeed', async () => {
    const namespace = await newNamespace();
    const env = await sluiceEnv({ databaseUrl: db.url, temporalAddress: temporal.address, namespace });
    const env2 = await withOwnPort(env);
    const first = startRole('api', env);
    const second = startRole('api', env2);
    await Promise.all([waitForHealthy(env.SLUICE_BASE_URL!, 90_000), waitForHealthy(env2.SLUICE_BASE_URL!, 90_000)]);
    expect(await customAttributes(namespace)).toEqual(WANTED);
    // One added them all; the other, taking its turn after, found them there. Neither failed.
    const added = [first, second].map((p) => p.output().match(/registered search attributes ([\w, ]+) in namespace/)?.[1]?.split(', ') ?? []);
    expect(added.map((names) => names.length).sort()).toEqual([0, Object.keys(WANTED).length]);
    expect(new Set(added.flat())).toEqual(new Set(Object.keys(WANTED)));
    for (const p of [first, second]) expect(p.output()).toMatch(/Temporal is ready; accepting triggers/);
  });

  it('many registrations at once on one namespace all succeed and leave one mapping', async () => {
    const namespace = await newNamespace();
    const config = { temporalAddress: temporal.address, temporalNamespace: namespace, databaseUrl: db.url };
    const results = await Promise.all(Array.from({ length: 8 }, () => prepareTemporal(config, { log: () => undefined, giveUpAfterMs: 60_000 })));
    expect(new Set(results.flatMap((r) => r.added))).toEqual(new Set(Object.keys(WANTED)));
    expect(await customAttributes(namespace)).toEqual(WANTED);
    // SQL visibility maps each attribute to a storage field: one field each, none twice (adds
    // racing each other leave some mapped twice about one run in four; Sluice's take turns).
    const aliases = (await connection.workflowService.describeNamespace({ namespace })).config?.customSearchAttributeAliases ?? {};
    expect(Object.values(aliases).sort()).toEqual(Object.keys(WANTED).sort());
    // And again, now that they are there: nothing to add.
    await expect(prepareTemporal(config, { log: () => undefined })).resolves.toEqual({ added: [] });
  });

  it('an attribute mapped twice (adds that raced, outside Sluice) is reported', async () => {
    const namespace = await newNamespace();
    const config = { temporalAddress: temporal.address, temporalNamespace: namespace, databaseUrl: db.url };
    await prepareTemporal(config, { log: () => undefined });
    // What a lost race leaves: the same name on a second field of its type.
    const aliases = (await connection.workflowService.describeNamespace({ namespace })).config?.customSearchAttributeAliases ?? {};
    const spare = Array.from({ length: 10 }, (_, i) => `Keyword${String(i + 1).padStart(2, '0')}`).find((f) => !(f in aliases))!;
    await connection.workflowService.updateNamespace({ namespace, config: { customSearchAttributeAliases: { [spare]: 'SluiceRepo' } } });

    const lines: string[] = [];
    await expect(prepareTemporal(config, { log: (line) => lines.push(line) })).resolves.toEqual({ added: [] });
    expect(lines).toEqual([expect.stringMatching(new RegExp(`^warning: search attribute SluiceRepo is mapped to 2 storage fields \\(.*${spare}.*\\)`))]);
  });

  it('the api waits for a Temporal that is not there yet, and accepts triggers only once the attributes are registered', async () => {
    const port = await freePort();
    const namespace = 'default';
    const env = await sluiceEnv({ databaseUrl: db.url, temporalAddress: `127.0.0.1:${port}`, namespace });
    const api = startRole('api', env);
    await api.waitForOutput(/sluice api: waiting for Temporal at 127\.0\.0\.1:\d+/, 60_000);

    const health = await fetch(`${env.SLUICE_BASE_URL}/healthz`);
    expect(health.status).toBe(503);
    expect(await health.json()).toEqual({ ok: false, missing: ['temporal', 'temporal-search-attributes'] });
    const repo = await makeRepo(env);
    const refused = await trigger(repo.webhookUrl);
    expect(refused.status).toBe(503);

    const late = await startBareTemporal({ port });
    try {
      await waitForHealthy(env.SLUICE_BASE_URL!, 60_000);
      expect(api.output()).toMatch(/registered search attributes .* in namespace default/);
      expect(await trigger(repo.webhookUrl)).toMatchObject({ status: 200, body: { status: 0 } });
    } finally {
      await api.stop();
      await late.stop();
    }
  });
});

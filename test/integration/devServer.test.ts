import { Connection } from '@temporalio/client';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import { msToTs } from '@temporalio/common/lib/time';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort, startDevServer, type DevServer } from '../../src/temporal/devServer';
import { devServersOf, stopLeftoverDevServers } from '../../src/temporal/leftover';
import { isAlive } from '../support/pids';
import { registerSearchAttributes } from '../../src/temporal/registerSearchAttributes';
import { SLUICE_SEARCH_ATTRIBUTES } from '../../src/workflows/searchAttributes';

// A real `temporal server start-dev` (in-memory, headless); needs the CLI (npm run temporal:install).
describe('Temporal dev server', () => {
  let server: DevServer | undefined;
  let connection: Connection;

  beforeAll(async () => {
    server = await startDevServer({ headless: true });
    connection = await Connection.connect({ address: server.address });
  });

  afterAll(async () => {
    await connection?.close();
    await server?.stop();
  });

  const wanted = Object.fromEntries(SLUICE_SEARCH_ATTRIBUTES.map((k) => [k.name, encodeSearchAttributeIndexedValueType(k.type)]));

  async function attributesOf(namespace: string) {
    return (await connection.operatorService.listSearchAttributes({ namespace })).customAttributes ?? {};
  }

  async function newNamespace(namespace: string) {
    await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
  }

  it('answers on loopback with the Sluice search attributes registered', async () => {
    expect(server!.address).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(server!.uiUrl).toBeUndefined();
    expect(await attributesOf('default')).toMatchObject(wanted);
    // Registering again on a server that has them is a no-op, not an error.
    await expect(registerSearchAttributes(connection, 'default')).resolves.toEqual([]);
  });

  it('registerSearchAttributes adds them where they are missing, once', async () => {
    await newNamespace('bare');
    expect(await attributesOf('bare')).toEqual({});
    await expect(registerSearchAttributes(connection, 'bare')).resolves.toHaveLength(SLUICE_SEARCH_ATTRIBUTES.length);
    expect(await attributesOf('bare')).toMatchObject(wanted);
    await expect(registerSearchAttributes(connection, 'bare')).resolves.toEqual([]);
  });

  it('registerSearchAttributes refuses an attribute that exists with another type', async () => {
    await newNamespace('clash');
    await connection.operatorService.addSearchAttributes({
      namespace: 'clash',
      searchAttributes: { SluiceSession: encodeSearchAttributeIndexedValueType('KEYWORD')! },
    });
    await expect(registerSearchAttributes(connection, 'clash')).rejects.toThrow(/SluiceSession .*another type/);
  });

  it('stop() ends the server', async () => {
    const { address } = server!;
    await connection.close();
    await server!.stop();
    server = undefined;
    await expect(Connection.connect({ address, connectTimeout: 500 })).rejects.toThrow();
  });
});

describe('a dev server an earlier start left running on its data directory', () => {
  let dataDir: string;
  const servers: DevServer[] = [];
  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'sluice-devserver-'));
  });
  afterAll(async () => {
    for (const s of servers) await s.stop().catch(() => undefined);
    await rm(dataDir, { recursive: true, force: true });
  });

  it('is stopped by the next start there, which then takes its ports', async () => {
    // As `npm start` runs it: persistent, in a group of its own; its parent then "dies" (never stops it).
    const [port, uiPort] = [await freePort(), await freePort()];
    const left = await startDevServer({ dataDir, port, uiPort, ownProcessGroup: true });
    servers.push(left);
    expect(await devServersOf(path.join(dataDir, 'temporal.db'))).toEqual([left.pid]);
    // Another data directory's server is none of its business.
    const other = await mkdtemp(path.join(os.tmpdir(), 'sluice-devserver-other-'));
    try {
      expect(await stopLeftoverDevServers(path.join(other, 'temporal.db'))).toEqual([]);
      expect(isAlive(left.pid)).toBe(true);
    } finally {
      await rm(other, { recursive: true, force: true });
    }

    const next = await startDevServer({ dataDir, port, uiPort, ownProcessGroup: true });
    servers.push(next);
    expect(isAlive(left.pid)).toBe(false);
    expect(await devServersOf(path.join(dataDir, 'temporal.db'))).toEqual([next.pid]);
    const connection = await Connection.connect({ address: next.address });
    try {
      await expect(connection.workflowService.describeNamespace({ namespace: 'default' })).resolves.toBeTruthy();
    } finally {
      await connection.close();
    }
  });
});

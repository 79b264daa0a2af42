import { Connection } from '@temporalio/client';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import { msToTs } from '@temporalio/common/lib/time';
import { startDevServer, type DevServer } from '../../src/temporal/devServer';
import { registerSearchAttributes } from '../../src/temporal/registerSearchAttributes';
import { SLUICE_SEARCH_ATTRIBUTES } from '../../src/temporal/searchAttributes';

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

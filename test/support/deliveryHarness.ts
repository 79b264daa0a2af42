/**
 * What a delivery integration test needs around it: its own database, a loopback receiver the
 * SSRF guard lets through, the worker's config for them, and the deliver dependencies; made
 * before the file's tests and removed after them. Its fields are set once `beforeAll` has run.
 */
import type { Config } from '../../src/config';
import { closeDefaultAgent } from '../../src/delivery/send';
import { parseAllowList } from '../../src/ip/ranges';
import { createTestDatabase, type TestDatabase } from './db';
import { postTestConfig } from './postSession';
import { startReceiver, type Receiver } from './receiver';

export interface DeliveryHarness {
  db: TestDatabase;
  rx: Receiver;
  config: Config;
  deps(): { pool: TestDatabase['pool']; config: Config; secretKey: Buffer; allow: Config['webhookAllow']; timeoutMs: number };
}

export function useDeliveryHarness(): DeliveryHarness {
  const h = {
    deps: () => ({ pool: h.db.pool, config: h.config, secretKey: h.config.secretKey, allow: h.config.webhookAllow, timeoutMs: 2_000 }),
  } as DeliveryHarness;
  beforeAll(async () => {
    h.db = await createTestDatabase();
    h.config = postTestConfig(h.db.url, { webhookAllow: parseAllowList('127.0.0.0/8') });
    h.rx = await startReceiver();
  });
  afterAll(async () => {
    await h.rx?.close();
    await closeDefaultAgent();
    await h.db?.drop();
  });
  return h;
}

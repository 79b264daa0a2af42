/**
 * Build secrets on the worker's side: read from PostgreSQL and unsealed by the activity that
 * needs them (runTest, collectResults), so no secret ever enters Temporal's history, and
 * applied to the test environment by one rule, written down here:
 *
 * - Secrets override the trigger's `env`: a secret is the operator's setting (admin token),
 *   the trigger's `env` comes from whoever holds the webhook URL, so a trigger can neither
 *   replace a secret's value nor redirect where a test sends it. Both override the clean base
 *   environment (PATH, HOME, ...), as the trigger's env always has (runTestFile.ts).
 * - A value that no longer unseals (SLUICE_SECRET_KEY was changed) is left out, and the test's
 *   output says which one; the test still runs.
 */
import type { Pool } from 'pg';
import { unseal } from '../crypto/sealed';
import { listSecrets } from '../db/secrets';

export interface BuildSecrets {
  /** Name → value. */
  values: Record<string, string>;
  /** Names whose value could not be unsealed. */
  unreadable: string[];
}

export async function loadBuildSecrets(pool: Pool, secretKey: Buffer, repoId: number): Promise<BuildSecrets> {
  const rows = await listSecrets(pool, repoId);
  const values: Record<string, string> = {};
  const unreadable: string[] = [];
  for (const row of rows) {
    try {
      values[row.name] = unseal(secretKey, row.value_sealed);
    } catch {
      unreadable.push(row.name);
    }
  }
  return { values, unreadable };
}

/** The environment a test gets on top of the clean base: the trigger's env, then secrets. */
export function buildEnvironment(triggerEnv: Record<string, string>, secrets: Record<string, string>): Record<string, string> {
  return { ...triggerEnv, ...secrets };
}

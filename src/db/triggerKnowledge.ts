/**
 * SQL for what the API must know to accept a trigger (api/triggerKnowledge.ts): the repository
 * a key names with its suites, and the rows of the branches a delivery names. Reads only: the
 * trigger's records are written later (db/intake.ts).
 */
import type { BranchState } from '../core/selection';
import type { Scm } from '../core/types';
import { Client } from 'pg';
import type { Db } from './transaction';

export interface TriggerRepo {
  id: number;
  org_name: string;
  name: string;
  scm: Scm;
  pull_request_only: boolean;
  branch_blacklist: string[];
  key_hash: Buffer;
  webhook_secret_sealed: string | null;
}

export interface TriggerSuite {
  id: number;
  branch: string;
  workers: number;
}

export interface TriggerTarget {
  repo: TriggerRepo;
  suites: TriggerSuite[];
}

/** A branch row as selection reads it, with when a trigger last set its visibility. */
export interface KnownBranch extends BranchState {
  hiddenAt: number | null;
}

const TARGET = `SELECT r.id, o.name AS org_name, r.name, r.scm, r.pull_request_only, r.branch_blacklist, r.key_hash, r.webhook_secret_sealed,
    coalesce((SELECT json_agg(json_build_object('id', s.id, 'branch', s.branch, 'workers', s.workers)) FROM suites s WHERE s.repo_id = r.id), '[]') AS suites
  FROM repos r JOIN orgs o ON o.id = r.org_id`;

type TargetRow = TriggerRepo & { suites: TriggerSuite[] };
const target = ({ suites, ...repo }: TargetRow): TriggerTarget => ({ repo, suites });

/** The repository a key hash names, with its suites: one round trip. */
export async function findTriggerTarget(db: Db, keyHash: Buffer): Promise<TriggerTarget | undefined> {
  const { rows } = await db.query<TargetRow>(`${TARGET} WHERE r.key_hash = $1`, [keyHash]);
  return rows[0] ? target(rows[0]) : undefined;
}

/** The repository with id `repoId`, with its suites. */
export async function findTriggerTargetById(db: Db, repoId: number): Promise<TriggerTarget | undefined> {
  const { rows } = await db.query<TargetRow>(`${TARGET} WHERE r.id = $1`, [repoId]);
  return rows[0] ? target(rows[0]) : undefined;
}

/** Every repository with its suites. */
export async function listTriggerTargets(db: Db): Promise<TriggerTarget[]> {
  return (await db.query<TargetRow>(TARGET)).rows.map(target);
}

interface BranchRowRead {
  repo_id: number;
  name: string;
  enabled: boolean;
  hidden: boolean;
  locked_visible: boolean;
  hidden_at: number | null;
}

const BRANCH = `SELECT repo_id, name, enabled, hidden, locked_visible, (extract(epoch FROM hidden_at) * 1000)::float8 AS hidden_at FROM branches`;
const branch = (r: BranchRowRead): KnownBranch => ({ enabled: r.enabled, hidden: r.hidden, lockedVisible: r.locked_visible, hiddenAt: r.hidden_at });

/** The rows of the named branches of a repository (a name without a row is not in the map). */
export async function findBranchStates(db: Db, repoId: number, names: readonly string[]): Promise<Map<string, KnownBranch>> {
  if (names.length === 0) return new Map();
  const { rows } = await db.query<BranchRowRead>(`${BRANCH} WHERE repo_id = $1 AND name = ANY($2::text[])`, [repoId, names]);
  return new Map(rows.map((r) => [r.name, branch(r)]));
}

/** Every branch row, by repository. */
export async function listBranchStates(db: Db): Promise<Map<number, Map<string, KnownBranch>>> {
  const { rows } = await db.query<BranchRowRead>(BRANCH);
  const out = new Map<number, Map<string, KnownBranch>>();
  for (const r of rows) {
    const repo = out.get(r.repo_id) ?? new Map<string, KnownBranch>();
    repo.set(r.name, branch(r));
    out.set(r.repo_id, repo);
  }
  return out;
}

/** The channel migration 027's triggers notify when a repository, suite or branch changes. */
const CHANNEL = 'sluice_trigger_knowledge';

/**
 * LISTENs on its own connection for changes of what triggers are decided from, connecting again
 * (after 0.5 s, growing to 5 s) whenever the connection is lost: `listening` on each connection,
 * `changed` on each notification, `lost` when a connection that listened ends. Returns the way
 * to stop.
 */
export function listenForTriggerKnowledge(databaseUrl: string, on: { changed(): void; listening(): void; lost(): void }): () => void {
  let stopped = false;
  let current: Client | undefined;
  let wake: (() => void) | undefined;
  void (async () => {
    let delayMs = 500;
    while (!stopped) {
      const client = new Client({ connectionString: databaseUrl });
      const ended = new Promise<void>((resolve) => {
        client.once('end', resolve);
        // Kept, not once: a lost connection may say so more than once, and an 'error' nobody
        // listens to would bring the process down.
        client.on('error', () => resolve());
      });
      let listened = false;
      try {
        await client.connect();
        current = client;
        client.on('notification', () => on.changed());
        await client.query(`LISTEN ${CHANNEL}`);
        delayMs = 500;
        listened = true;
        on.listening();
        await ended;
      } catch {
        // PostgreSQL away: try again
      } finally {
        if (listened) on.lost();
        current = undefined;
        await client.end().catch(() => undefined);
      }
      if (stopped) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delayMs);
        timer.unref();
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      delayMs = Math.min(delayMs * 2, 5_000);
    }
  })();
  return () => {
    stopped = true;
    wake?.();
    void current?.end().catch(() => undefined);
  };
}

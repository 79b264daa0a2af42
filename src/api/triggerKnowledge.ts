/**
 * What the API knows of repositories, suites and branches, to accept triggers with or without
 * PostgreSQL (issue 26). The whole is kept in memory: read at start, again whenever any process
 * changes it (LISTEN/NOTIFY, migration 027), and every `reloadMs` in case a notification was
 * missed. Triggers are decided from memory while it is current (issue 24: no read per trigger):
 * the LISTEN connection is up, no notification has come since the last read began, and no
 * change this process makes is under way (`changing`, around every request that may write:
 * a client that changes a branch and then triggers, through one API, always sees its change).
 * Otherwise each trigger reads PostgreSQL (two small reads, no write) and remembers what it
 * read, and when PostgreSQL does not answer, it is decided from memory as it is. A change made
 * through another process is seen once its notification arrives (on one machine, about a
 * millisecond after its commit). An API that never reached PostgreSQL knows nothing and says
 * so (KnowledgeUnavailable: the route answers 503 with Retry-After).
 *
 * A trigger's own word on a branch (a delete hides it, a push shows it) is recorded later by
 * its carrier, so until the branch's row says so (its `hidden_at`), the API lays that word over
 * what it reads: a push right after a delete still shows the branch again.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Pool } from 'pg';
import type { BranchUpdate } from '../core/intake';
import type { BranchState } from '../core/selection';
import {
  findBranchStates,
  findTriggerTarget,
  listBranchStates,
  listenForTriggerKnowledge,
  listTriggerTargets,
  type KnownBranch,
  type TriggerTarget,
} from '../db/triggerKnowledge';

/** A change is read this long after its notification, so a burst of them costs one read. */
const CHANGE_READ_DELAY_MS = 100;
/** The longest a change of this process (one request) keeps triggers reading PostgreSQL. */
const CHANGE_HOLD_MS = 60_000;

export class KnowledgeUnavailable extends Error {
  constructor(cause: unknown) {
    super('PostgreSQL does not answer and this API has not read the repositories yet', { cause });
  }
}

export interface TriggerKnowledge {
  /** The repository a key hash names, with its suites; undefined when no repository has that key. */
  target(keyHash: Buffer): Promise<TriggerTarget | undefined>;
  /** The named branches' rows as triggers should see them (a name without a row is missing). */
  branches(repoId: number, names: readonly string[]): Promise<Map<string, BranchState>>;
  /** A trigger accepted now says this of branches: seen by the next triggers until it is recorded. */
  noteBranchUpdates(repoId: number, updates: readonly BranchUpdate[], acceptedAt: number): void;
  /** Whether it can decide triggers without PostgreSQL (it has read everything once). */
  readonly loaded: boolean;
  /** What memory holds of the repository a key hash names: what a trigger gets while PostgreSQL is away. */
  remembered(keyHash: Buffer): { target: TriggerTarget; branches: ReadonlyMap<string, BranchState> } | undefined;
  /** Whether triggers are decided from memory alone now (it is as PostgreSQL holds it). */
  readonly current: boolean;
  /**
   * This process is about to change what triggers are decided from (a request that may write):
   * triggers read PostgreSQL until the returned `done` is called and memory is read again.
   */
  changing(): () => void;
  close(): void;
}

export interface KnowledgeOptions {
  /** Where to LISTEN for changes; none: only the periodic reads. */
  databaseUrl?: string;
  /** How often the whole is read again (changes made through another API process). */
  reloadMs?: number;
  /** A read that takes longer counts as PostgreSQL not answering. */
  readTimeoutMs?: number;
  /** How long a trigger's word on a branch is laid over what is read, at most (a record that never lands). */
  pendingMs?: number;
  log?: (msg: string, err?: unknown) => void;
}

export function triggerKnowledge(pool: Pool, opts: KnowledgeOptions = {}): TriggerKnowledge {
  const reloadMs = opts.reloadMs ?? 30_000;
  const readTimeoutMs = opts.readTimeoutMs ?? 2_000;
  const pendingMs = opts.pendingMs ?? 10 * 60_000;
  const byHash = new Map<string, TriggerTarget>();
  const branchRows = new Map<number, Map<string, KnownBranch>>();
  /** repoId → branch → the newest trigger's word not yet seen recorded. */
  const pending = new Map<number, Map<string, { hidden: boolean; at: number }>>();
  let loaded = false;
  let closed = false;
  // Memory is current while the LISTEN connection is up, no change of this process is under
  // way, and the last read began after every change heard of (`changes` counts them).
  let listening = false;
  let changes = 0;
  let readUpTo = -1;
  let underWay = 0;
  const isCurrent = () => listening && underWay === 0 && readUpTo === changes;

  const read = <T>(query: () => Promise<T>): Promise<T> => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`PostgreSQL did not answer within ${readTimeoutMs} ms`)), readTimeoutMs);
    });
    return Promise.race([query(), timeout]).finally(() => clearTimeout(timer));
  };

  async function reload(): Promise<void> {
    const upTo = changes;
    const [targets, branches] = await read(() => Promise.all([listTriggerTargets(pool), listBranchStates(pool)]));
    byHash.clear();
    for (const t of targets) byHash.set(t.repo.key_hash.toString('hex'), t);
    branchRows.clear();
    for (const [repoId, rows] of branches) branchRows.set(repoId, rows);
    loaded = true;
    readUpTo = upTo;
  }

  // One read at a time; asked for meanwhile, one more after it. A read due sooner stands: a
  // steady stream of notifications never puts the read off.
  let timer: NodeJS.Timeout | undefined;
  let dueAt = Infinity;
  let reading = false;
  let again = false;
  const schedule = (ms: number) => {
    if (closed) return;
    if (reading) {
      again = true;
      return;
    }
    if (Date.now() + ms >= dueAt) return;
    clearTimeout(timer);
    dueAt = Date.now() + ms;
    timer = setTimeout(() => {
      dueAt = Infinity;
      reading = true;
      reload().then(
        () => {
          reading = false;
          schedule(again ? 0 : reloadMs);
          again = false;
        },
        (err: unknown) => {
          reading = false;
          again = false;
          opts.log?.('could not read the repositories for triggers; trying again', err);
          schedule(loaded ? reloadMs : Math.min(reloadMs, 5_000));
        },
      );
    }, ms);
    timer.unref();
  };
  schedule(0);

  // Changes from any process: a notification asks for a read soon (a burst of them, one read);
  // on every (re)connection, a read of what changed while nobody listened.
  const changed = (ms: number) => {
    changes += 1;
    schedule(ms);
  };
  const stopListening = opts.databaseUrl
    ? listenForTriggerKnowledge(opts.databaseUrl, {
        changed: () => changed(CHANGE_READ_DELAY_MS),
        listening: () => {
          listening = true;
          changed(0);
        },
        lost: () => void (listening = false),
      })
    : () => undefined;

  /** What a trigger should see of a row: the trigger's pending word over it, until the row shows it recorded. */
  function seen(repoId: number, name: string, row: KnownBranch | undefined): BranchState | undefined {
    const mine = pending.get(repoId)?.get(name);
    if (mine && (Date.now() - mine.at > pendingMs || (row?.hiddenAt != null && Math.round(row.hiddenAt) >= mine.at))) {
      pending.get(repoId)!.delete(name);
      return row;
    }
    if (!mine) return row;
    // As the record will write it: hiding leaves a branch locked visible alone.
    const base = row ?? { enabled: true, hidden: false, lockedVisible: false, hiddenAt: null };
    return { ...base, hidden: mine.hidden && !base.lockedVisible };
  }

  /** The named branches' rows from PostgreSQL, remembered; from memory when it does not answer. */
  async function readBranches(repoId: number, names: readonly string[]): Promise<Map<string, KnownBranch>> {
    try {
      const rows = await read(() => findBranchStates(pool, repoId, names));
      const known = branchRows.get(repoId) ?? new Map<string, KnownBranch>();
      for (const name of names) {
        const row = rows.get(name);
        if (row) known.set(name, row);
        else known.delete(name);
      }
      branchRows.set(repoId, known);
      return rows;
    } catch (err) {
      if (!loaded) throw new KnowledgeUnavailable(err);
      return branchRows.get(repoId) ?? new Map();
    }
  }

  return {
    get loaded() {
      return loaded;
    },

    remembered(keyHash) {
      const target = byHash.get(keyHash.toString('hex'));
      return target && { target, branches: branchRows.get(target.repo.id) ?? new Map() };
    },

    get current() {
      return isCurrent();
    },

    changing() {
      underWay += 1;
      changes += 1;
      let done = false;
      // A request whose answer never comes (a client gone mid-request) still ends its hold.
      const expiry = setTimeout(() => finish(), CHANGE_HOLD_MS);
      expiry.unref();
      const finish = () => {
        if (done) return;
        done = true;
        clearTimeout(expiry);
        underWay -= 1;
        changed(0);
      };
      return finish;
    },

    async target(keyHash) {
      const key = keyHash.toString('hex');
      if (isCurrent()) return byHash.get(key);
      let found: TriggerTarget | undefined;
      try {
        found = await read(() => findTriggerTarget(pool, keyHash));
      } catch (err) {
        if (!loaded) throw new KnowledgeUnavailable(err);
        return byHash.get(key);
      }
      if (found) byHash.set(key, found);
      else byHash.delete(key);
      return found;
    },

    async branches(repoId, names) {
      const rows = isCurrent() ? (branchRows.get(repoId) ?? new Map<string, KnownBranch>()) : await readBranches(repoId, names);
      const out = new Map<string, BranchState>();
      for (const name of names) {
        const state = seen(repoId, name, rows.get(name));
        if (state) out.set(name, { enabled: state.enabled, hidden: state.hidden, lockedVisible: state.lockedVisible });
      }
      return out;
    },

    noteBranchUpdates(repoId, updates, acceptedAt) {
      if (updates.length === 0) return;
      const mine = pending.get(repoId) ?? new Map<string, { hidden: boolean; at: number }>();
      for (const u of updates) mine.set(u.branch, { hidden: u.hidden, at: acceptedAt });
      pending.set(repoId, mine);
    },

    close() {
      closed = true;
      clearTimeout(timer);
      dueAt = Infinity;
      stopListening();
    },
  };
}

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Every request of `scope` that may write (not GET, HEAD or OPTIONS) holds the knowledge
 * `changing` until it has answered: a trigger that follows a change made through this API is
 * decided from what PostgreSQL holds after it. Taken just before the handler (preHandler), after
 * the door (api/access/guard.ts), so a request refused there holds nothing: nobody without a
 * credential can send triggers back to PostgreSQL.
 */
export function holdWhileWriting(scope: FastifyInstance, knowledge: TriggerKnowledge): void {
  const holds = new WeakMap<FastifyRequest, () => void>();
  scope.addHook('preHandler', async (request) => {
    if (!READS.has(request.method)) holds.set(request, knowledge.changing());
  });
  const release = async (request: FastifyRequest) => {
    holds.get(request)?.();
    holds.delete(request);
  };
  scope.addHook('onResponse', release);
  scope.addHook('onRequestAbort', release);
}

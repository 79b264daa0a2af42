/**
 * `received` ahead of the suite (issue 49). Once Temporal holds a batch of triggers (the API has
 * answered them), the API records their sessions itself and sends their `received`, when
 * PostgreSQL answers. The suite's workflow still records each one (idempotent by intake key,
 * db/intake.ts), and sends `received` only of those it wrote itself (activities/received.ts):
 * whoever records a session announces it. This is a head start, not a second guarantee: a burst
 * that keeps the worker's workflow thread busy no longer holds up `received`, and when the API
 * cannot record (PostgreSQL away, a backlog) the suite does, as before.
 *
 * Order. Session ids follow a suite's arrival order (CI squash builds the highest id), so each
 * suite's batches are recorded one after another, in the order Temporal took them. A suite with
 * a batch the API could not record (or whose signal's fate is unknown) is left to its workflow
 * from then on, until the newest trigger so left is recorded there: the suite records in order,
 * so by then every earlier one is, and no later trigger can get a lower id.
 */
import type { Intake } from '../core/intake';

export interface HeraldDeps {
  /** Records intakes in one transaction; every session's id, and those this call wrote. */
  record(intakes: readonly Intake[]): Promise<{ ids: Map<string, number>; fresh: number[] }>;
  /** Whether the session of this intake key is recorded (by anyone). */
  recorded(key: string): Promise<boolean>;
  /** Sends `received` of these sessions; those a receiver still needs (their lanes must carry them). */
  announce(sessionIds: readonly number[]): Promise<number[]>;
  /** Wakes an unsettled session's `received` lane in its suite (signal retryReceived). */
  wake(suiteId: number, sessionId: number): Promise<void>;
  /** Captures the context (the trace) active now, for `received` sent later; default none. */
  capture?: () => Within;
  /** Transactions of records under way at once, and batches of `received`. Default 4. */
  concurrency?: number;
  /** Intakes waiting at most, over all suites; beyond it a suite is left to its workflow. Default 2,000. */
  maxBacklog?: number;
  /** How often at most a suite left to its workflow asks whether it may be taken back. Default 1 s. */
  recheckMs?: number;
}

export interface Herald {
  /** A batch of `suiteId`'s intakes Temporal took, in the order it took them. */
  took(suiteId: number, intakes: readonly Intake[]): void;
  /** A batch whose signal may or may not have landed: the suite is left to its workflow. */
  lost(suiteId: number, intakes: readonly Intake[]): void;
  /** Sends `received` of sessions of `suiteId` the API recorded on its own (a rebuild). */
  announce(suiteId: number, sessionIds: readonly number[]): void;
  /** Waits (a few seconds at most) for what is under way; takes nothing more. */
  close(): Promise<void>;
}

interface SuiteState {
  queue: Intake[];
  recording: boolean;
  /** Left to its workflow until this key (its newest such trigger) is recorded there. */
  leftUntil: string | null;
  checkedAt: number;
  /** While the API asks whether it may take the suite back: what arrived meanwhile. */
  held: Intake[] | null;
}

/** Runs `fn` in a context captured earlier. */
export type Within = <T>(fn: () => T) => T;
const here: Within = (fn) => fn();

/** Intakes recorded together at most (more when one suite's batch is bigger). */
const RECORD_BATCH = 200;

/** Sessions announced together at most. */
const SEND_BATCH = 25;

const lastKey = (intakes: readonly Intake[]): string | null => intakes.flatMap((i) => i.sessions.map((s) => s.key)).at(-1) ?? null;

export function createHerald(deps: HeraldDeps): Herald {
  const concurrency = deps.concurrency ?? 4;
  const maxBacklog = deps.maxBacklog ?? 2_000;
  const recheckMs = deps.recheckMs ?? 1_000;
  const suites = new Map<number, SuiteState>();
  /** The trace each intake came in (its trigger's request): its `received` goes out in it. */
  const contexts = new WeakMap<Intake, Within>();
  const ready: number[] = [];
  let backlog = 0;
  let recording = 0;
  let closed = false;
  const underWay = new Set<Promise<unknown>>();

  const track = (p: Promise<unknown>) => {
    underWay.add(p);
    void p.finally(() => underWay.delete(p));
  };
  const stateOf = (suiteId: number): SuiteState => {
    let s = suites.get(suiteId);
    if (!s) suites.set(suiteId, (s = { queue: [], recording: false, leftUntil: null, checkedAt: 0, held: null }));
    return s;
  };
  const forget = (suiteId: number, s: SuiteState) => {
    if (!s.recording && s.held === null && s.queue.length === 0 && s.leftUntil === null) suites.delete(suiteId);
  };

  /** From now on the suite's workflow records `intakes` and all that waits here for it. */
  const leave = (s: SuiteState, intakes: readonly Intake[]) => {
    const waiting = [...s.queue, ...(s.held ?? []), ...intakes];
    backlog -= s.queue.length + (s.held?.length ?? 0);
    s.queue = [];
    if (s.held !== null) s.held = [];
    s.leftUntil = lastKey(waiting) ?? s.leftUntil;
  };

  const queue = (suiteId: number, s: SuiteState, intakes: readonly Intake[]) => {
    if (intakes.length === 0) return;
    s.queue.push(...intakes);
    backlog += intakes.length;
    if (!s.recording) ready.push(suiteId);
    pump();
  };

  /**
   * A suite left to its workflow, with more arriving: if its newest trigger so left is recorded
   * by now, so is every earlier one, and what arrived since is the API's to record again.
   */
  const askBack = (suiteId: number, s: SuiteState, intakes: readonly Intake[]) => {
    const key = s.leftUntil!;
    s.checkedAt = Date.now();
    s.held = [...intakes];
    backlog += intakes.length;
    track(
      deps
        .recorded(key)
        .catch(() => false)
        .then((yes) => {
          const held = s.held ?? [];
          s.held = null;
          backlog -= held.length;
          if (yes && s.leftUntil === key) {
            s.leftUntil = null;
            queue(suiteId, s, held);
          } else leave(s, held);
          forget(suiteId, s);
        }),
    );
  };

  /**
   * Group commit: what waits, of every suite not being written, goes in one transaction (each
   * suite's intakes in order), a few transactions at once: a burst over 100 branches is a few
   * statements, not 100.
   */
  const pump = () => {
    while (recording < concurrency && ready.length > 0) {
      const taken: { suiteId: number; s: SuiteState; batch: Intake[] }[] = [];
      let size = 0;
      while (ready.length > 0 && size < RECORD_BATCH) {
        const suiteId = ready.shift()!;
        const s = suites.get(suiteId);
        if (!s || s.recording || s.queue.length === 0) continue;
        const batch = s.queue;
        s.queue = [];
        backlog -= batch.length;
        s.recording = true;
        size += batch.length;
        taken.push({ suiteId, s, batch });
      }
      if (taken.length === 0) return;
      recording += 1;
      track(
        deps
          .record(taken.flatMap((t) => t.batch))
          .then(({ ids, fresh }) => {
            const wrote = new Set(fresh);
            for (const { suiteId, batch } of taken) {
              for (const intake of batch) {
                const mine = intake.sessions.map((x) => ids.get(x.key)).filter((id): id is number => id !== undefined && wrote.has(id));
                send(mine, suiteId, contexts.get(intake));
              }
            }
          })
          .catch(() => {
            // PostgreSQL did not take them: each suite's workflow will, and all that came after
            // (unless the suite is left already, for a newer one).
            for (const { s, batch } of taken) {
              if (s.leftUntil !== null) continue;
              s.queue.unshift(...batch);
              backlog += batch.length;
              leave(s, []);
            }
          })
          .finally(() => {
            recording -= 1;
            for (const { suiteId, s } of taken) {
              s.recording = false;
              if (s.queue.length > 0) ready.push(suiteId);
              forget(suiteId, s);
            }
            pump();
          }),
      );
    }
  };

  /** Sessions to announce, oldest first, with their suite (to wake when a receiver did not get it). */
  const toSend: { sessionId: number; suiteId: number; within: Within }[] = [];
  let sending = 0;
  const send = (sessionIds: readonly number[], suiteId: number, within: Within = here) => {
    toSend.push(...sessionIds.map((sessionId) => ({ sessionId, suiteId, within })));
    drainSends();
  };
  const drainSends = () => {
    // Whatever waits goes together (a burst over many suites is many batches of one): each
    // batch reads its sessions and webhooks once (delivery/received.ts announceAll), in the
    // trace of its first trigger.
    while (sending < concurrency && toSend.length > 0) {
      const batch = toSend.splice(0, SEND_BATCH);
      sending += 1;
      const ids = batch.map((b) => b.sessionId);
      track(
        batch[0]!
          .within(() => deps.announce(ids))
          .catch(() => ids)
          .then(async (unsettled) => {
            // A session whose receiver did not get it: its lane retries on schedule, woken now.
            for (const { sessionId, suiteId } of batch) {
              if (unsettled.includes(sessionId)) await deps.wake(suiteId, sessionId).catch(() => undefined);
            }
          })
          .finally(() => {
            sending -= 1;
            drainSends();
          }),
      );
    }
  };

  return {
    took(suiteId, intakes) {
      if (closed || intakes.length === 0) return;
      if (deps.capture) for (const intake of intakes) contexts.set(intake, deps.capture());
      const s = stateOf(suiteId);
      if (backlog + intakes.length > maxBacklog) return leave(s, intakes);
      if (s.held !== null) {
        s.held.push(...intakes);
        backlog += intakes.length;
      } else if (s.leftUntil === null) queue(suiteId, s, intakes);
      else if (Date.now() - s.checkedAt >= recheckMs) askBack(suiteId, s, intakes);
      else leave(s, intakes);
    },
    lost(suiteId, intakes) {
      if (closed) return;
      leave(stateOf(suiteId), intakes);
    },
    announce(suiteId, sessionIds) {
      if (!closed) send(sessionIds, suiteId, deps.capture?.());
    },
    async close() {
      closed = true;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...underWay]),
        new Promise((resolve) => (timer = setTimeout(resolve, 5_000))), // a PostgreSQL that hangs does not hold the API's exit
      ]);
      clearTimeout(timer);
    },
  };
}

/**
 * Signals between the API, the suite workflow and its session workflows, plus the workflow id
 * scheme. Safe to import outside workflow code (the API uses them to signal-with-start).
 */
import { defineSignal } from '@temporalio/workflow';
import type { FirstFailure, WorkersReady } from '../activities/types';
import type { BuildSetup } from '../core/buildSetup';
import type { ResolvedProfile } from '../core/profiles';
import { FIRST_FAIL_SIGNAL, RETRY_RECEIVED_SIGNAL, WORKERS_READY_SIGNAL } from '../core/signalNames';
import type { EnqueueRequest as BuildEnqueueRequest, Intake } from '../core/intake';
import type { Counts, SessionStatus } from '../core/types';

/**
 * The `enqueue` signal's payload: the part of core's EnqueueRequest the suite needs (recorded in histories: keep its shape).
 * `traceparent` is there only when tracing is on, and only its interceptor reads it (workflows/tracing.ts).
 */
export type EnqueueRequest = Pick<BuildEnqueueRequest, 'sessionId' | 'intake' | 'queuePosition' | 'traceparent'>;

/** API → a repository's intake workflow: deliveries that build nothing, to record in order. */
export type IntakeRequest = Intake;

export interface SuiteWorkflowInput {
  suiteId: number;
  /** `org/repo @ branch`, shown in the Temporal UI. */
  label: string;
  /** Carried over continue-as-new: sessions waiting for their turn, in order. */
  waiting?: number[];
  /** Carried over continue-as-new: the session building now, if any. */
  running?: number | null;
  /** Carried over continue-as-new: waiting sessions whose workflow already runs (see retryReceivedSignal). */
  started?: number[];
  /** Carried over continue-as-new: when each waiting session joined the queue (epoch seconds). */
  queuedAt?: [number, number][];
  /** Carried over continue-as-new: the waiting sessions in the order they arrived (CI squash builds the last). */
  arrivals?: number[];
  /** Continue-as-new past this many history events (tests lower it; Temporal may suggest sooner). */
  historyLimit?: number;
  /** How often to make sure the running session's workflow still exists (tests lower it). */
  livenessMs?: number;
}

export interface SessionWorkflowInput {
  sessionId: number;
  suiteId: number;
  /** Set for one profile's session of a plan: it builds at once, that commit, that profile. */
  part?: PlanPart;
  /** Started with its turn already given: no `go` signal to wait for. */
  go?: boolean;
  /** Stopped while it waited in the queue, by whom: it ends at once, never having built. */
  stoppedBy?: string;
  /** When it joined its suite's queue (epoch seconds), its workflow starting later. */
  queuedAt?: number;
}

/** A batch of sessions CI squash ended while they waited (workflows/squashed.ts). */
export interface SquashedWorkflowInput {
  suiteId: number;
  sessionIds: number[];
  /** The newer session of the suite that builds instead. */
  into: number;
}

export interface PlanPart {
  commitId: string;
  profile: ResolvedProfile;
  /** The plan's setup (hooks, cache, services, artifacts), as its parent resolved it. Absent in older histories: none. */
  setup?: BuildSetup;
}

/** API → repository intake: deliveries that build nothing but leave records (workflows/intake.ts). */
export const recordManySignal = defineSignal<[IntakeRequest[]]>('recordMany');
/** API → suite: a new session joins the suite's queue. */
export const enqueueSignal = defineSignal<[EnqueueRequest]>('enqueue');
/** API → suite: sessions that arrived together join the queue, in this order (one call for many triggers). */
export const enqueueManySignal = defineSignal<[EnqueueRequest[]]>('enqueueMany');
/**
 * Worker → suite: a queued session whose `received` did not reach every receiver at once. The
 * suite starts its workflow now, so that its delivery lane retries on schedule rather than
 * when the session's turn comes.
 */
export const retryReceivedSignal = defineSignal<[{ sessionId: number }]>(RETRY_RECEIVED_SIGNAL);
/** API → suite: stop a session that may still be waiting for its turn, with no workflow yet. */
export const stopQueuedSignal = defineSignal<[{ sessionId: number; stoppedBy: string }]>('stopQueued');
/** Suite → session: your turn; build now. */
export const goSignal = defineSignal('go');
/** Session → suite: the session no longer needs the suite (built, stopped or squashed). */
export const buildDoneSignal = defineSignal<[{ sessionId: number }]>('buildDone');
/**
 * Plan part → its parent: the part's outcome, as recorded, sent before it waits for its
 * deliveries. The parent sums its parts up from these, so a receiver that is down (its
 * retries may last a day) holds up no plan.
 */
export const partDoneSignal = defineSignal<[{ sessionId: number; status: SessionStatus; counts: Counts }]>('partDone');
/** Suite → session: a newer session of the suite builds instead of you (CI squash). */
export const squashedSignal = defineSignal<[{ into: number }]>('squashed');
/** API → session: stop, whether queued or building. */
export const stopSignal = defineSignal<[{ stoppedBy: string }]>('stop');

/** Runner → session: the build's first failing file was recorded, with the counts as they stood then. */
export const firstFailSignal = defineSignal<[FirstFailure]>(FIRST_FAIL_SIGNAL);
/** Runner → session: the first worker is set up (the rendezvous), with the setup's timing keys: tests start. */
export const workersReadySignal = defineSignal<[WorkersReady]>(WORKERS_READY_SIGNAL);

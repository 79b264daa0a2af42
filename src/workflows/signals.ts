/**
 * Signals between the API, the suite workflow and its session workflows, plus the workflow id
 * scheme. Safe to import outside workflow code (the API uses them to signal-with-start).
 */
import { defineSignal } from '@temporalio/workflow';
import type { FirstFailure } from '../activities/types';
import type { ResolvedProfile } from '../core/profiles';
import { FIRST_FAIL_SIGNAL } from '../core/signalNames';
import type { EnqueueRequest as BuildEnqueueRequest } from '../core/types';

/** The `enqueue` signal's payload: the part of core's EnqueueRequest the suite needs (recorded in histories: keep its shape). */
export type EnqueueRequest = Pick<BuildEnqueueRequest, 'sessionId' | 'queuePosition'>;

export interface SuiteWorkflowInput {
  suiteId: number;
  /** `org/repo @ branch`, shown in the Temporal UI. */
  label: string;
  /** Carried over continue-as-new: sessions waiting for their turn, in order. */
  waiting?: number[];
  /** Carried over continue-as-new: the session building now, if any. */
  running?: number | null;
  /** Continue-as-new past this many history events (tests lower it; Temporal may suggest sooner). */
  historyLimit?: number;
}

export interface SessionWorkflowInput {
  sessionId: number;
  suiteId: number;
  /** Set for one profile's session of a plan: it builds at once, that commit, that profile. */
  part?: PlanPart;
  /** Started with its turn already given (the suite was idle): no `go` signal to wait for. */
  go?: boolean;
}

export interface PlanPart {
  commitId: string;
  profile: ResolvedProfile;
}

/** API → suite: a new session joins the suite's queue. */
export const enqueueSignal = defineSignal<[EnqueueRequest]>('enqueue');
/** Suite → session: your turn; build now. */
export const goSignal = defineSignal('go');
/** Session → suite: the session no longer needs the suite (built, stopped or squashed). */
export const buildDoneSignal = defineSignal<[{ sessionId: number }]>('buildDone');
/** Suite → session: a newer session of the suite builds instead of you (CI squash). */
export const squashedSignal = defineSignal<[{ into: number }]>('squashed');
/** API → session: stop, whether queued or building. */
export const stopSignal = defineSignal<[{ stoppedBy: string }]>('stop');

/** Runner → session: the build's first failing file was recorded, with the counts as they stood then. */
export const firstFailSignal = defineSignal<[FirstFailure]>(FIRST_FAIL_SIGNAL);

export const suiteWorkflowId = (suiteId: number): string => `suite-${suiteId}`;
export const sessionWorkflowId = (sessionId: number): string => `session-${sessionId}`;

/**
 * Signals between the API, the suite workflow and its session workflows, plus the workflow id
 * scheme. Safe to import outside workflow code (the API uses them to signal-with-start).
 */
import { defineSignal } from '@temporalio/workflow';

export interface EnqueueRequest {
  sessionId: number;
  queuePosition: 'tail' | 'head';
}

export interface SuiteWorkflowInput {
  suiteId: number;
  /** `org/repo @ branch`, shown in the Temporal UI. */
  label: string;
  /** Carried over continue-as-new: sessions waiting for their turn, in order. */
  waiting?: number[];
  /** Carried over continue-as-new: the session building now, if any. */
  running?: number | null;
}

export interface SessionWorkflowInput {
  sessionId: number;
  suiteId: number;
}

/** API → suite: a new session joins the suite's queue. */
export const enqueueSignal = defineSignal<[EnqueueRequest]>('enqueue');
/** Suite → session: your turn; build now. */
export const goSignal = defineSignal('go');
/** Session → suite: the build part is over; the next session may start. */
export const buildDoneSignal = defineSignal<[{ sessionId: number }]>('buildDone');

export const suiteWorkflowId = (suiteId: number): string => `suite-${suiteId}`;
export const sessionWorkflowId = (sessionId: number): string => `session-${sessionId}`;

/**
 * Triggers in /metrics: what became of each (build, skip, drop; ignore for a delivery Sluice
 * does not act on; unavailable when Temporal did not take it; refused for a signature that did
 * not verify) and why, as a reason code. The
 * selection rules (core/selection.ts) give reasons in words, with names in them; a code is
 * what is left of a reason once its quoted names are gone, matched against the rules' words,
 * so the label stays bounded whatever a branch is called (test/unit/metrics.test.ts runs every
 * rule through it).
 */
import { triggers } from './registry';

export type TriggerDecision = 'build' | 'skip' | 'drop' | 'ignore' | 'unavailable' | 'refused';

const CODES: [RegExp, string][] = [
  [/is blacklisted/, 'blacklisted'],
  [/is switched off/, 'switched-off'],
  [/no suite for branch/, 'no-suite'],
  [/tags build only in a suite/, 'tag-no-suite'],
  [/^tag\b.*deleted/, 'tag-deleted'],
  [/^branch\b.*deleted/, 'branch-deleted'],
  [/pull-request-only/, 'pull-request-only'],
  [/pull request \w+: nothing new/, 'pull-request-closed'],
  [/skip tag/, 'skip-tag'],
];

/** The code of a selection reason; `other` for words no rule says. */
export function triggerReasonCode(reason: string): string {
  const words = reason.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  return CODES.find(([re]) => re.test(words))?.[1] ?? 'other';
}

export function countTrigger(provider: string, decision: TriggerDecision, reason: string | null = null): void {
  triggers.inc({ provider, decision, reason: reason !== null && (decision === 'skip' || decision === 'drop') ? triggerReasonCode(reason) : '' });
}

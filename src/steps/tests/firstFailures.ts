/**
 * What the runner that lists a build's files knows about which will fail first (issue 49), for
 * core/firstFailures.ts to order them by: the files the change touched (since the suite's last
 * built commit when the tree descends from it, else the commit's own change), the test files
 * that read them by the newest dependency map (a profile with `affected:`), and the suite's
 * recent failures. Not knowing one of these only costs the order: the build runs the same files.
 */
import { selectAffected } from '../../core/affected';
import type { FirstFailureHints } from '../../core/firstFailures';
import type { Scm } from '../../core/types';
import { withTreeChanges, type ChangedFiles } from '../checkout/changes';
import type { BuildRecords } from '../records';
import { ancestorMap } from './selection';

export interface HintsInput {
  sessionId: number;
  suiteId: number;
  profileName: string;
  workdir: string;
  scm: Scm;
  /** The test files that run. */
  paths: readonly string[];
  /** Whether the profile keeps dependency maps (`affected:`). */
  maps: boolean;
  signal?: AbortSignal;
}

export async function firstFailureHints(records: BuildRecords, input: HintsInput): Promise<FirstFailureHints> {
  const history = await records.failureHistory(input.suiteId, input.profileName, [...input.paths]);
  const affectedBy = new Map<string, readonly string[]>();
  const hints: FirstFailureHints = { changed: new Set(), affectedBy, failures: history.failures };
  try {
    await withTreeChanges(input.scm, input.workdir, input.signal, async (changes) => {
      const last = history.lastBuiltCommit;
      let changed: ChangedFiles | null = last !== null && (await changes.isAncestor(last)) ? await changes.changedSince(last) : null;
      // Not a descendant of the last build, or that very commit again (a rebuild): its own change.
      if (changed === null || changed.changed.length === 0) {
        const parent = await changes.parent();
        changed = parent === null ? null : await changes.changedSince(parent);
      }
      if (changed === null) return;
      hints.changed = new Set(changed.changed);
      if (!input.maps || changed.changed.length === 0) return;
      const map = await ancestorMap(records, input.sessionId, input.profileName, changes);
      const selection = selectAffected({ testFiles: input.paths, changed: changed.changed, addedOrRemoved: changed.addedOrRemoved, map });
      if (selection.full) return;
      for (const [test, reason] of selection.run) if (reason.kind === 'depends') affectedBy.set(test, reason.on);
    });
  } catch (err) {
    // Stopped: the build says so. Anything else: the order goes by the history alone.
    if (input.signal?.aborted) throw err;
  }
  return hints;
}

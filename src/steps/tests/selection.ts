/**
 * Which of a build's test files run, for a profile with `affected:` (issue 40), on the runner
 * that has the tree: everything (and maybe a mapping run) when the workflow said so; else the
 * newest map of an ancestor of the build's commit, the files changed since that commit, and the
 * rule (core/affected.ts). The build's record says what was decided and why.
 *
 * The changes are taken from the map's commit, not only from the merge base: whatever the
 * default branch changed after the map was recorded can have changed what its tests read too.
 */
import { selectAffected, selectedSummary, type AffectedSummary, type DependencyMap } from '../../core/affected';
import type { AffectedPlan } from '../../activities/types';
import type { Scm } from '../../core/types';
import { withTreeChanges, type ChangedFiles } from '../checkout/changes';
import type { MapCandidate } from '../../db/dependencyMaps';
import type { BuildRecords } from '../records';

export interface AffectedChoice {
  /** The files to run, in the order given. */
  run: string[];
  /** The files left out, not affected. */
  skipped: string[];
  /** The lanes trace each file and record the map. */
  mapping: boolean;
  summary: AffectedSummary;
}

export async function chooseAffected(
  records: BuildRecords,
  input: { sessionId: number; profileName: string; commitId: string; workdir: string; scm: Scm; paths: string[]; plan: AffectedPlan; signal?: AbortSignal },
): Promise<AffectedChoice> {
  const { plan, paths } = input;
  const all = (summary: AffectedSummary, mapping = false): AffectedChoice => ({ run: paths, skipped: [], mapping, summary });
  if (plan.fullBecause !== null) {
    const mapping = plan.mayMap && (await records.startMap(input.sessionId, input.commitId, input.profileName, plan.settings.map_every));
    return all(mapping ? { mode: 'map', commit: input.commitId } : { mode: 'full', reason: plan.fullBecause }, mapping);
  }
  const candidates = await records.mapCandidates(input.sessionId, input.profileName);
  let found: { candidate: MapCandidate; changes: ChangedFiles } | null;
  try {
    found = await withTreeChanges(input.scm, input.workdir, input.signal, async (changes) => {
      for (const c of candidates) {
        if (await changes.isAncestor(c.commit)) return { candidate: c, changes: await changes.changedSince(c.commit) };
      }
      return null;
    });
  } catch (err) {
    // Stopped: the build says so. Anything else only costs the selection: everything runs.
    if (input.signal?.aborted) throw err;
    return all({ mode: 'full', reason: `could not tell what changed since the map (${err instanceof Error ? err.message : String(err)})` });
  }
  const stored = found ? await records.loadMap(input.sessionId, found.candidate.mapSession) : null;
  const map: DependencyMap | null = stored ? { commit: stored.commit, files: new Map(stored.files.map((f) => [f.path, f])) } : null;
  const selection = selectAffected({
    testFiles: paths,
    changed: found?.changes.changed ?? [],
    addedOrRemoved: found?.changes.addedOrRemoved ?? [],
    map,
    alwaysFull: plan.settings.always_full,
  });
  if (selection.full) return all({ mode: 'full', reason: selection.reason });
  return { run: [...selection.run.keys()], skipped: selection.skipped, mapping: false, summary: selectedSummary(selection) };
}

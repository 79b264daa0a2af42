/**
 * Which of a build's test files run, for a profile with `affected:` (issue 40), on the runner
 * that has the tree: everything (and maybe a mapping run) when the workflow said so; else the
 * newest map of an ancestor of the build's commit, the files changed since that commit, and the
 * rule (core/affected.ts). The build's record says what was decided and why.
 *
 * The changes are taken from the map's commit, not only from the merge base: whatever the
 * default branch changed after the map was recorded can have changed what its tests read too.
 * So a default-branch build maps again when what changed since the map would send every pull
 * request to a full run (mapIsStale).
 */
import { needsFullRun, selectAffected, selectedSummary, type AffectedSummary, type DependencyMap } from '../../core/affected';
import type { AffectedPlan } from '../../activities/types';
import type { Scm } from '../../core/types';
import { withTreeChanges, type ChangedFiles, type TreeChanges } from '../checkout/changes';
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

type Input = { sessionId: number; profileName: string; commitId: string; workdir: string; scm: Scm; paths: string[]; plan: AffectedPlan; signal?: AbortSignal };

export async function chooseAffected(records: BuildRecords, input: Input): Promise<AffectedChoice> {
  const { plan, paths } = input;
  const all = (summary: AffectedSummary, mapping = false): AffectedChoice => ({ run: paths, skipped: [], mapping, summary });
  if (plan.fullBecause !== null) {
    const mapping = plan.mayMap && (await records.startMap(input.sessionId, input.commitId, input.profileName, plan.settings.map_every, await mapIsStale(records, input)));
    return all(mapping ? { mode: 'map', commit: input.commitId } : { mode: 'full', reason: plan.fullBecause }, mapping);
  }
  let found: AncestorMap | null;
  try {
    found = await newestAncestorMap(records, input);
  } catch (err) {
    // Stopped: the build says so. Anything else only costs the selection: everything runs.
    if (input.signal?.aborted) throw err;
    return all({ mode: 'full', reason: `could not tell what changed since the map (${err instanceof Error ? err.message : String(err)})` });
  }
  const map = found ? await loadMap(records, input.sessionId, found.candidate.mapSession) : null;
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

type AncestorMap = { candidate: MapCandidate; changes: ChangedFiles };

async function loadMap(records: BuildRecords, sessionId: number, mapSession: number): Promise<DependencyMap | null> {
  const stored = await records.loadMap(sessionId, mapSession);
  return stored ? { commit: stored.commit, files: new Map(stored.files.map((f) => [f.path, f])) } : null;
}

/** The newest map recorded at an ancestor of the tree's commit (or at it), loaded; null: none. */
export async function ancestorMap(records: BuildRecords, sessionId: number, profileName: string, changes: TreeChanges): Promise<DependencyMap | null> {
  for (const c of await records.mapCandidates(sessionId, profileName)) {
    if (await changes.isAncestor(c.commit)) return loadMap(records, sessionId, c.mapSession);
  }
  return null;
}

/** The newest map recorded at an ancestor of the tree's commit (or at it), and what changed since. */
async function newestAncestorMap(records: BuildRecords, input: Input): Promise<AncestorMap | null> {
  const candidates = await records.mapCandidates(input.sessionId, input.profileName);
  if (candidates.length === 0) return null;
  return withTreeChanges(input.scm, input.workdir, input.signal, async (changes) => {
    for (const c of candidates) {
      if (await changes.isAncestor(c.commit)) return { candidate: c, changes: await changes.changedSince(c.commit) };
    }
    return null;
  });
}

/**
 * Whether the newest map could not judge a pull request onto this default-branch commit: none is
 * of an ancestor, or a file that sends every build to a full run (a manifest, a lock file,
 * sluice.yml, an always_full glob) changed since it. Such a push maps whatever map_every says:
 * after a dependency update, pull requests select again from its next build on, not ten later.
 */
async function mapIsStale(records: BuildRecords, input: Input): Promise<boolean> {
  try {
    const found = await newestAncestorMap(records, input);
    return found === null || found.changes.changed.some((f) => needsFullRun(f, input.plan.settings.always_full) !== null);
  } catch (err) {
    // Not knowing only costs the extra map: the cadence decides.
    if (input.signal?.aborted) throw err;
    return false;
  }
}

/**
 * The build records (steps/records.ts) of a runner that holds only a token: every call goes to
 * the runner API under the job it is made for, which answers it for that job's build only. The
 * job is the one whose activity is running (an AsyncLocalStorage the job loop sets).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { BuildRecords } from '../../steps/records';
import type { BlobStore } from '../../store';
import type { Channel } from './channel';

const current = new AsyncLocalStorage<number>();

/** Runs `fn` as job `id`'s: the records and blobs it uses are that job's. */
export const asJob = <T>(id: number, fn: () => Promise<T>): Promise<T> => current.run(id, fn);

function jobId(): number {
  const id = current.getStore();
  if (id === undefined) throw new Error('a build record was used outside a job');
  return id;
}

/** Every BuildRecords method, by name (the compiler checks the list is whole). */
const METHODS = {
  pullSource: 1, recordKnownHosts: 1, endedSessions: 1, repoIdOfSession: 1, suiteJUnitPatternOfSession: 1, buildSecrets: 1, registryLogins: 1, installationId: 1,
  recordWorkerStep: 1, markWorkerReady: 1, markWorkerFailed: 1, rendezvous: 1, setupTiming: 1,
  startHook: 1, finishHook: 1, appendOutput: 1, startBatch: 1, finishBatch: 1,
  recordedDurations: 1, failureHistory: 1, enqueueTests: 1, claimFiles: 1, renewClaims: 1, releaseClaims: 1, recordFileResults: 1, workLeftMs: 1, queueProgress: 1, replaceJUnitResults: 1, recordRunCases: 1, mutedTests: 1,
  startMap: 1, recordFileDeps: 1, mapCandidates: 1, loadMap: 1, recordAffected: 1,
  findExactEntry: 1, findNewestEntry: 1, touchEntry: 1, insertEntry: 1, evictEntries: 1, deleteEntry: 1, liveStoreKeys: 1,
  reserveArtifact: 1, markArtifactStored: 1, dropArtifact: 1, deleteWorkerArtifacts: 1,
} satisfies Record<keyof BuildRecords, 1>;

export function tokenRecords(channel: Channel): BuildRecords {
  const records = Object.fromEntries(Object.keys(METHODS).map((name) => [name, (...args: unknown[]) => channel.records(jobId(), name, args)])) as unknown as BuildRecords;
  // The runner's sweeps between jobs ask as the token, not as a job.
  records.endedSessions = (ids) => channel.endedSessions([...ids]);
  records.liveStoreKeys = (keys) => channel.liveStoreKeys([...keys]);
  return records;
}

/** The blob store through the API: the job's cache entries and artifacts only. */
export function tokenStore(channel: Channel, apiUrl: string): BlobStore {
  return {
    description: `the API at ${apiUrl}`,
    putFile: (key, file) => channel.putBlob(jobId(), key, file),
    getFile: (key, file) => channel.getBlob(jobId(), key, file),
    open: (key) => channel.openBlob(jobId(), key),
    delete: (key) => channel.deleteBlob(jobId(), key),
    deletePrefix: () => Promise.reject(new Error('a runner does not delete whole prefixes')),
  };
}

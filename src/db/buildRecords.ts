/**
 * The build records of a runner that holds the keys: PostgreSQL, and Sluice's secret key to
 * unseal the repository's SSH key and build secrets (steps/records.ts says what they are).
 */
import type { Pool } from 'pg';
import type { BuildRecords, BuildSecrets, CheckoutTokens, RegistryLogin } from '../steps/records';
import { unseal } from '../crypto/sealed';
import * as artifacts from './artifacts';
import * as dependencyMaps from './dependencyMaps';
import * as cacheEntries from './cacheEntries';
import * as outputChunks from './outputChunks';
import { loadInstallation } from './installation';
import { loadPullSource, recordKnownHosts } from './repos';
import { listRegistryLogins } from './registryLogins';
import { listSecrets } from './secrets';
import * as sessionHooks from './sessionHooks';
import * as sessions from './sessions';
import * as sessionWorkers from './sessionWorkers';
import * as testBatches from './testBatches';
import * as mutedTests from './mutedTests';
import * as testCases from './testCases';
import * as testQueue from './testQueue';

/** A repository's secrets unsealed; one that no longer unseals (the key was changed) is named, not fatal. */
export async function unsealedSecrets(pool: Pool, secretKey: Buffer, repoId: number): Promise<BuildSecrets> {
  const values: Record<string, string> = {};
  const unreadable: string[] = [];
  for (const row of await listSecrets(pool, repoId)) {
    try {
      values[row.name] = unseal(secretKey, row.value_sealed);
    } catch {
      unreadable.push(row.name);
    }
  }
  return { values, unreadable };
}

/** A repository's registry logins unsealed; one that no longer unseals is left out (the pull goes on without it). */
export async function unsealedRegistryLogins(pool: Pool, secretKey: Buffer, repoId: number): Promise<RegistryLogin[]> {
  const out: RegistryLogin[] = [];
  for (const row of await listRegistryLogins(pool, repoId)) {
    try {
      out.push({ host: row.host, username: row.username, password: unseal(secretKey, row.password_sealed) });
    } catch {
      // SLUICE_SECRET_KEY was changed: as for secrets, the build goes on without it.
    }
  }
  return out;
}

/**
 * `checkoutTokens`: how this role mints a GitHub App's installation token for a checkout
 * (app/githubApps.ts); without it, a repository that builds through an app has no token and its
 * HTTPS pull is refused as one.
 */
export function pgBuildRecords(pool: Pool, secretKey: Buffer, checkoutTokens?: CheckoutTokens): BuildRecords {
  return {
    async pullSource(repoId) {
      const repo = await loadPullSource(pool, repoId);
      if (!repo) return undefined;
      const httpToken = await checkoutTokens?.(repoId);
      return { scm: repo.scm, pullUrl: repo.pull_url, privateKey: unseal(secretKey, repo.ssh_private_key_sealed), knownHosts: repo.ssh_known_hosts, ...(httpToken === undefined ? {} : { httpToken }) };
    },
    recordKnownHosts: (repoId, known, learned) => recordKnownHosts(pool, repoId, known, learned),
    endedSessions: (...a) => sessions.endedSessions(pool, ...a),
    repoIdOfSession: (...a) => sessions.repoIdOfSession(pool, ...a),
    suiteJUnitPatternOfSession: (...a) => sessions.suiteJUnitPatternOfSession(pool, ...a),
    buildSecrets: (repoId) => unsealedSecrets(pool, secretKey, repoId),
    registryLogins: (repoId) => unsealedRegistryLogins(pool, secretKey, repoId),
    installationId: () => loadInstallation(pool),

    recordWorkerStep: (...a) => sessionWorkers.recordWorkerStep(pool, ...a),
    markWorkerReady: (...a) => sessionWorkers.markWorkerReady(pool, ...a),
    markWorkerFailed: (...a) => sessionWorkers.markWorkerFailed(pool, ...a),
    rendezvous: (...a) => sessionWorkers.rendezvous(pool, ...a),
    setupTiming: (...a) => sessionWorkers.setupTiming(pool, ...a),

    startHook: (...a) => sessionHooks.startHook(pool, ...a),
    finishHook: (...a) => sessionHooks.finishHook(pool, ...a),
    appendOutput: (...a) => outputChunks.appendOutput(pool, ...a),
    startBatch: (...a) => testBatches.startBatch(pool, ...a),
    finishBatch: (...a) => testBatches.finishBatch(pool, ...a),

    recordedDurations: (...a) => testQueue.recordedDurations(pool, ...a),
    failureHistory: (...a) => testQueue.failureHistory(pool, ...a),
    enqueueTests: (...a) => testQueue.enqueueTests(pool, ...a),
    claimFiles: (...a) => testQueue.claimFiles(pool, ...a),
    renewClaims: (...a) => testQueue.renewClaims(pool, ...a),
    releaseClaims: (...a) => testQueue.releaseClaims(pool, ...a),
    recordFileResults: (...a) => testQueue.recordFileResults(pool, ...a),
    workLeftMs: (...a) => testQueue.workLeftMs(pool, ...a),
    queueProgress: (...a) => testQueue.queueProgress(pool, ...a),
    replaceJUnitResults: (...a) => testCases.replaceJUnitResults(pool, ...a),
    recordRunCases: (...a) => testCases.recordRunCases(pool, ...a),
    mutedTests: (...a) => mutedTests.mutedTestsOfSession(pool, ...a),

    startMap: (...a) => dependencyMaps.startMap(pool, ...a),
    recordFileDeps: (...a) => dependencyMaps.recordFileDeps(pool, ...a),
    mapCandidates: (...a) => dependencyMaps.mapCandidates(pool, ...a),
    loadMap: (...a) => dependencyMaps.loadMap(pool, ...a),
    recordAffected: (...a) => dependencyMaps.recordAffected(pool, ...a),

    findExactEntry: (...a) => cacheEntries.findExactEntry(pool, ...a),
    findNewestEntry: (...a) => cacheEntries.findNewestEntry(pool, ...a),
    touchEntry: (...a) => cacheEntries.touchEntry(pool, ...a),
    insertEntry: (...a) => cacheEntries.insertEntry(pool, ...a),
    evictEntries: (...a) => cacheEntries.evictEntries(pool, ...a),
    deleteEntry: (...a) => cacheEntries.deleteEntry(pool, ...a),
    liveStoreKeys: (...a) => cacheEntries.liveStoreKeys(pool, ...a),

    reserveArtifact: (...a) => artifacts.reserveArtifact(pool, ...a),
    markArtifactStored: (...a) => artifacts.markArtifactStored(pool, ...a),
    dropArtifact: (...a) => artifacts.dropArtifact(pool, ...a),
    deleteWorkerArtifacts: (...a) => artifacts.deleteWorkerArtifacts(pool, ...a),
  };
}

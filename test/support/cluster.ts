/**
 * Sluice in its production shape, for e2e tests and the bench: a Temporal server Sluice did not
 * start, then the API, a worker and N runners, each its own `node dist/<role>/main.js` process
 * (test/support/processes.ts), plus a real SSH git server and a webhook receiver on loopback.
 * Runners take one lane at a time (SLUICE_RUNNER_SLOTS=1), so a build of `workers: N` over N
 * runners puts one lane on each.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { DevServer } from '../../src/temporal/devServer';
import { createTestDatabase, type TestDatabase } from './db';
import { createBareRepo, type RepoFiles } from './gitRepo';
import { buildDist, sluiceEnv, startBareTemporal, startRole, stopAllProcesses, waitForHealthy, type RoleProcess } from './processes';
import { startReceiver, type Receiver } from './receiver';
import { startSshGitServer, type SshGitServer } from './sshGitServer';
import { sessionEvents, sessionOfGuid, type Payload } from './world';
import { callAdmin } from './adminApi';

export interface ClusterRepo {
  id: number;
  webhook_url: string;
  bare: string;
}

export interface Cluster {
  env: NodeJS.ProcessEnv;
  db: TestDatabase;
  temporal: DevServer;
  ssh: SshGitServer;
  receiver: Receiver;
  tmp: string;
  api: RoleProcess;
  worker: RoleProcess;
  runners: RoleProcess[];
  /** Starts one more runner, with `env` over the cluster's; resolves once it polls. */
  addRunner(env?: NodeJS.ProcessEnv): Promise<RoleProcess>;
  admin<T = Record<string, unknown>>(method: string, p: string, body?: unknown): Promise<T>;
  /** A repository of the cluster's organization, or of `opts.org`. */
  makeRepo(files: RepoFiles, suite: Record<string, unknown>, opts?: { org?: number }): Promise<ClusterRepo>;
  /** Registers a bare repository already on disk (a real project's), served by the SSH server, with a suite. */
  addRepo(bare: string, suite: Record<string, unknown>): Promise<ClusterRepo>;
  /** Triggers a build; returns its session id. */
  build(repo: ClusterRepo, body?: unknown): Promise<number>;
  /** The receiver's events of `session`, once `stop` arrived. */
  eventsOf(session: number, timeoutMs?: number): Promise<Payload[]>;
  stop(): Promise<void>;
}

export async function startCluster(opts: { runners: number; env?: NodeJS.ProcessEnv }): Promise<Cluster> {
  const [temporal, db, ssh, receiver] = await Promise.all([
    startBareTemporal(),
    createTestDatabase('sluice_cluster'),
    startSshGitServer({ authorizedKeys: [] }),
    startReceiver(),
    buildDist(180_000),
  ]);
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'sluice-cluster-'));
  // Loopback receivers are allowed; runners take one lane at a time. The cache store, the
  // runners' local copies and their image store (one machine: they share them) are the cluster's own.
  const env = await sluiceEnv({
    databaseUrl: db.url,
    temporalAddress: temporal.address,
    env: {
      SLUICE_WEBHOOK_ALLOW: '127.0.0.0/8',
      SLUICE_RUNNER_SLOTS: '1',
      SLUICE_CACHE_URL: path.join(tmp, 'cache-store'),
      SLUICE_CACHE_LOCAL_DIR: path.join(tmp, 'cache-local'),
      // Beside tmp (0700), where the build user may pass: builds run in the images it holds.
      SLUICE_IMAGE_DIR: `${tmp}-images`,
      ...opts.env,
    },
  });
  // Workers and runners get no admin token: only the API uses it.
  const { SLUICE_ADMIN_TOKEN: _adminToken, ...backEnv } = env;
  const api = startRole('api', env);
  const worker = startRole('worker', backEnv);
  const startRunner = async (extra: NodeJS.ProcessEnv = {}) => {
    const r = startRole('runner', { ...backEnv, ...extra });
    await r.waitForOutput(/sluice runner: \S+ serving /, 90_000);
    return r;
  };
  const [runners] = await Promise.all([
    Promise.all(Array.from({ length: opts.runners }, () => startRunner())),
    waitForHealthy(env.SLUICE_BASE_URL!, 90_000),
    worker.waitForOutput(/sluice worker: serving /, 90_000),
  ]);

  const admin = <T>(method: string, p: string, body?: unknown) => callAdmin<T>(env.SLUICE_BASE_URL!, env.SLUICE_ADMIN_TOKEN!, method, p, body);
  const org = await admin<{ id: number }>('POST', '/api/v1/orgs', { name: `org-${path.basename(tmp)}`, email: 'builds@acme.test' });
  await admin('POST', `/api/v1/orgs/${org.id}/webhooks`, { url: receiver.url });
  const keys: string[] = [];
  let repos = 0;

  /** A repository of Sluice's for the bare repository `bare`, its key authorized on the SSH server, with a suite. */
  const register = async (name: string, bare: string, suite: Record<string, unknown>, orgId = org.id): Promise<ClusterRepo> => {
    const repo = await admin<{ id: number; webhook_url: string; ssh_public_key: string }>('POST', `/api/v1/orgs/${orgId}/repos`, {
      name,
      scm: 'git',
      pull_url: ssh.url(bare),
    });
    keys.push(repo.ssh_public_key);
    ssh.setAuthorizedKeys(keys);
    await admin('POST', `/api/v1/repos/${repo.id}/suites`, suite);
    return { id: repo.id, webhook_url: repo.webhook_url, bare };
  };

  const cluster: Cluster = {
    env,
    db,
    temporal,
    ssh,
    receiver,
    tmp,
    api,
    worker,
    runners,
    async addRunner(extra) {
      const r = await startRunner(extra);
      runners.push(r);
      return r;
    },
    admin,
    async makeRepo(files, suite, opts) {
      const name = `app${++repos}`;
      const bare = path.join(tmp, `${name}.git`);
      await createBareRepo(bare, files, 'first commit');
      return register(name, bare, suite, opts?.org);
    },
    addRepo: (bare, suite) => register(`app${++repos}`, bare, suite),
    async build(repo, body) {
      const res = await fetch(repo.webhook_url, {
        method: 'POST',
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`trigger answered ${res.status}: ${text}`);
      return sessionOfGuid(db.pool, (JSON.parse(text) as { guid: string }).guid);
    },
    eventsOf: (session, timeoutMs = 120_000) => sessionEvents(receiver, session, timeoutMs),
    async stop() {
      await stopAllProcesses();
      await Promise.allSettled([ssh.close(), receiver.close(), temporal.stop()]);
      await db.drop();
      await rm(tmp, { recursive: true, force: true });
      await rm(`${tmp}-images`, { recursive: true, force: true });
    },
  };
  return cluster;
}

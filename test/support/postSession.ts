/**
 * For the post-build activity tests: a Config, and an organization, repository, suite and
 * session in a test database, inserted directly (the rows the activities read and write).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import type { Config } from '../../src/config';
import { keyHash, seal } from '../../src/crypto/sealed';
import { generateRepoKeyPair, type RepoKeyPair } from '../../src/ssh/keys';

export function postTestConfig(databaseUrl: string, overrides: Partial<Config> = {}): Config {
  return {
    databaseUrl,
    temporalAddress: '127.0.0.1:1',
    temporalNamespace: 'default',
    baseUrl: 'https://ci.example.test',
    adminToken: `admin-${randomBytes(16).toString('hex')}`,
    secretKey: randomBytes(32),
    smtpUrl: undefined,
    host: '127.0.0.1',
    port: 0,
    taskQueue: 'sluice-test',
    buildQueue: 'sluice-build-test',
    workspaceDir: '/tmp/sluice-post-test',
    testTimeoutMs: 10_000,
    webhookRetry: { initialIntervalMs: 100, maximumIntervalMs: 1000, backoffCoefficient: 2, maximumAttempts: 3 },
    webhookAllow: [],
    ...overrides,
  };
}

export interface PostSession {
  orgId: number;
  repoId: number;
  suiteId: number;
  sessionId: number;
  key: RepoKeyPair;
}

export interface PostSessionOptions {
  org?: string;
  email?: string;
  repo?: string;
  scm?: 'git' | 'hg';
  pullUrl?: string;
  ciPushUrl?: string | null;
  chatUrl?: string | null;
  branch?: string;
  key?: RepoKeyPair;
}

/** A fresh organization (unique name), repository, suite and queued session. */
export async function insertPostSession(pool: Pool, secretKey: Buffer, opts: PostSessionOptions = {}): Promise<PostSession> {
  const key = opts.key ?? generateRepoKeyPair('sluice:test/post');
  const org = await pool.query<{ id: number }>('INSERT INTO orgs (name, email) VALUES ($1, $2) RETURNING id', [
    opts.org ?? `acme-${randomBytes(4).toString('hex')}`,
    opts.email ?? 'builds@acme.test',
  ]);
  const orgId = org.rows[0]!.id;
  const webhookKey = randomBytes(24).toString('base64url');
  const repo = await pool.query<{ id: number }>(
    `INSERT INTO repos (org_id, name, scm, pull_url, ci_push_url, chat_url, key_hash, key_sealed, ssh_public_key, ssh_private_key_sealed)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
    [
      orgId,
      opts.repo ?? 'app',
      opts.scm ?? 'git',
      opts.pullUrl ?? 'ssh://git@scm.example.test/acme/app.git',
      opts.ciPushUrl ?? null,
      opts.chatUrl ?? null,
      keyHash(webhookKey),
      seal(secretKey, webhookKey),
      key.publicKey,
      seal(secretKey, key.privateKey),
    ],
  );
  const repoId = repo.rows[0]!.id;
  const branch = opts.branch ?? 'master';
  const suite = await pool.query<{ id: number }>('INSERT INTO suites (repo_id, branch, test_pattern) VALUES ($1, $2, $3) RETURNING id', [
    repoId,
    branch,
    'test/*_test.sh',
  ]);
  const suiteId = suite.rows[0]!.id;
  const event = await pool.query<{ id: number }>(
    `INSERT INTO ci_events (guid, repo_id, provider, decision, trigger) VALUES ($1, $2, 'builds', 'build', $3) RETURNING id`,
    [randomUUID(), repoId, JSON.stringify({ provider: 'builds', op: 'push', branch, head: 'HEAD', scm: 'git', force: false, queuePosition: 'tail', env: {} })],
  );
  const session = await pool.query<{ id: number }>(
    `INSERT INTO sessions (ci_event_id, suite_id, branch, head) VALUES ($1, $2, $3, 'HEAD') RETURNING id`,
    [event.rows[0]!.id, suiteId, branch],
  );
  return { orgId, repoId, suiteId, sessionId: session.rows[0]!.id, key };
}

export async function postBuildSteps(pool: Pool, sessionId: number): Promise<{ step: string; ok: boolean; detail: string }[]> {
  const { rows } = await pool.query<{ step: string; ok: boolean; detail: string }>(
    'SELECT step, ok, detail FROM post_build_steps WHERE session_id = $1 ORDER BY id',
    [sessionId],
  );
  return rows;
}

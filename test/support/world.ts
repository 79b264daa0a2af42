/**
 * The world of an e2e test file: a Sluice (API + worker), a real SSH git server, a real HTTP
 * receiver subscribed to the organization's webhooks, and helpers to make repositories and
 * trigger builds the way a user would (HTTP to the webhook URL).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createBareRepo, type RepoFile, type RepoFiles } from './gitRepo';
import { startReceiver, type ReceivedRequest, type Receiver } from './receiver';
import { startSshGitServer, type SshGitServer } from './sshGitServer';
import { startSluice, type Sluice } from './sluice';
import type { Pool } from 'pg';
import { eventually } from './wait';

export interface Repo {
  id: number;
  name: string;
  key: string;
  webhook_url: string;
  ssh_public_key: string;
  /** Path of the bare repository on disk. */
  bare: string;
}

export type Payload = Record<string, unknown> & { event: string; session: number; xid: string; status: string };

export const script = (body: string): RepoFile => ({ content: `#!/bin/sh\n${body}\n`, mode: 0o755 });

export class World {
  private repoCount = 0;
  private authorized: string[] = [];

  private constructor(
    readonly sluice: Sluice,
    readonly ssh: SshGitServer,
    readonly receiver: Receiver,
    readonly tmp: string,
    readonly org: { id: number; name: string },
  ) {}

  static async start(opts: Parameters<typeof startSluice>[0] & { webhook?: false | { username?: string; password?: string } } = {}): Promise<World> {
    const tmp = await mkdtemp(path.join(os.tmpdir(), 'sluice-e2e-'));
    // What started is stopped again if a later part fails: a worker left polling would keep
    // jest from ever exiting, and CI would wait for it until its time ran out.
    const started: { stop(): Promise<unknown> }[] = [{ stop: () => rm(tmp, { recursive: true, force: true }) }];
    try {
      const sluice = await startSluice(opts);
      started.push(sluice);
      const ssh = await startSshGitServer({ authorizedKeys: [] });
      started.push({ stop: () => ssh.close() });
      const receiver = await startReceiver();
      started.push({ stop: () => receiver.close() });
      const org = await sluice.admin<{ id: number; name: string }>('POST', '/api/v1/orgs', { name: `org-${path.basename(tmp)}`, email: 'builds@acme.test' });
      if (opts.webhook !== false) {
        await sluice.admin('POST', `/api/v1/orgs/${org.id}/webhooks`, { url: receiver.url, ...(opts.webhook ?? {}) });
      }
      return new World(sluice, ssh, receiver, tmp, org);
    } catch (err) {
      for (const part of started.reverse()) await part.stop().catch(() => undefined);
      throw err;
    }
  }

  /** Stops every part even when one fails (then throws the first failure): nothing left running keeps jest from exiting. */
  async stop(): Promise<void> {
    const results = await Promise.allSettled([this.sluice.stop()]);
    results.push(...(await Promise.allSettled([this.ssh.close(), this.receiver.close()])));
    results.push(...(await Promise.allSettled([rm(this.tmp, { recursive: true, force: true })])));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /** A bare repository served over SSH, registered in Sluice, its key authorized unless told not to. */
  async makeRepo(files: RepoFiles, opts: { authorize?: boolean; suite?: Record<string, unknown> } = {}): Promise<Repo> {
    const name = `app${++this.repoCount}`;
    const bare = path.join(this.tmp, `${name}.git`);
    await createBareRepo(bare, files, 'first commit');
    const repo = await this.sluice.admin<Omit<Repo, 'bare'>>('POST', `/api/v1/orgs/${this.org.id}/repos`, {
      name,
      scm: 'git',
      pull_url: this.ssh.url(bare),
    });
    if (opts.authorize !== false) this.authorize(repo.ssh_public_key);
    if (opts.suite) await this.sluice.admin('POST', `/api/v1/repos/${repo.id}/suites`, opts.suite);
    return { ...repo, bare };
  }

  /** Lets a repository's SSH key pull from the git server, as adding a deploy key would. */
  authorize(sshPublicKey: string): void {
    this.authorized.push(sshPublicKey);
    this.ssh.setAuthorizedKeys(this.authorized);
  }

  /** A bare repository on the git server that no Sluice repository knows yet; its SSH pull URL. */
  async makeBareRepo(name: string, files: RepoFiles): Promise<{ bare: string; pullUrl: string }> {
    const bare = path.join(this.tmp, `${name}.git`);
    await createBareRepo(bare, files, 'first commit');
    return { bare, pullUrl: this.ssh.url(bare) };
  }

  async trigger(repo: Repo, body?: unknown): Promise<{ status: number; text: string }> {
    const res = await fetch(repo.webhook_url, {
      method: 'POST',
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, text: await res.text() };
  }

  /** Triggers a build that must be accepted; returns its guid, status_uri and session id. */
  async build(repo: Repo, body?: unknown): Promise<{ guid: string; status_uri: string; session: number }> {
    const res = await this.trigger(repo, body);
    if (res.status !== 200) throw new Error(`trigger answered ${res.status}: ${res.text}`);
    const json = JSON.parse(res.text) as { status: number; guid: string; status_uri: string };
    return { ...json, session: await sessionOfGuid(this.sluice.pool, json.guid) };
  }

  /** The events the receiver got for a session, once its `stop` has arrived. */
  eventsOf(session: number, receiver: Receiver = this.receiver): Promise<Payload[]> {
    return sessionEvents(receiver, session, 90_000);
  }

  /** GET /api/v1/sessions/:session */
  session(session: number) {
    return this.sluice.admin<Record<string, unknown> & { status: string; reason: string | null; tests: Array<Record<string, unknown>> }>(
      'GET',
      `/api/v1/sessions/${session}`,
    );
  }
}

/** The (first) session an accepted trigger made, by the guid it answered with. */
export async function sessionOfGuid(pool: Pool, guid: string, timeoutMs = 30_000): Promise<number> {
  // The suite's workflow records the trigger's session a moment after the answer (issue 26).
  return eventually(`the session of trigger ${guid} to be recorded`, async () => {
    const { rows } = await pool.query<{ id: number }>('SELECT s.id FROM sessions s JOIN ci_events e ON e.id = s.ci_event_id WHERE e.guid = $1 ORDER BY s.id', [guid]);
    return rows[0]?.id;
  }, timeoutMs);
}

/** The events `receiver` got for a session, once its `stop` has arrived (within `timeoutMs`). */
export async function sessionEvents(receiver: Receiver, session: number, timeoutMs: number): Promise<Payload[]> {
  const of = (reqs: ReceivedRequest[]) => reqs.map((r) => r.json as Payload).filter((p) => p?.session === session);
  await receiver.waitFor((reqs) => of(reqs).some((p) => p.event === 'stop'), timeoutMs);
  return of(receiver.requests);
}

/**
 * Each event of `session` reached the receiver under one xid (a retry keeps its xid; the same
 * event sent twice as two deliveries would not); how many distinct events it got.
 */
export function expectEachEventOnce(receiver: Receiver, session: number): number {
  const byEvent = new Map<string, Set<string>>();
  for (const e of receiver.requests.map((r) => r.json as Payload).filter((p) => p?.session === session)) {
    byEvent.set(e.event, new Set([...(byEvent.get(e.event) ?? []), e.xid]));
  }
  for (const [event, xids] of byEvent) expect([session, event, xids.size]).toEqual([session, event, 1]);
  return byEvent.size;
}

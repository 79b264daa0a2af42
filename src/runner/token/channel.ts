/**
 * A token runner's one connection to Sluice: the runner API (api/routes/runnerApi.ts) at the
 * API's address, every call carrying the runner token. Nothing else: no Temporal, no database.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Agent, request, type Dispatcher } from 'undici';
import { fromWire, toWire } from '../../core/wire';

export interface Job {
  id: number;
  kind: 'checkout' | 'queueTests' | 'runLane' | 'postBuildHook';
  attempt: number;
  input: unknown;
}

export type JobOutput = { result: unknown } | { error: { message: string; type?: string; retryable: boolean } };

/** The API refused the call: the token is revoked or wrong (401), or the job is no longer this runner's (404). */
export class ChannelRefused extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export class Channel {
  private readonly agent: Dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: 16 });

  constructor(
    private readonly apiUrl: string,
    private readonly token: string,
  ) {}

  private async call(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown, timeoutMs = 30_000, signal?: AbortSignal): Promise<{ status: number; json: unknown }> {
    const res = await request(`${this.apiUrl}/api/v1/runner${path}`, {
      method,
      dispatcher: this.agent,
      headers: { authorization: `Bearer ${this.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal,
    });
    const text = await res.body.text();
    const json = text === '' ? null : (JSON.parse(text) as unknown);
    if (res.statusCode === 401 || res.statusCode === 403 || res.statusCode === 404) {
      throw new ChannelRefused(res.statusCode, (json as { message?: string } | null)?.message ?? `refused (${res.statusCode})`);
    }
    if (res.statusCode >= 400) throw new Error(`the runner API answered ${res.statusCode}: ${(json as { message?: string } | null)?.message ?? text.slice(0, 200)}`);
    return { status: res.statusCode, json };
  }

  /** Waits up to `waitMs` for a job of `queues`; null when none came. */
  async next(me: { runner: string; version: string; queues: string[] }, waitMs: number, signal?: AbortSignal): Promise<Job | null> {
    const { status, json } = await this.call('POST', '/jobs/next', { ...me, wait_ms: waitMs }, waitMs + 30_000, signal);
    return status === 204 ? null : (json as { job: Job }).job;
  }

  async heartbeat(job: number): Promise<{ cancel: boolean }> {
    return (await this.call('POST', `/jobs/${job}/heartbeat`, {})).json as { cancel: boolean };
  }

  async finish(job: number, output: JobOutput): Promise<void> {
    await this.call('POST', `/jobs/${job}/finish`, toWire(output));
  }

  /** One of the build's records calls (steps/records.ts), for job `job`. */
  async records(job: number, method: string, args: unknown[]): Promise<unknown> {
    return fromWire(((await this.call('POST', `/jobs/${job}/records/${method}`, { args: toWire(args) })).json as { value: unknown }).value);
  }

  async signal(job: number, name: string, payload: unknown): Promise<void> {
    await this.call('POST', `/jobs/${job}/signal`, { name, payload });
  }

  async endedSessions(ids: number[]): Promise<number[]> {
    return ((await this.call('POST', '/ended-sessions', { ids })).json as { ended: number[] }).ended;
  }

  async liveStoreKeys(keys: string[]): Promise<Set<string>> {
    return new Set(((await this.call('POST', '/live-store-keys', { keys })).json as { live: string[] }).live);
  }

  async putBlob(job: number, key: string, file: string): Promise<void> {
    const { size } = await stat(file);
    const res = await request(`${this.apiUrl}/api/v1/runner/jobs/${job}/blobs/${key}`, {
      method: 'PUT',
      dispatcher: this.agent,
      headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/octet-stream', 'content-length': String(size) },
      body: createReadStream(file),
    });
    const text = await res.body.text();
    if (res.statusCode !== 204) throw new Error(`storing ${key} through the API failed (${res.statusCode}): ${text.slice(0, 200)}`);
  }

  /** The blob as a stream with its size; null when there is none. */
  async openBlob(job: number, key: string): Promise<{ stream: Readable; size: number } | null> {
    const res = await request(`${this.apiUrl}/api/v1/runner/jobs/${job}/blobs/${key}`, { method: 'GET', dispatcher: this.agent, headers: { authorization: `Bearer ${this.token}` } });
    if (res.statusCode === 404) {
      await res.body.dump();
      return null;
    }
    if (res.statusCode !== 200) {
      const text = await res.body.text();
      throw new Error(`reading ${key} through the API failed (${res.statusCode}): ${text.slice(0, 200)}`);
    }
    return { stream: res.body, size: Number(res.headers['content-length'] ?? 0) };
  }

  async getBlob(job: number, key: string, file: string): Promise<boolean> {
    const found = await this.openBlob(job, key);
    if (!found) return false;
    await pipeline(found.stream, createWriteStream(file));
    return true;
  }

  async deleteBlob(job: number, key: string): Promise<void> {
    await this.call('DELETE', `/jobs/${job}/blobs/${key}`);
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

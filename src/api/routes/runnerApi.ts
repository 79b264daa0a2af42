/**
 * The runner API (`/api/v1/runner/...`): everything a runner that holds only a token
 * (`Authorization: Bearer <runner token>`) does, over HTTP. What each call may do is decided in
 * app/runnerJobs.ts; here are the long poll for a job, the blobs' streams, and the signal to a
 * build's workflow.
 */
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { notFound, validate } from '../../app/errors';
import { Poll, runnerJobs, Signal, type RunnerTokenRef } from '../../app/runnerJobs';
import { apiStore } from '../../app/store';
import { bearerToken } from '../auth';
import type { ApiDeps } from '../deps';
import { HttpError } from '../http';

/**
 * A records call carries what the build recorded (a claim's results, its JUnit cases: up to
 * 20,000 cases of 16 MiB reports, steps/tests/junit.ts), more than the API's usual 1 MiB.
 */
const RECORDS_BODY_LIMIT = 64 * 1024 * 1024;

declare module 'fastify' {
  interface FastifyRequest {
    runnerToken?: RunnerTokenRef;
  }
}

export function registerRunnerApi(app: FastifyInstance, deps: ApiDeps): void {
  const { config } = deps;
  const jobs = runnerJobs(deps);
  const blobs = () => apiStore(config);

  // Polls wait for a job queued on one of their queues (NOTIFY), with a poll of the table behind it.
  const waiting = new Set<() => void>();
  let unlisten: Promise<() => void> | undefined;
  app.addHook('onClose', async () => (await unlisten)?.());

  app.addHook('onRequest', async (request, reply) => {
    const given = bearerToken(request);
    const token = given === undefined ? undefined : await jobs.tokenOf(given);
    if (!token) {
      return reply.code(401).header('www-authenticate', 'Bearer realm="sluice-runner"').send({ error: 'unauthorized', message: 'send Authorization: Bearer <runner token> (a live one)' });
    }
    request.runnerToken = token;
    return undefined;
  });

  const tokenOf = (request: FastifyRequest) => request.runnerToken!;
  const jobOf = (request: FastifyRequest<{ Params: { id: string } }>) => jobs.running(request.params.id, tokenOf(request));

  app.post('/runner/jobs/next', async (request, reply) => {
    const body = validate(Poll, request.body);
    const token = tokenOf(request);
    const queues = await jobs.announce(token, body);
    unlisten ??= jobs.onQueued(() => [...waiting].forEach((wake) => wake()));
    // The runner hung up (it is stopping): not `request.raw.destroyed`, which is true as soon as the body was read.
    let gone = false;
    reply.raw.once('close', () => (gone = true));
    const deadline = Date.now() + body.wait_ms;
    for (;;) {
      const job = await jobs.take(token, body.runner, queues);
      if (job && gone) {
        await jobs.giveBack(job.id);
        return reply;
      }
      if (job) return { job: { id: job.id, kind: job.kind, attempt: job.attempt, input: job.input } };
      const left = deadline - Date.now();
      if (left <= 0 || gone) return reply.code(204).send();
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          waiting.delete(wake);
          resolve();
        };
        // NOTIFY wakes it when a job is queued; the timer only covers a notification missed.
        const timer = setTimeout(wake, Math.min(left, 5_000));
        waiting.add(wake);
      });
    }
  });

  app.post<{ Params: { id: string } }>('/runner/jobs/:id/heartbeat', (request) => jobs.heartbeat(request.params.id, tokenOf(request)));

  app.post<{ Params: { id: string } }>('/runner/jobs/:id/finish', { bodyLimit: RECORDS_BODY_LIMIT }, async (request, reply) => {
    await jobs.finish(request.params.id, tokenOf(request), request.body);
    return reply.code(204).send();
  });

  app.post<{ Params: { id: string; method: string } }>('/runner/jobs/:id/records/:method', { bodyLimit: RECORDS_BODY_LIMIT }, async (request) => {
    return jobs.callRecords(await jobOf(request), request.params.method, request.body);
  });

  app.post<{ Params: { id: string } }>('/runner/jobs/:id/signal', async (request, reply) => {
    const job = await jobOf(request);
    const { name, payload } = validate(Signal, request.body);
    if (!deps.signalWorkflow) throw new HttpError(503, 'unavailable', 'this API cannot reach Temporal');
    await deps.signalWorkflow(job.workflowId, name, payload);
    return reply.code(204).send();
  });

  // Blobs: the job's cache entries and artifacts, streamed through the API's store.
  app.addContentTypeParser('application/octet-stream', (_request, payload, done) => done(null, payload));

  app.put<{ Params: { id: string; '*': string } }>('/runner/jobs/:id/blobs/*', async (request, reply) => {
    const job = await jobOf(request);
    const key = jobs.blobKey(request.params['*'], job);
    const max = await jobs.writableBlob(job, key);
    const dir = await mkdtemp(path.join(os.tmpdir(), 'sluice-blob-'));
    try {
      const file = path.join(dir, 'blob');
      let bytes = 0;
      const capped = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          bytes += chunk.length;
          done(bytes > max ? new HttpError(413, 'payload too large', `a blob here may have at most ${max} bytes`) : null, chunk);
        },
      });
      await pipeline(request.body as NodeJS.ReadableStream, capped, createWriteStream(file));
      await blobs().putFile(key, file);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    return reply.code(204).send();
  });
  app.get<{ Params: { id: string; '*': string } }>('/runner/jobs/:id/blobs/*', async (request, reply) => {
    const job = await jobOf(request);
    const found = await blobs().open(jobs.blobKey(request.params['*'], job));
    if (!found) throw notFound('blob');
    return reply.header('content-type', 'application/octet-stream').header('content-length', found.size).send(found.stream);
  });
  app.delete<{ Params: { id: string; '*': string } }>('/runner/jobs/:id/blobs/*', async (request, reply) => {
    const job = await jobOf(request);
    const key = jobs.blobKey(request.params['*'], job);
    // An artifact of its own build it may drop; a cache blob only once no entry names it (deleted, evicted).
    if (key.startsWith('caches/')) await jobs.writableBlob(job, key);
    await blobs().delete(key);
    return reply.code(204).send();
  });

  // A runner's sweeps between jobs: which of the builds it ran have ended, which local cache copies are still named.
  app.post('/runner/ended-sessions', async (request) => ({ ended: await jobs.endedSessions(tokenOf(request), request.body) }));
  app.post('/runner/live-store-keys', async (request) => ({ live: await jobs.liveStoreKeys(request.body) }));
}

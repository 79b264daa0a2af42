// A hosting site that takes the connection and never answers (src/sites/http.ts): a request
// gives up at the client's deadline, and every request after it fails at once, so a page that
// shows a repository's health (app/connections.ts, 5 s for all its requests) is not kept waiting.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseAllowList } from '../../src/ip/ranges';
import { siteHttp } from '../../src/sites/http';
import { SiteError } from '../../src/sites/types';

let server: http.Server;
let base: string;
/** Requests the server was sent. */
let received = 0;
beforeAll(async () => {
  // Reads the request, never answers.
  server = http.createServer(() => {
    received += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

it('gives up at the deadline, and fails at once after it', async () => {
  const deadline = Date.now() + 400;
  const site = siteHttp({ apiUrl: `${base}/api`, headers: {}, secrets: [], allow: parseAllowList('127.0.0.0/8'), deadline });
  // The request went out and was cut at the deadline...
  await expect(site.need('GET', '/user')).rejects.toThrow(/GET \/api\/user did not get an answer/);
  expect(Date.now()).toBeGreaterThanOrEqual(deadline);
  expect(received).toBe(1);
  // ...and the next one is not sent at all.
  await expect(site.need('GET', '/projects')).rejects.toThrow(new SiteError(null, 'GET /api/projects: the site did not answer in time'));
  expect(received).toBe(1);
});

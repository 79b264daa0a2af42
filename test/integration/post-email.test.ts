/**
 * sendEmail through nodemailer to a real SMTP server (smtp-server, test/support/smtpSink.ts):
 * recipients, subject and body; login; smtps and STARTTLS with certificates verified; bounded
 * retries; failures recorded and returned, never thrown, never showing the password.
 *
 * Each activity run is one attempt under Temporal's retry policy: the tests run attempt 1, 2,
 * ... as a worker would (runAttempts), each in an activity context whose info.attempt says
 * which, with the policy's maximumAttempts in info.retryPolicy.
 */
import { ApplicationFailure } from '@temporalio/common';
import { createServer, type AddressInfo } from 'node:net';
import { FAILURE_TYPES } from '../../src/activities/failures';
import { createPostActivities } from '../../src/activities/post/activities';
import type { BuildSummary } from '../../src/activities/types';
import type { Config } from '../../src/config';
import { emptyCounts } from '../../src/core/counts';
import { runActivity, runAttempts, type TestRetryPolicy } from '../support/activityContext';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { insertPostSession, postBuildSteps, postTestConfig } from '../support/postSession';
import { selfSignedCertificate } from '../support/receiver';
import { startSmtpSink, type SmtpSink } from '../support/smtpSink';

let db: TestDatabase;
let config: Config;
const sinks: SmtpSink[] = [];
const PASSWORD = 'p4ss-W0rd-never-shown';

/** Three attempts, 20 ms apart: the shape of the default policy, shorter. */
const POLICY: TestRetryPolicy = { maximumAttempts: 3, initialInterval: 20, backoffCoefficient: 1 };

const rawActivities = (smtpUrl: string | undefined, opts: { ca?: string } = {}) =>
  createPostActivities({
    config: { ...config, smtpUrl },
    pool: db.pool,
    smtpTimeoutMs: 3_000,
    smtpTls: opts.ca ? { ca: opts.ca } : undefined,
  });

/** sendEmail as a worker runs it: attempts until one returns (or throws for good). */
const activities = (smtpUrl: string | undefined, opts: { ca?: string } = {}) => {
  const a = rawActivities(smtpUrl, opts);
  return {
    sendEmail: async (input: Parameters<typeof a.sendEmail>[0]) => (await runAttempts(() => a.sendEmail(input), POLICY)).result,
    attempts: (input: Parameters<typeof a.sendEmail>[0]) => runAttempts(() => a.sendEmail(input), POLICY),
  };
};

async function sink(opts: Parameters<typeof startSmtpSink>[0] = {}): Promise<SmtpSink> {
  const s = await startSmtpSink(opts);
  sinks.push(s);
  return s;
}

function summary(sessionId: number, overrides: Partial<BuildSummary> = {}): BuildSummary {
  return {
    session: sessionId,
    repo: { orgName: 'acme', name: 'app' },
    branch: 'master',
    commitId: '0123456789abcdef0123456789abcdef01234567',
    status: 'failed',
    reason: null,
    counts: { ...emptyCounts(), passed: 1, failed: 1, error: 1 },
    url: `https://ci.example.test/1/reports/${sessionId}`,
    profileName: 'default',
    ...overrides,
  };
}

async function session(email = 'builds@acme.test') {
  const s = await insertPostSession(db.pool, config.secretKey, { email });
  await db.pool.query(
    `INSERT INTO test_results (session_id, path, status, exit_code, duration_ms) VALUES
       ($1, 'test/a_test.sh', 'passed', 0, 10), ($1, 'test/b_test.sh', 'failed', 1, 20), ($1, 'test/c_test.sh', 'error', null, 30)`,
    [s.sessionId],
  );
  return s;
}

beforeAll(async () => {
  db = await createTestDatabase();
  config = postTestConfig(db.url);
});

afterAll(async () => {
  await Promise.all(sinks.map((s) => s.close()));
  await db.drop();
});

describe('sendEmail', () => {
  it("sends the notification to the organization's email: recipients, subject, body", async () => {
    const smtp = await sink();
    const s = await session();

    const result = await activities(smtp.url).sendEmail({ sessionId: s.sessionId, summary: summary(s.sessionId) });

    expect(result).toEqual({ sent: true, detail: `sent to builds@acme.test through ${smtp.url}` });
    const [mail] = await smtp.waitForMessages(1);
    expect(mail!.to).toEqual(['builds@acme.test']);
    expect(mail!.from).toBe('sluice@ci.example.test');
    expect(mail!.headers.to).toBe('builds@acme.test');
    expect(mail!.headers.from).toBe('Sluice <sluice@ci.example.test>');
    expect(mail!.subject).toBe(`[Sluice] acme/app master #${s.sessionId} failed`);
    expect(mail!.headers['auto-submitted']).toBe('auto-generated');
    expect(mail!.headers['x-sluice-session']).toBe(String(s.sessionId));
    expect(mail!.headers['x-sluice-status']).toBe('failed');
    expect(mail!.headers['content-type']).toMatch(/^text\/plain/);
    expect(mail!.text).toBe(
      [
        `acme/app @ master #${s.sessionId}: failed`,
        '',
        'Status:  failed',
        'Commit:  0123456789abcdef0123456789abcdef01234567',
        'Profile: default',
        'Tests:   1 passed, 1 failed, 1 error, 0 skipped (3 test files)',
        '',
        'Failing test files:',
        '  failed  test/b_test.sh',
        '  error   test/c_test.sh',
        '',
        `Report:  https://ci.example.test/1/reports/${s.sessionId}`,
        '',
        '-- ',
        'Sluice',
        '',
      ].join('\n'),
    );
    expect(await postBuildSteps(db.pool, s.sessionId)).toEqual([{ step: 'email', ok: true, detail: result.detail }]);
  });

  it('without SMTP_URL: nothing sent, nothing recorded', async () => {
    const s = await session();
    expect(await activities(undefined).sendEmail({ sessionId: s.sessionId, summary: summary(s.sessionId) })).toEqual({
      sent: false,
      detail: 'SMTP_URL not set',
    });
    expect(await postBuildSteps(db.pool, s.sessionId)).toEqual([]);
  });

  it('`to` overrides the recipients; `?from=` sets the sender', async () => {
    const smtp = await sink();
    const s = await session();
    const url = `${smtp.url}?from=${encodeURIComponent('CI <ci@acme.test>')}`;
    const result = await activities(url).sendEmail({ sessionId: s.sessionId, to: ['a@acme.test', 'b@acme.test'], summary: summary(s.sessionId, { status: 'passed' }) });
    expect(result).toEqual({ sent: true, detail: `sent to a@acme.test, b@acme.test through ${smtp.url}` });
    const [mail] = await smtp.waitForMessages(1);
    expect(mail!.to).toEqual(['a@acme.test', 'b@acme.test']);
    expect(mail!.from).toBe('ci@acme.test');
    expect(mail!.headers.from).toBe('CI <ci@acme.test>');
    expect(mail!.subject).toBe(`[Sluice] acme/app master #${s.sessionId} passed`);
  });

  it('logs in with the credentials of SMTP_URL', async () => {
    const smtp = await sink({ auth: { user: 'sluice', pass: PASSWORD } });
    const s = await session();
    const url = smtp.url.replace('smtp://', `smtp://sluice:${encodeURIComponent(PASSWORD)}@`);
    const result = await activities(url).sendEmail({ sessionId: s.sessionId, summary: summary(s.sessionId) });
    expect(result).toEqual({ sent: true, detail: `sent to builds@acme.test through ${smtp.url}` });
    expect((await smtp.waitForMessages(1))[0]!.user).toBe('sluice');
  });

  it('a refused login fails at once, recorded, and never shows the password', async () => {
    const smtp = await sink({ auth: { user: 'sluice', pass: 'the-right-one' } });
    const s = await session();
    const url = smtp.url.replace('smtp://', `smtp://sluice:${PASSWORD}@`);
    const result = await activities(url).sendEmail({ sessionId: s.sessionId, summary: summary(s.sessionId) });
    expect(result.sent).toBe(false);
    expect(result.detail).toMatch(new RegExp(`^could not send to builds@acme\\.test through ${smtp.url}: .*535.*\\(1 attempt\\)$`));
    expect(smtp.logins).toEqual(['sluice']);
    const [row] = await postBuildSteps(db.pool, s.sessionId);
    expect(row).toEqual({ step: 'email', ok: false, detail: result.detail });
    expect(row!.detail).not.toContain(PASSWORD);
    expect(row!.detail).not.toContain(Buffer.from(`\0sluice\0${PASSWORD}`).toString('base64'));
  });

  it('retries a temporary refusal (4xx), and gives up on a permanent one (5xx) at once', async () => {
    const smtp = await sink();
    const s = await session();
    smtp.failNext(1, 451, 'try again later');
    const run = await activities(smtp.url).attempts({ sessionId: s.sessionId, summary: summary(s.sessionId) });
    const ok = run.result;
    expect(ok.sent).toBe(true);
    expect(smtp.messages).toHaveLength(1);
    expect(run.attempts).toBe(2);
    expect(run.failures).toEqual([expect.any(ApplicationFailure)]);
    expect(run.failures[0]).toMatchObject({ type: FAILURE_TYPES.emailRetrying, nonRetryable: false });
    expect((run.failures[0] as Error).message).toMatch(/^email attempt 1 of 3 failed, to be retried: could not send to builds@acme\.test through .*451 try again later$/);

    smtp.failNext(5, 554, 'no thanks');
    const refused = await activities(smtp.url).sendEmail({ sessionId: s.sessionId, summary: summary(s.sessionId) });
    expect(refused.sent).toBe(false);
    expect(refused.detail).toMatch(/554 no thanks.*\(1 attempt\)$/);
    expect(smtp.messages).toHaveLength(1);
    expect((await postBuildSteps(db.pool, s.sessionId)).map((r) => r.ok)).toEqual([true, false]);
  });

  it('a mail server that is down: a few attempts, then the failure is returned and recorded', async () => {
    const port = await closedPort();
    const s = await session();
    const result = await activities(`smtp://127.0.0.1:${port}`).sendEmail({ sessionId: s.sessionId, summary: summary(s.sessionId) });
    expect(result.sent).toBe(false);
    expect(result.detail).toMatch(new RegExp(`^could not send to builds@acme\\.test through smtp://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED.*\\(3 attempts\\)$`));
    expect(await postBuildSteps(db.pool, s.sessionId)).toEqual([{ step: 'email', ok: false, detail: result.detail }]);
  });

  it('one attempt at a time: a retryable failure records nothing until the last attempt the policy allows', async () => {
    const port = await closedPort();
    const s = await session();
    const raw = rawActivities(`smtp://127.0.0.1:${port}`);
    const input = { sessionId: s.sessionId, summary: summary(s.sessionId) };
    const retryPolicy = { maximumAttempts: 2, initialInterval: 2_000, backoffCoefficient: 5, maximumInterval: 10_000 };
    const first = await runActivity(() => raw.sendEmail(input), { attempt: 1, retryPolicy }).result.catch((e: unknown) => e);
    expect(first).toMatchObject({ type: FAILURE_TYPES.emailRetrying, nonRetryable: false });
    expect(await postBuildSteps(db.pool, s.sessionId)).toEqual([]);
    const last = await runActivity(() => raw.sendEmail(input), { attempt: 2, retryPolicy }).result;
    expect(last.detail).toMatch(/ECONNREFUSED.*\(2 attempts\)$/);
    expect(await postBuildSteps(db.pool, s.sessionId)).toEqual([{ step: 'email', ok: false, detail: last.detail }]);
  });

  it('smtps: TLS from the start, the certificate verified', async () => {
    const { key, cert } = selfSignedCertificate();
    const smtp = await sink({ tls: { mode: 'implicit', key, cert } });
    expect(smtp.url).toMatch(/^smtps:/);
    const s = await session();

    const untrusted = await activities(smtp.url).sendEmail({ sessionId: s.sessionId, summary: summary(s.sessionId) });
    expect(untrusted.sent).toBe(false);
    expect(untrusted.detail).toMatch(/certificate.*\(1 attempt\)$/i);
    expect(smtp.messages).toHaveLength(0);

    const trusted = await activities(smtp.url, { ca: cert }).sendEmail({ sessionId: s.sessionId, summary: summary(s.sessionId) });
    expect(trusted.sent).toBe(true);
    expect((await smtp.waitForMessages(1))[0]!.secure).toBe(true);
  });

  it('smtp: STARTTLS when the server offers it, the certificate verified', async () => {
    const { key, cert } = selfSignedCertificate();
    const smtp = await sink({ tls: { mode: 'starttls', key, cert } });
    const s = await session();

    const untrusted = await activities(smtp.url).sendEmail({ sessionId: s.sessionId, summary: summary(s.sessionId) });
    expect(untrusted.sent).toBe(false);
    expect(untrusted.detail).toMatch(/certificate.*\(1 attempt\)$/i);
    expect(smtp.messages).toHaveLength(0);

    const trusted = await activities(smtp.url, { ca: cert }).sendEmail({ sessionId: s.sessionId, summary: summary(s.sessionId) });
    expect(trusted.sent).toBe(true);
    expect((await smtp.waitForMessages(1))[0]!.secure).toBe(true);
  });

  it('an SMTP_URL that cannot be used is recorded as the failure', async () => {
    const s = await session();
    const bad = await activities('http://mail.example.test').sendEmail({ sessionId: s.sessionId, summary: summary(s.sessionId) });
    expect(bad).toEqual({ sent: false, detail: 'SMTP_URL: unsupported scheme http: (smtp: or smtps:)' });
    const unknown = await activities('smtp://mail.example.test?secure=false').sendEmail({ sessionId: s.sessionId, summary: summary(s.sessionId) });
    expect(unknown).toEqual({ sent: false, detail: 'SMTP_URL: unknown parameter "secure" (only "from" is read)' });
    expect((await postBuildSteps(db.pool, s.sessionId)).map((r) => r.ok)).toEqual([false, false]);
  });
});

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

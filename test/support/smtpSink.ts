/**
 * A real SMTP server for tests (the `smtp-server` package) on loopback that keeps every message
 * it accepts: envelope, raw text, and the headers and plain-text body decoded. It can require a
 * login, speak TLS from the start (smtps) or offer STARTTLS with a given certificate, and turn
 * away the next messages with a reply code of the test's choosing.
 */
import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';

export interface ReceivedMail {
  /** Envelope sender (MAIL FROM). */
  from: string;
  /** Envelope recipients (RCPT TO). */
  to: string[];
  /** The message as it arrived, CRLF line ends. */
  raw: string;
  /** Header names in lower case, folded lines joined, encoded words decoded. */
  headers: Record<string, string>;
  subject: string;
  /** The body, transfer encoding undone (single-part text messages). */
  text: string;
  /** Who logged in, if anyone. */
  user: string | null;
  /** Whether the connection was encrypted (smtps, or after STARTTLS). */
  secure: boolean;
}

export interface SmtpSinkOptions {
  /** Require this login (AUTH PLAIN/LOGIN), allowed over plain connections since this is loopback. */
  auth?: { user: string; pass: string };
  /** `implicit`: TLS from the first byte (smtps://); `starttls`: offered with this certificate. */
  tls?: { mode: 'implicit' | 'starttls'; key: string; cert: string };
}

export interface SmtpSink {
  port: number;
  /** `smtp://127.0.0.1:<port>` (or `smtps://`), without credentials. */
  url: string;
  messages: ReceivedMail[];
  /** Every login attempt's user name, accepted or not. */
  logins: string[];
  /** Turns away the next `count` messages (after DATA) with `code` and `message`. */
  failNext(count: number, code: number, message: string): void;
  /** Resolves once `count` messages arrived; rejects after timeoutMs. */
  waitForMessages(count: number, timeoutMs?: number): Promise<ReceivedMail[]>;
  close(): Promise<void>;
}

export async function startSmtpSink(opts: SmtpSinkOptions = {}): Promise<SmtpSink> {
  const messages: ReceivedMail[] = [];
  const logins: string[] = [];
  const waiters = new Set<() => void>();
  let failures: { count: number; code: number; message: string } | null = null;

  const options: SMTPServerOptions = {
    logger: false,
    disableReverseLookup: true,
    authOptional: !opts.auth,
    allowInsecureAuth: true,
    ...(opts.tls?.mode === 'implicit' ? { secure: true, key: opts.tls.key, cert: opts.tls.cert } : {}),
    ...(opts.tls?.mode === 'starttls' ? { key: opts.tls.key, cert: opts.tls.cert } : {}),
    // Without a certificate of the test's, STARTTLS would offer smtp-server's built-in one.
    disabledCommands: [...(opts.tls ? [] : ['STARTTLS']), ...(opts.auth ? [] : ['AUTH'])],
    onAuth(auth, _session, callback) {
      logins.push(auth.username ?? '');
      if (opts.auth && auth.username === opts.auth.user && auth.password === opts.auth.pass) {
        return callback(null, { user: auth.username });
      }
      return callback(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        if (failures && failures.count > 0) {
          failures.count -= 1;
          const { code, message } = failures;
          return callback(Object.assign(new Error(message), { responseCode: code }));
        }
        const raw = Buffer.concat(chunks).toString('utf8');
        const { headers, body } = parseMessage(raw);
        messages.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw,
          headers,
          subject: headers.subject ?? '',
          text: decodeBody(body, headers['content-transfer-encoding'] ?? '7bit'),
          user: typeof session.user === 'string' ? session.user : null,
          secure: session.secure,
        });
        for (const wake of waiters) wake();
        callback();
      });
    },
  };
  const server = new SMTPServer(options);
  server.on('error', () => undefined); // a client that hangs up mid-session

  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.server.off('error', reject);
      resolve();
    });
  });
  const port = (server.server.address() as AddressInfo).port;

  return {
    port,
    url: `${opts.tls?.mode === 'implicit' ? 'smtps' : 'smtp'}://127.0.0.1:${port}`,
    messages,
    logins,
    failNext(count, code, message) {
      failures = { count, code, message };
    },
    waitForMessages(count, timeoutMs = 5_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (messages.length < count) return;
          done();
          resolve(messages);
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`smtp sink: ${count} message(s) not received within ${timeoutMs} ms; got ${messages.length}`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Headers (unfolded, lower-case names, encoded words decoded) and the raw body. */
export function parseMessage(raw: string): { headers: Record<string, string>; body: string } {
  const split = raw.indexOf('\r\n\r\n');
  const head = split === -1 ? raw : raw.slice(0, split);
  const body = split === -1 ? '' : raw.slice(split + 4);
  const headers: Record<string, string> = {};
  for (const line of head.replace(/\r\n[ \t]+/g, ' ').split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    headers[line.slice(0, colon).trim().toLowerCase()] = decodeWords(line.slice(colon + 1).trim());
  }
  return { headers, body };
}

/** RFC 2047 encoded words (`=?UTF-8?Q?...?=`, `=?UTF-8?B?...?=`); adjacent ones join without the space. */
function decodeWords(value: string): string {
  return value
    .replace(/(\?=)\s+(=\?)/g, '$1$2')
    .replace(/=\?([^?]+)\?([QqBb])\?([^?]*)\?=/g, (_m, _charset: string, enc: string, text: string) =>
      enc.toUpperCase() === 'B'
        ? Buffer.from(text, 'base64').toString('utf8')
        : Buffer.from(qpBytes(text.replace(/_/g, ' '))).toString('utf8'),
    );
}

function qpBytes(text: string): number[] {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const hex = text.slice(i + 1, i + 3);
    if (text[i] === '=' && /^[0-9A-Fa-f]{2}$/.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(text[i]!, 'utf8'));
    }
  }
  return bytes;
}

function decodeBody(body: string, encoding: string): string {
  const enc = encoding.toLowerCase();
  let text: string;
  if (enc === 'base64') text = Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
  else if (enc === 'quoted-printable') text = Buffer.from(qpBytes(body.replace(/=\r\n/g, ''))).toString('utf8');
  else text = body;
  return text.replace(/\r\n/g, '\n');
}

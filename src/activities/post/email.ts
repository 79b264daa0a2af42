/**
 * The build notification e-mail (spec §1 step 6), sent through `SMTP_URL` with nodemailer.
 *
 * `SMTP_URL`: `smtp://[user:password@]host[:port]` (port 587 by default; STARTTLS whenever the
 * server offers it) or `smtps://...` (TLS from the start, port 465 by default). Certificates
 * are always verified. `?from=<address>` sets the sender; by default `sluice@<host of
 * SLUICE_BASE_URL>`. The password never appears in what we return or store.
 *
 * One call is one attempt. It says whether another attempt may succeed (connection trouble,
 * time-outs, 4xx replies) and what to record should this one be the last; the sendEmail
 * activity leaves the next attempt to Temporal's retry policy. A failure is returned, never
 * thrown: a mail server that is down must not fail the build.
 */
import { isIP } from 'node:net';
import type { ConnectionOptions } from 'node:tls';
import { createTransport } from 'nodemailer';
import type { SMTPTransportOptions } from 'nodemailer/lib/smtp-transport';
import { attemptsText } from '../attempt';

export interface SmtpSettings {
  transport: SMTPTransportOptions;
  from: string;
  /** `smtp://host:port`: what messages may show of the server. */
  display: string;
  /** The credentials, to be cut out of any error text. */
  secrets: string[];
}

const DEFAULT_TIMEOUT_MS = 30_000;

function decode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** The sender when SMTP_URL names none: `Sluice <sluice@ci.acme.example>`. */
export function defaultSender(baseUrl: string): string {
  let host = 'localhost';
  try {
    const h = new URL(baseUrl).hostname;
    if (h.includes('.') && isIP(h.replace(/^\[|\]$/g, '')) === 0) host = h;
  } catch {
    // keep localhost
  }
  return `Sluice <sluice@${host}>`;
}

/** Reads SMTP_URL; `{ error }` says what is wrong with it without repeating a password. */
export function parseSmtpUrl(raw: string, baseUrl: string, opts: { timeoutMs?: number; tls?: ConnectionOptions } = {}): SmtpSettings | { error: string } {
  let u: URL;
  try {
    u = new URL(raw.trim());
  } catch {
    return { error: 'SMTP_URL is not a URL (smtp://host:port or smtps://host:port)' };
  }
  if (u.protocol !== 'smtp:' && u.protocol !== 'smtps:') {
    return { error: `SMTP_URL: unsupported scheme ${u.protocol} (smtp: or smtps:)` };
  }
  if (!u.hostname) return { error: 'SMTP_URL has no host' };
  const secure = u.protocol === 'smtps:';
  const port = u.port ? Number(u.port) : secure ? 465 : 587;
  const user = decode(u.username);
  const pass = decode(u.password);
  let from: string | undefined;
  for (const [name, value] of u.searchParams) {
    if (name === 'from' && value.trim()) from = value.trim();
    else return { error: `SMTP_URL: unknown parameter ${JSON.stringify(name)} (only "from" is read)` };
  }
  const timeout = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const host = u.hostname.replace(/^\[|\]$/g, '');
  return {
    transport: {
      host,
      port,
      secure,
      ...(user ? { auth: { user, pass } } : {}),
      connectionTimeout: timeout,
      greetingTimeout: timeout,
      socketTimeout: timeout,
      dnsTimeout: timeout,
      // Whatever NODE_TLS_REJECT_UNAUTHORIZED says, as for webhooks.
      tls: { ...opts.tls, rejectUnauthorized: true },
      disableFileAccess: true,
      disableUrlAccess: true,
    },
    from: from ?? defaultSender(baseUrl),
    display: `${u.protocol}//${u.host}`,
    secrets: [pass, user && pass ? Buffer.from(`\0${user}\0${pass}`).toString('base64') : ''].filter((s) => s.length > 0),
  };
}

export interface Mail {
  to: string[];
  subject: string;
  text: string;
  /** Extra headers (`X-Sluice-Session`, ...). */
  headers?: Record<string, string>;
}

export interface SendMailOptions {
  smtp: SmtpSettings;
  mail: Mail;
  /** This attempt's number, from 1: failures say how many attempts they took. */
  attempt: number;
}

export interface SendMailResult {
  sent: boolean;
  /** What the step records, should this attempt be the last. */
  detail: string;
  /** Set when another attempt may succeed: why this one failed. */
  retry?: { error: string };
}

interface SmtpError {
  code?: string;
  responseCode?: number;
  permanent?: boolean;
  message?: string;
}

/** Whether another attempt may succeed: connection trouble and 4xx replies, not a bad certificate, 5xx or a refused login. */
export function isTransientSmtpError(err: SmtpError): boolean {
  if (typeof err.responseCode === 'number') return err.permanent === false || (err.responseCode >= 400 && err.responseCode < 500);
  if (/certificate|self[- ]signed/i.test(err.message ?? '')) return false;
  return ['ECONNECTION', 'ETIMEDOUT', 'ESOCKET', 'EDNS'].includes(err.code ?? '');
}

function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of [...secrets].sort((a, b) => b.length - a.length)) out = out.split(s).join('[redacted]');
  // One line, printable: the detail is shown on a web page and in logs.
  return out.replace(/[^\x20-\x7e\u00a0-\uffff]+/g, ' ').trim();
}

export async function sendMail(opts: SendMailOptions): Promise<SendMailResult> {
  const { smtp, mail } = opts;
  const to = mail.to.join(', ');
  const transport = createTransport(smtp.transport);
  try {
    const info = await transport.sendMail({
      from: smtp.from,
      to: mail.to,
      subject: mail.subject,
      text: mail.text,
      headers: { 'Auto-Submitted': 'auto-generated', ...mail.headers },
    });
    const rejected = info.rejected.map(String);
    const detail = rejected.length > 0 ? `; rejected: ${rejected.join(', ')}` : '';
    return { sent: true, detail: `sent to ${to} through ${smtp.display}${detail}` };
  } catch (err) {
    const e = (err ?? {}) as SmtpError;
    const why = `could not send to ${to} through ${smtp.display}: ${redact(e.message || String(err), smtp.secrets)}`;
    const failed = { sent: false, detail: `${why} ${attemptsText(opts.attempt)}` };
    return isTransientSmtpError(e) ? { ...failed, retry: { error: why } } : failed;
  } finally {
    transport.close();
  }
}

/**
 * Posting the build's summary to a Slack-compatible incoming webhook (spec §1 step 5).
 *
 * It goes out through the outgoing-webhook sender (delivery/send.ts), so it gets the same
 * protections: the SSRF guard on the address actually connected to (SLUICE_WEBHOOK_ALLOW opens
 * ranges), certificates always verified, redirects never followed, a deadline per attempt.
 *
 * An incoming-webhook URL is a credential (Slack's carry their token in the path), so it never
 * appears in what we return or store: only its origin does, and the path is cut out of any
 * error text.
 *
 * Retrying: a few attempts here (connection errors, time-outs, 408, 429 with its Retry-After,
 * 5xx), then the outcome is returned, never thrown: a chat service that is down must not hold
 * up or fail the build.
 */
import type { Dispatcher } from 'undici';
import { sendWebhook } from '../../delivery/send';
import type { Cidr } from '../../delivery/ssrf';
import type { ChatMessage } from './summary';

export interface PostChatOptions {
  url: string;
  message: ChatMessage;
  /** SLUICE_WEBHOOK_ALLOW. */
  allow: readonly Cidr[];
  /** Deadline of one attempt. Default 10 s. */
  timeoutMs?: number;
  /** Pauses before the second, third, ... attempt; its length bounds the attempts. Default 2 s, 5 s. */
  retryDelaysMs?: readonly number[];
  /** Longest pause a Retry-After may ask for. Default 30 s. */
  maxRetryAfterMs?: number;
  /** Called while waiting between attempts (the activity heartbeats). */
  sleep?: (ms: number) => Promise<void>;
  /** Tests: replaces the guarded Agent. */
  dispatcher?: Dispatcher;
}

export interface PostChatResult {
  posted: boolean;
  detail: string;
  attempts: number;
}

export const CHAT_USER_AGENT = 'Sluice-Chat/1';
export const DEFAULT_CHAT_RETRY_DELAYS_MS = [2_000, 5_000] as const;

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** `https://hooks.slack.com`: what may be shown of a chat URL. Null when it is not an http(s) URL. */
export function chatOrigin(raw: string): string | null {
  try {
    const u = new URL(raw.trim());
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.origin : null;
  } catch {
    return null;
  }
}

export async function postChatMessage(opts: PostChatOptions): Promise<PostChatResult> {
  const origin = chatOrigin(opts.url);
  if (!origin) return { posted: false, detail: 'the chat URL is not an http(s) URL', attempts: 0 };
  const u = new URL(opts.url.trim());
  // The parts of the URL that may be secret: cut out of every error text.
  const redact = [opts.url.trim(), u.href, `${u.pathname}${u.search}`, u.pathname, u.search.slice(1), u.password]
    .filter((s) => s.length > 1);
  const delays = opts.retryDelaysMs ?? DEFAULT_CHAT_RETRY_DELAYS_MS;
  const sleep = opts.sleep ?? defaultSleep;
  const body = JSON.stringify(opts.message);

  let attempts = 0;
  for (;;) {
    attempts += 1;
    const result = await sendWebhook({
      url: opts.url,
      body,
      headers: { 'user-agent': CHAT_USER_AGENT },
      allow: opts.allow,
      timeoutMs: opts.timeoutMs,
      dispatcher: opts.dispatcher,
      redact,
    });
    const tries = `${attempts} ${attempts === 1 ? 'attempt' : 'attempts'}`;
    if (result.kind === 'delivered') {
      return { posted: true, detail: `posted to ${origin} (HTTP ${result.statusCode})`, attempts };
    }
    const error = result.error ?? 'failed';
    if (result.kind === 'fatal' || attempts > delays.length) {
      return { posted: false, detail: `could not post to ${origin}: ${error} (${tries})`, attempts };
    }
    const wanted = Math.min(result.retryAfterMs ?? 0, opts.maxRetryAfterMs ?? 30_000);
    await sleep(Math.max(delays[attempts - 1]!, wanted));
  }
}

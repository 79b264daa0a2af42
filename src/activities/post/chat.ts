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
 * One call is one attempt. It says whether another attempt may succeed (connection errors,
 * time-outs, 408, 429 with its Retry-After, 5xx) and what to record should this one be the
 * last; the postChat activity leaves the next attempt to Temporal's retry policy. A failure is
 * returned, never thrown: a chat service that is down must not hold up or fail the build.
 */
import type { Dispatcher } from 'undici';
import { sendWebhook } from '../../delivery/send';
import type { Cidr } from '../../ip/ranges';
import { attemptsText } from '../attempt';
import type { ChatMessage } from './summary';

export interface PostChatOptions {
  url: string;
  message: ChatMessage;
  /** SLUICE_WEBHOOK_ALLOW. */
  allow: readonly Cidr[];
  /** This attempt's number, from 1: failures say how many attempts they took. */
  attempt: number;
  /** Deadline of one attempt. Default 10 s. */
  timeoutMs?: number;
  /** Longest pause a Retry-After may ask for. Default 30 s. */
  maxRetryAfterMs?: number;
  /** Tests: replaces the guarded Agent. */
  dispatcher?: Dispatcher;
}

export interface PostChatResult {
  posted: boolean;
  /** What the step records, should this attempt be the last. */
  detail: string;
  /** Set when another attempt may succeed: why this one failed, and the server's Retry-After. */
  retry?: { error: string; afterMs?: number };
}

export const CHAT_USER_AGENT = 'Sluice-Chat/1';
export const MAX_CHAT_RETRY_AFTER_MS = 30_000;

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
  if (!origin) return { posted: false, detail: 'the chat URL is not an http(s) URL' };
  const u = new URL(opts.url.trim());
  // The parts of the URL that may be secret: cut out of every error text.
  const redact = [opts.url.trim(), u.href, `${u.pathname}${u.search}`, u.pathname, u.search.slice(1), u.password]
    .filter((s) => s.length > 1);

  const result = await sendWebhook({
    url: opts.url,
    body: JSON.stringify(opts.message),
    headers: { 'user-agent': CHAT_USER_AGENT },
    allow: opts.allow,
    timeoutMs: opts.timeoutMs,
    dispatcher: opts.dispatcher,
    redact,
  });
  if (result.kind === 'delivered') return { posted: true, detail: `posted to ${origin} (HTTP ${result.statusCode})` };
  const error = result.error ?? 'failed';
  const failed = { posted: false, detail: `could not post to ${origin}: ${error} ${attemptsText(opts.attempt)}` };
  if (result.kind === 'fatal') return failed;
  const afterMs = result.retryAfterMs && result.retryAfterMs > 0 ? Math.min(result.retryAfterMs, opts.maxRetryAfterMs ?? MAX_CHAT_RETRY_AFTER_MS) : undefined;
  return { ...failed, retry: { error: `could not post to ${origin}: ${error}`, afterMs } };
}

/**
 * `webhooks`, `deliveries`, `redeliver`: an organization's outgoing webhooks, the log of each
 * one's delivery attempts, and sending an attempt's event again (same `xid`).
 */
import type { Command } from 'commander';
import { z } from 'zod';
import { EVENTS } from '../../core/types';
import { commandOnId, withCommonOptions, type Options } from '../common';
import { connect } from '../connection';
import { EXIT } from '../errors';
import { oneOf, positiveId } from '../inputs';
import { durationText, print, printJson, table, timeText } from '../render';
import { Delivery, Webhook } from '../schemas';
import { orgListCommand } from './repos';

const DELIVERY_EVENTS = [...EVENTS, 'ping'] as const;
const OUTCOMES = ['delivered', 'retrying', 'gave_up', 'dropped'] as const;

export function registerWebhookCommands(program: Command): void {
  orgListCommand(program, 'webhooks', 'list outgoing webhooks, of one organization or all', {
    item: Webhook,
    header: ['ID', 'ORG', 'URL', 'ACTIVE', 'SIGNED', 'AUTH', 'CLOSURE'],
    row: (w, org) => [w.id, org.name, w.url, w.active ? 'yes' : 'no', w.signed ? 'yes' : 'no', w.username ?? (w.has_password ? 'password' : null), w.closure ? 'yes' : 'no'],
    none: '(no webhooks)',
  });

  withCommonOptions(
    commandOnId(program, 'deliveries', "a webhook's delivery attempts, newest first", '<webhook>', 'the webhook id')
      .option('--event <event>', `only this event (${DELIVERY_EVENTS.join(', ')})`, oneOf(DELIVERY_EVENTS))
      .option('--outcome <outcome>', `only this outcome (${OUTCOMES.join(', ')})`, oneOf(OUTCOMES))
      .option('--session <session>', "only this session's", positiveId)
      .option('-n, --limit <n>', 'at most this many (1-500, default 50)', positiveId)
      .option('--before <delivery>', 'only attempts older than this one (the next page)', positiveId),
  ).action(async (webhook: number, opts: Options<{ event?: string; outcome?: string; session?: number; limit?: number; before?: number }>) => {
    const q = new URLSearchParams();
    for (const k of ['event', 'outcome', 'session', 'limit', 'before'] as const) if (opts[k] !== undefined) q.set(k, String(opts[k]));
    const { data, raw } = await connect(opts).call('GET', `/api/v1/webhooks/${webhook}/deliveries?${q}`, z.array(Delivery));
    if (opts.json) return printJson(raw);
    print(
      table(
        ['ID', 'EVENT', 'SESSION', 'ATTEMPT', 'OUTCOME', 'HTTP', 'DURATION', 'WHEN', 'ERROR'],
        data.map((d) => [d.id, d.event, d.session, d.attempt, d.outcome, d.status_code, durationText(d.duration_ms), timeText(d.created_at), d.error]),
        '(no deliveries)',
      ),
    );
  });

  withCommonOptions(
    commandOnId(program, 'redeliver', "send an attempt's event again, now, with the same xid; exits 1 unless the receiver took it", '<delivery>', 'the delivery (attempt) id'),
  ).action(async (id: number, opts: Options) => {
    const { data, raw } = await connect(opts).call('POST', `/api/v1/deliveries/${id}/redeliver`, Delivery);
    if (opts.json) printJson(raw);
    else print(`attempt ${data.id} (${data.event}, attempt ${data.attempt}): ${data.outcome}${data.status_code === null ? '' : ` (HTTP ${data.status_code})`}${data.error ? `: ${data.error}` : ''}\n`);
    if (data.outcome !== 'delivered') process.exitCode = EXIT.failed;
  });
}

/**
 * What the chat message and the e-mail say about a finished build, as pure functions of the
 * build's summary and its failing test files. No I/O: chat.ts and email.ts send what these make.
 */
import { stripVTControlCharacters } from 'node:util';
import type { Counts } from '../../core/types';
import type { BuildSummary } from '../types';

/** A test file that did not pass, as test_results has it. */
export interface FailingTest {
  path: string;
  status: string;
}

/** Slack caps a section's text at 3000 characters; we stay well below. */
const MAX_CHAT_FAILING = 10;
const MAX_EMAIL_FAILING = 100;
const MAX_PATH_CHARS = 200;
const MAX_REASON_CHARS = 500;

const EMOJI: Record<string, string> = {
  passed: ':white_check_mark:',
  failed: ':x:',
  error: ':warning:',
  skipped: ':fast_forward:',
  stopped: ':black_square_for_stop:',
};

/** `acme/app @ master #12` */
export function buildLabel(s: BuildSummary): string {
  return `${s.repo.orgName}/${s.repo.name} @ ${s.branch} #${s.session}`;
}

/** Number of test files the counts cover. */
export function totalTests(c: Counts): number {
  return c.notstarted + c.started + c.passed + c.failed + c.pending + c.skipped + c.error;
}

/**
 * `3 passed, 1 failed, 0 errors, 0 skipped (4 test files)`: the four that always matter, and
 * the in-between ones only when a stopped build left some.
 */
export function countsText(c: Counts): string {
  const parts = [`${c.passed} passed`, `${c.failed} failed`, `${c.error} ${c.error === 1 ? 'error' : 'errors'}`, `${c.skipped} skipped`];
  if (c.notstarted > 0) parts.push(`${c.notstarted} not started`);
  if (c.started > 0) parts.push(`${c.started} running`);
  if (c.pending > 0) parts.push(`${c.pending} pending`);
  const total = totalTests(c);
  return `${parts.join(', ')} (${total} test ${total === 1 ? 'file' : 'files'})`;
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** One line: terminal escapes (a hook's colours in a reason) go, other control characters (a newline) become spaces. */
function oneLine(text: string): string {
  // eslint-disable-next-line no-control-regex
  return stripVTControlCharacters(text).replace(/[\x00-\x1f\x7f]+/g, ' ').trim();
}

function shortCommit(id: string | null): string {
  return id ? id.slice(0, 12) : '(none)';
}

// --- chat -------------------------------------------------------------------------------------

/** Slack's mrkdwn: only `&`, `<` and `>` are special (they make links and mentions). */
export function escapeMrkdwn(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** `<url|label>`; the URL may not contain what ends the link. */
function mrkdwnLink(url: string, label: string): string {
  const safeUrl = url.replace(/&/g, '&amp;').replace(/[<>|\s]/g, (c) => encodeURIComponent(c));
  return `<${safeUrl}|${escapeMrkdwn(label)}>`;
}

export interface ChatMessage {
  /** The whole message in one line: what notifications, and receivers without blocks, show. */
  text: string;
  blocks: unknown[];
}

/**
 * A Slack-compatible incoming-webhook body (`{ text, blocks }`; Mattermost, Rocket.Chat and
 * Teams' Slack-compatible hooks read `text`): status, counts, link to the report, repository @
 * branch, commit, and the first failing files.
 */
export function chatMessage(s: BuildSummary, failing: readonly FailingTest[] = []): ChatMessage {
  const emoji = EMOJI[s.status] ?? ':grey_question:';
  const label = buildLabel(s);
  const counts = countsText(s.counts);
  const text = `${emoji} ${escapeMrkdwn(label)} ${escapeMrkdwn(s.status)}: ${escapeMrkdwn(counts)}, commit ${escapeMrkdwn(shortCommit(s.commitId))} (${mrkdwnLink(s.url, 'report')})`;

  const fields = [
    { type: 'mrkdwn', text: `*Status*\n${escapeMrkdwn(s.status)}` },
    { type: 'mrkdwn', text: `*Commit*\n${escapeMrkdwn(shortCommit(s.commitId))}` },
    { type: 'mrkdwn', text: `*Tests*\n${escapeMrkdwn(counts)}` },
  ];
  if (s.profileName) fields.push({ type: 'mrkdwn', text: `*Profile*\n${escapeMrkdwn(s.profileName)}` });
  const blocks: unknown[] = [
    { type: 'section', text: { type: 'mrkdwn', text: `${emoji} *${mrkdwnLink(s.url, label)}* ${escapeMrkdwn(s.status)}` } },
    { type: 'section', fields },
  ];
  if (failing.length > 0) {
    const shown = failing
      .slice(0, MAX_CHAT_FAILING)
      .map((t) => `• ${escapeMrkdwn(clip(oneLine(t.path), MAX_PATH_CHARS))} (${escapeMrkdwn(t.status)})`);
    if (failing.length > MAX_CHAT_FAILING) shown.push(`… and ${failing.length - MAX_CHAT_FAILING} more`);
    blocks.push({ type: 'section', text: { type: 'mrkdwn', text: `*Failing*\n${shown.join('\n')}` } });
  }
  if (s.reason) {
    blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: escapeMrkdwn(clip(oneLine(s.reason), MAX_REASON_CHARS)) }] });
  }
  return { text, blocks };
}

// --- e-mail -----------------------------------------------------------------------------------

/** `[Sluice] acme/app master #12 passed` */
export function emailSubject(s: BuildSummary): string {
  return oneLine(`[Sluice] ${s.repo.orgName}/${s.repo.name} ${s.branch} #${s.session} ${s.status}`);
}

/** The plain-text body: status, counts, commit, failing files and the report link. */
export function emailText(s: BuildSummary, failing: readonly FailingTest[] = []): string {
  const lines = [`${buildLabel(s)}: ${s.status}`, ''];
  lines.push(`Status:  ${s.status}`);
  if (s.reason) lines.push(`Reason:  ${clip(oneLine(s.reason), MAX_REASON_CHARS)}`);
  lines.push(`Commit:  ${s.commitId ?? '(none)'}`);
  if (s.profileName) lines.push(`Profile: ${s.profileName}`);
  lines.push(`Tests:   ${countsText(s.counts)}`);
  if (failing.length > 0) {
    lines.push('', 'Failing test files:');
    for (const t of failing.slice(0, MAX_EMAIL_FAILING)) lines.push(`  ${t.status.padEnd(7)} ${clip(oneLine(t.path), MAX_PATH_CHARS)}`);
    if (failing.length > MAX_EMAIL_FAILING) lines.push(`  … and ${failing.length - MAX_EMAIL_FAILING} more`);
  }
  lines.push('', `Report:  ${s.url}`, '', '-- ', 'Sluice');
  return `${lines.join('\n')}\n`;
}

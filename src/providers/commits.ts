import { z } from 'zod';
import { zSha } from './refs';
import type { ProviderCommit } from './types';

/** Commits and their authors as the GitHub-like providers (GitHub, GitLab, Gitea, Gogs) send them. */

const zPerson = z
  .object({
    name: z.string().nullish(),
    email: z.string().nullish(),
  })
  .nullish();

export const zCommit = z.object({
  id: zSha,
  message: z.string(),
  author: zPerson,
});

export type PayloadCommit = z.output<typeof zCommit>;

export function toCommit(c: PayloadCommit): ProviderCommit {
  return { id: c.id, message: c.message, author: person(c.author?.name, c.author?.email) };
}

/**
 * Who wrote a commit, as one string: the email address when there is a real one (committers
 * in the outgoing payload are matched by email), else the name. GitLab sends `[REDACTED]` and
 * Gerrit may send no email at all.
 */
export function person(name: string | null | undefined, email: string | null | undefined): string {
  if (email && email.includes('@')) return email.trim();
  return (name ?? '').trim();
}

/** `Jane Doe <jane@example.com>` (Bitbucket `author.raw`, Gerrit accounts) → the address. */
export function personFromRaw(raw: string | null | undefined): string {
  if (!raw) return '';
  const angle = /<([^<>\s]+@[^<>\s]+)>/.exec(raw);
  if (angle) return angle[1]!;
  const paren = /\(([^()\s]+@[^()\s]+)\)/.exec(raw);
  if (paren) return paren[1]!;
  return raw.trim();
}

/**
 * Oldest first, head last. GitHub and GitLab already list commits so; Gitea, Gogs and
 * Bitbucket list the newest first. When the head is the first of several, the list is
 * newest-first and is reversed; when the order cannot be told, it is kept.
 */
export function oldestFirst(commits: ProviderCommit[], head: string | null): ProviderCommit[] {
  if (commits.length > 1 && head !== null && sameCommit(commits[0]!.id, head) && !sameCommit(commits.at(-1)!.id, head)) {
    return [...commits].reverse();
  }
  return commits;
}

/** Adds the head commit the payload describes on its own (GitHub `head_commit`) if it is not listed. */
export function withHead(commits: ProviderCommit[], head: ProviderCommit | null | undefined): ProviderCommit[] {
  if (!head || commits.some((c) => sameCommit(c.id, head.id))) return commits;
  return [...commits, head];
}

/** Abbreviated ids (Bitbucket) match their full form. */
function sameCommit(a: string, b: string): boolean {
  const [x, y] = [a.toLowerCase(), b.toLowerCase()];
  return x.startsWith(y) || y.startsWith(x);
}

import { z } from 'zod';
import { checkBranchName, checkTagName, malformed } from './common';

/**
 * Refs and commit ids as providers send them. Every name that later reaches git is checked
 * here (git's ref-name rules), so no adapter can hand on a branch like `--upload-pack=...`.
 */

const SHA = /^[0-9a-f]{7,64}$/i;

/** A commit id: 7 (abbreviated, as Bitbucket Cloud pull requests send) to 64 (SHA-256) hex digits. */
export const zSha = z.string().refine((v) => SHA.test(v), { error: 'expected a commit id (7 to 64 hex digits)' });

/** Git's "no commit" (`0000...`), which providers send as `before` of a create and `after` of a delete. */
export function isNullSha(sha: string | null | undefined): boolean {
  return typeof sha === 'string' && /^0+$/.test(sha);
}

export function checkSha(value: string, field: string): string {
  if (!SHA.test(value)) malformed(field, 'expected a commit id (7 to 64 hex digits)');
  return value;
}

export type RefTarget = { type: 'branch'; name: string; ref: string } | { type: 'tag'; name: string; ref: string } | { type: 'other'; ref: string };

/** `refs/heads/x` → branch x, `refs/tags/v1` → tag v1, any other `refs/...` → other. */
export function classifyRef(ref: string, field: string): RefTarget {
  if (ref.startsWith('refs/heads/')) return { type: 'branch', name: checkBranchName(ref.slice('refs/heads/'.length), field), ref };
  if (ref.startsWith('refs/tags/')) return { type: 'tag', name: checkTagName(ref.slice('refs/tags/'.length), field), ref };
  if (ref.startsWith('refs/')) return { type: 'other', ref };
  malformed(field, 'expected a full ref name (refs/heads/<branch> or refs/tags/<tag>)');
}

/** A short branch name as providers send it in `create`/`delete` events; tolerates a full ref. */
export function branchRef(name: string, field: string): { name: string; ref: string } {
  const short = name.startsWith('refs/heads/') ? name.slice('refs/heads/'.length) : name;
  return { name: checkBranchName(short, field), ref: `refs/heads/${short}` };
}

export function tagRef(name: string, field: string): { name: string; ref: string } {
  const short = name.startsWith('refs/tags/') ? name.slice('refs/tags/'.length) : name;
  return { name: checkTagName(short, field), ref: `refs/tags/${short}` };
}

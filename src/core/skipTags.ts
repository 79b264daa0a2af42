/**
 * Spec §1 "Skip tags": a commit is not built when the first line of its message contains
 * `[no-ci]` or `[no ci]`, or when `@wip` appears anywhere in it (the first line included).
 *
 * Decisions the spec leaves open, made here:
 * - case does not matter (`[No CI]`, `@WIP`): people type these by hand;
 * - `@wip` counts as a word of its own, so an e-mail address (`dev@wipro.example`) or a longer
 *   handle (`@wipeout`, `@wip-team`) in a message skips nothing;
 * - the first line ends at the first `\n`, `\r\n` or `\r`.
 *
 * Dependency-free and pure, so the workflow code may import it too (a generic trigger carries
 * no commit message; only the checkout knows it).
 */

const FIRST_LINE_TAGS = ['[no-ci]', '[no ci]'] as const;

/** `@wip` not glued to a word, an address or a handle on either side. */
const WIP = /(?<![\w.+@-])@wip(?![\w@-])/i;

/** Why a commit with this message is skipped, or undefined when it is built. */
export function skipTagReason(message: string): string | undefined {
  const firstLine = message.split(/\r\n|\r|\n/, 1)[0] ?? '';
  const lower = firstLine.toLowerCase();
  for (const tag of FIRST_LINE_TAGS) {
    if (lower.includes(tag)) return `skip tag ${tag} in the first line of the head commit's message`;
  }
  if (WIP.test(message)) return "skip tag @wip in the head commit's message";
  return undefined;
}

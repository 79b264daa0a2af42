/**
 * Masking build secrets out of everything Sluice stores (test output, JUnit messages): every
 * occurrence of a secret's value becomes `****`. Pure; the activities call it right before
 * they write.
 *
 * Rules:
 * - Only values of at least MIN_MASKED_LENGTH (4) characters are masked: shorter ones (`1`,
 *   `on`, `dev`) occur everywhere by chance, and masking them would wreck the output while
 *   hiding nothing worth hiding. The API tells which secrets are too short to be masked.
 * - A multi-line value (a PEM key, say) is masked as a whole and also line by line (each line
 *   trimmed, again only lines of 4 characters or more), so a test that prints one line of it,
 *   or prints it with CRLF line ends, still shows none of it.
 * - Occurrences may overlap (`abcdef` and `cdefgh` in `abcdefgh`) or nest (`s3cr3t` inside
 *   `s3cr3t-long`): every character covered by any occurrence is hidden, and each run of hidden
 *   characters becomes one `****`, so the mask says nothing about lengths and no piece of a
 *   secret survives between two masks. (Replacing longest first, one value after the other,
 *   would leave `gh` of `cdefgh` showing in the first example.)
 * - `cutAtStart`: the text is the tail of something longer (output truncated at the front), so
 *   it may begin with the end of a secret whose start was cut off; the longest such piece is
 *   masked too, whatever its length.
 * - `cutAtEnd`: the text stops in the middle of something (live output cut at its bound), so it
 *   may end with the start of a secret whose end never comes; the longest such piece is masked.
 *
 * Not covered: a secret transformed before it was printed (base64, URL-encoded, reversed,
 * split by other output). Masking is a safety net against accidents, not against a test that
 * sets out to reveal a secret; that test can send it anywhere.
 */

export const MASK = '****';
export const MIN_MASKED_LENGTH = 4;

/** Whether a value is long enough to be masked in output. */
export function isMaskable(value: string): boolean {
  return value.length >= MIN_MASKED_LENGTH;
}

/** The strings looked for in output: values and lines of multi-line values, longest first. */
export function maskTargets(values: Iterable<string>): string[] {
  const targets = new Set<string>();
  for (const value of values) {
    if (isMaskable(value)) targets.add(value);
    if (/[\r\n]/.test(value)) {
      for (const line of value.split(/\r\n|\r|\n/)) {
        const piece = line.trim();
        if (isMaskable(piece)) targets.add(piece);
      }
    }
  }
  return [...targets].sort((a, b) => b.length - a.length || (a < b ? -1 : a > b ? 1 : 0));
}

export interface MaskOptions {
  /** The text starts in the middle of something: mask a leading piece of a secret's end too. */
  cutAtStart?: boolean;
  /** The text stops in the middle of something: mask a trailing piece of a secret's start too. */
  cutAtEnd?: boolean;
}

/** `text` with every occurrence of every secret value replaced by `****` (see the rules above). */
export function maskSecrets(text: string, values: Iterable<string>, options: MaskOptions = {}): string {
  const targets = maskTargets(values);
  if (targets.length === 0 || text.length === 0) return text;

  const ranges: [number, number][] = [];
  for (const target of targets) {
    // Step by one, not by the target's length: occurrences of one value may overlap too.
    for (let at = text.indexOf(target); at !== -1; at = text.indexOf(target, at + 1)) {
      ranges.push([at, at + target.length]);
    }
    if (options.cutAtStart) {
      for (let k = Math.min(target.length - 1, text.length); k >= 1; k--) {
        if (text.startsWith(target.slice(target.length - k))) {
          ranges.push([0, k]);
          break;
        }
      }
    }
    if (options.cutAtEnd) {
      for (let k = Math.min(target.length - 1, text.length); k >= 1; k--) {
        if (text.endsWith(target.slice(0, k))) {
          ranges.push([text.length - k, text.length]);
          break;
        }
      }
    }
  }
  if (ranges.length === 0) return text;

  ranges.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  let out = '';
  let copied = 0; // text before this index is already in `out`
  let i = 0;
  while (i < ranges.length) {
    const start = ranges[i]![0];
    let end = ranges[i]![1];
    i += 1;
    // Overlapping or touching ranges make one run, and one mask.
    while (i < ranges.length && ranges[i]![0] <= end) {
      end = Math.max(end, ranges[i]![1]);
      i += 1;
    }
    out += text.slice(copied, start) + MASK;
    copied = end;
  }
  return out + text.slice(copied);
}

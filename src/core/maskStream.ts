/**
 * Masking output that arrives in pieces (live output: steps/liveOutput.ts writes what a running
 * process printed every 250 ms), by the rules of mask.ts, without a secret that two pieces split
 * ever showing: what is let out is masked, and what may be the start of a secret whose end has
 * not arrived yet is held back until more comes or the output ends. That is at most the last
 * (longest secret − 1) characters, and only as many as are the start of some secret: text that
 * ends with a line break, say, is let out whole. A secret that straddles the point where a
 * piece would end is held whole.
 *
 * Output made of secrets that overlap each other without end (`aaaa…` when `aaaa` is a secret)
 * would be held for ever; past MAX_HELD characters it is let out instead, the piece of a secret
 * it may end with masked (`cutAtEnd`) and the rest of that secret at the start of what follows
 * (`cutAtStart`).
 */
import { maskSecrets, maskTargets } from './mask';

/** Held text beyond which a run of overlapping secrets is let out rather than held. */
const MAX_HELD = 64 * 1024;

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;

export class MaskingStream {
  private readonly targets: string[];
  private held = '';
  /** What is held starts right after a cut (see MAX_HELD): it may begin with a secret's end. */
  private startsCut = false;

  constructor(values: Iterable<string>) {
    this.targets = maskTargets(values);
  }

  /** More output: what may be shown of it now, masked (possibly ''). */
  push(text: string): string {
    const all = this.held + text;
    if (this.targets.length === 0) {
      this.held = '';
      return all;
    }
    const cut = this.safeCut(all, all.length - this.startOfSecretAtEnd(all));
    if (cut <= 0) {
      if (all.length <= MAX_HELD) {
        this.held = all;
        return '';
      }
      this.held = '';
      const out = maskSecrets(all, this.targets, { cutAtStart: this.startsCut, cutAtEnd: true });
      this.startsCut = true;
      return out;
    }
    const out = maskSecrets(all.slice(0, cut), this.targets, { cutAtStart: this.startsCut });
    this.held = all.slice(cut);
    this.startsCut = false;
    return out;
  }

  /**
   * The output ended: the rest, masked. `cut`: it did not end but stops here (a bound), so a
   * secret's start it ends with is masked too.
   */
  end(options: { cut?: boolean } = {}): string {
    const rest = this.held;
    this.held = '';
    return maskSecrets(rest, this.targets, { cutAtStart: this.startsCut, cutAtEnd: options.cut === true });
  }

  /** How many characters `text` ends with that are the start of a secret (not all of it). */
  private startOfSecretAtEnd(text: string): number {
    let longest = 0;
    for (const target of this.targets) {
      const first = target.charCodeAt(0);
      for (let k = Math.min(target.length - 1, text.length); k > longest; k--) {
        if (text.charCodeAt(text.length - k) === first && text.endsWith(target.slice(0, k))) {
          longest = k;
          break;
        }
      }
    }
    return longest;
  }

  /**
   * Where `text` may be cut, at `cut` or before it: not inside an occurrence of a secret (one
   * that starts before `cut` lies wholly in `text`: one that does not is held from its start,
   * which is the start of a secret at the end of `text`), nor between the two halves of a UTF-16 surrogate pair.
   */
  private safeCut(text: string, cut: number): number {
    if (cut <= 0) return 0;
    for (;;) {
      if (cut > 0 && cut < text.length && isHighSurrogate(text.charCodeAt(cut - 1))) cut -= 1;
      let moved = false;
      for (const target of this.targets) {
        for (let at = text.indexOf(target, Math.max(0, cut - target.length + 1)); at !== -1 && at < cut; at = text.indexOf(target, at + 1)) {
          if (at + target.length > cut) {
            cut = at;
            moved = true;
            break;
          }
        }
      }
      if (!moved || cut <= 0) return cut;
    }
  }
}

/**
 * Reading JUnit XML reports: the `<testcase>` elements of the file a test run left behind, in
 * the common flavours (Ant/Maven surefire, jest-junit, pytest `--junitxml`, Go's
 * go-junit-report, ...): a `<testsuites>` or `<testsuite>` root, suites nested to any depth,
 * and per case a `<failure>`, `<error>` or `<skipped>` child, or none (passed).
 *
 * Pure and defensive: the files come from the tests of a repository anyone who can push
 * controls. parseJUnit never throws; what it cannot read becomes a note, and the cases read
 * before the problem are kept (a test that crashed while writing its report still shows what
 * it got through). It is a small XML tokenizer of its own rather than a general XML parser:
 * no DTDs, no external entities, no entity expansion beyond XML's five and numeric character
 * references, so nothing in a report can make it fetch, read or blow up. Sizes are capped:
 * the input, the number of cases, and every string kept.
 */

export type JUnitStatus = 'passed' | 'failed' | 'error' | 'skipped';

export interface JUnitCase {
  classname: string;
  name: string;
  status: JUnitStatus;
  /** Seconds, or null when the report gives none (or garbage). */
  time: number | null;
  /** The failure's (error's, skip's) message attribute, else the first line of its text. */
  message: string | null;
  /** Not passed: the failure text (stack trace) and the case's system-out/-err, cut short. */
  output: string | null;
  /**
   * The test file the case is in, as the report names it (the case's `file` attribute, else its
   * testsuite's: mocha's xunit reporter, jest-junit with addFileAttribute, pytest's xunit1);
   * absent where the report does not say.
   */
  file?: string;
  /**
   * With `{ suites: true }`: the innermost testsuite the case is in (its number in the report,
   * and its time in seconds), for the time of a file that a case's own time leaves out (jest
   * reports a file's loading only in its testsuite's).
   */
  suite?: { id: number; time: number | null };
}

export interface JUnitResult {
  cases: JUnitCase[];
  /** What was wrong with the file, for people: malformed, truncated, not JUnit, too many cases. */
  notes: string[];
}

export interface JUnitLimits {
  /** Characters of input looked at; the rest is ignored (and noted). */
  maxInput: number;
  /** Cases kept; the rest are ignored (and noted). */
  maxCases: number;
  /** Characters of a name or classname. */
  maxName: number;
  maxMessage: number;
  maxOutput: number;
}

export const DEFAULT_JUNIT_LIMITS: JUnitLimits = {
  maxInput: 16 * 1024 * 1024,
  maxCases: 10_000,
  maxName: 1000,
  maxMessage: 2000,
  maxOutput: 8 * 1024,
};

/** Text collected from one element is capped at this before it is cut to its final size. */
const CAPTURE_CAP = 64 * 1024;

class XmlError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

/** `s` cut to `max` characters, with an ellipsis when it was longer. */
export function clip(s: string, max: number): string {
  if (s.length <= max) return s;
  // Don't leave half a surrogate pair behind.
  let end = Math.max(0, max - 1);
  const code = s.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return `${s.slice(0, end)}…`;
}

/**
 * The text of a report file: UTF-8 (what nearly every tool writes), or UTF-16 when the file
 * starts with its byte-order mark. Invalid bytes become U+FFFD rather than an error.
 */
export function decodeReport(bytes: Buffer): string {
  if (bytes.length >= 2 && bytes[0] === 0xff && bytes[1] === 0xfe) return bytes.subarray(2, bytes.length - (bytes.length % 2)).toString('utf16le');
  if (bytes.length >= 2 && bytes[0] === 0xfe && bytes[1] === 0xff) {
    const le = Buffer.from(bytes.subarray(2, bytes.length - (bytes.length % 2)));
    return le.swap16().toString('utf16le');
  }
  return bytes.toString('utf8');
}

const PREDEFINED: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

/** XML's five entities and numeric references; anything else is left as written. */
export function decodeEntities(s: string): string {
  if (!s.includes('&')) return s;
  return s.replace(/&(#x[0-9a-fA-F]{1,8}|#[0-9]{1,10}|[A-Za-z]{2,4});/g, (whole, ref: string) => {
    if (ref.startsWith('#')) {
      const code = ref[1] === 'x' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      const valid = code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff);
      return valid ? String.fromCodePoint(code) : '\ufffd';
    }
    return PREDEFINED[ref] ?? whole;
  });
}

// --- tokenizer --------------------------------------------------------------------------------

type Token =
  | { kind: 'open'; name: string; attrs: Record<string, string>; selfClosing: boolean; offset: number }
  | { kind: 'close'; name: string; offset: number }
  | { kind: 'text'; text: string };

const NAME = /[A-Za-z_:][-A-Za-z0-9_:.]*/y;
const SPACE = /[ \t\r\n]*/y;
const ATTR_VALUE_END = { '"': '"', "'": "'" } as const;

function* tokens(xml: string): Generator<Token> {
  let i = 0;
  const n = xml.length;
  const expect = (cond: boolean, what: string, at: number) => {
    if (!cond) throw new XmlError(what, at);
  };
  const skipSpace = () => {
    SPACE.lastIndex = i;
    SPACE.exec(xml);
    i = SPACE.lastIndex;
  };
  const readName = (): string | null => {
    NAME.lastIndex = i;
    const m = NAME.exec(xml);
    if (!m) return null;
    i = NAME.lastIndex;
    return m[0];
  };

  while (i < n) {
    const lt = xml.indexOf('<', i);
    if (lt === -1) {
      yield { kind: 'text', text: decodeEntities(xml.slice(i)) };
      return;
    }
    if (lt > i) yield { kind: 'text', text: decodeEntities(xml.slice(i, lt)) };
    i = lt;
    if (xml.startsWith('<!--', i)) {
      const end = xml.indexOf('-->', i + 4);
      expect(end !== -1, 'unterminated comment', i);
      i = end + 3;
    } else if (xml.startsWith('<![CDATA[', i)) {
      const end = xml.indexOf(']]>', i + 9);
      expect(end !== -1, 'unterminated CDATA section', i);
      yield { kind: 'text', text: xml.slice(i + 9, end) };
      i = end + 3;
    } else if (xml.startsWith('<?', i)) {
      const end = xml.indexOf('?>', i + 2);
      expect(end !== -1, 'unterminated processing instruction', i);
      i = end + 2;
    } else if (xml.startsWith('<!', i)) {
      // <!DOCTYPE ...> with an optional [internal subset]: skipped whole, never interpreted.
      const bracket = xml.indexOf('[', i);
      const close = xml.indexOf('>', i);
      expect(close !== -1, 'unterminated declaration', i);
      if (bracket !== -1 && bracket < close) {
        const end = xml.indexOf(']', bracket);
        const gt = end === -1 ? -1 : xml.indexOf('>', end);
        expect(gt !== -1, 'unterminated declaration', i);
        i = gt + 1;
      } else {
        i = close + 1;
      }
    } else if (xml.startsWith('</', i)) {
      const offset = i;
      i += 2;
      const name = readName();
      expect(name !== null, 'malformed end tag', offset);
      skipSpace();
      expect(xml[i] === '>', `malformed end tag </${name}`, offset);
      i += 1;
      yield { kind: 'close', name: name!, offset };
    } else {
      const offset = i;
      i += 1;
      const name = readName();
      expect(name !== null, "'<' that starts no tag", offset);
      const attrs: Record<string, string> = {};
      for (;;) {
        const before = i;
        skipSpace();
        if (xml.startsWith('/>', i)) {
          i += 2;
          yield { kind: 'open', name: name!, attrs, selfClosing: true, offset };
          break;
        }
        if (xml[i] === '>') {
          i += 1;
          yield { kind: 'open', name: name!, attrs, selfClosing: false, offset };
          break;
        }
        expect(i < n, `unterminated tag <${name}`, offset);
        expect(i > before, `malformed tag <${name}`, offset);
        const attr = readName();
        expect(attr !== null, `malformed attribute in <${name}`, i);
        skipSpace();
        expect(xml[i] === '=', `attribute ${attr} of <${name} has no value`, i);
        i += 1;
        skipSpace();
        const quote = xml[i] as keyof typeof ATTR_VALUE_END | undefined;
        expect(quote === '"' || quote === "'", `attribute ${attr} of <${name} is not quoted`, i);
        const end = xml.indexOf(ATTR_VALUE_END[quote!], i + 1);
        expect(end !== -1, `unterminated attribute ${attr} of <${name}`, i);
        // Attribute values normalize whitespace characters to spaces (XML 1.0 §3.3.3)...
        // except those written as references, which decodeEntities produces afterwards.
        attrs[attr!] = decodeEntities(xml.slice(i + 1, end).replace(/[\t\r\n]/g, ' '));
        i = end + 1;
      }
    }
  }
}

// --- JUnit ------------------------------------------------------------------------------------

interface Capture {
  text: string;
}

function append(capture: Capture, text: string): void {
  if (capture.text.length < CAPTURE_CAP) capture.text += text.slice(0, CAPTURE_CAP - capture.text.length);
}

interface OpenCase {
  attrs: Record<string, string>;
  /** Elements open inside the case, innermost last, with what they capture. */
  depth: number;
  outcome: { kind: 'failure' | 'error' | 'skipped'; attrs: Record<string, string>; body: Capture }[];
  systemOut: Capture;
  systemErr: Capture;
}

const OUTCOMES = new Set(['failure', 'error', 'skipped']);

function parseTime(value: string | undefined): number | null {
  if (value === undefined) return null;
  const n = Number(value.trim().replace(/,/g, ''));
  return Number.isFinite(n) && n >= 0 ? n : null;
}

function firstLine(text: string): string {
  return (
    text
      .split(/\r?\n/)
      .map((l) => l.trim())
      .find((l) => l.length > 0) ?? ''
  );
}

function lineOf(xml: string, offset: number): number {
  let line = 1;
  for (let at = xml.indexOf('\n'); at !== -1 && at < offset; at = xml.indexOf('\n', at + 1)) line += 1;
  return line;
}

function finishCase(c: OpenCase, suites: string[], suiteFiles: (string | undefined)[], suite: JUnitCase['suite'] | undefined, limits: JUnitLimits): JUnitCase {
  // A failure outweighs an error (pytest reports a failed test with an erroring teardown as
  // both), and either outweighs a skip.
  const pick = (kind: string) => c.outcome.find((o) => o.kind === kind);
  const decisive = pick('failure') ?? pick('error') ?? pick('skipped');
  const status: JUnitStatus = decisive?.kind === 'failure' ? 'failed' : decisive?.kind === 'error' ? 'error' : decisive ? 'skipped' : 'passed';

  const classname = c.attrs.classname ?? c.attrs.class ?? [...suites].reverse().find((s) => s !== '') ?? '';
  let message: string | null = null;
  let output: string | null = null;
  if (decisive) {
    const body = decisive.body.text.trim();
    const text = (decisive.attrs.message ?? '').trim() || firstLine(body);
    message = text === '' ? null : clip(text, limits.maxMessage);
    if (status !== 'skipped') {
      const parts = [body];
      const out = c.systemOut.text.trim();
      const err = c.systemErr.text.trim();
      if (out) parts.push(`[system-out]\n${out}`);
      if (err) parts.push(`[system-err]\n${err}`);
      const joined = parts.filter((p) => p !== '').join('\n\n');
      output = joined === '' ? null : clip(joined, limits.maxOutput);
    }
  }
  const file = (c.attrs.file ?? [...suiteFiles].reverse().find((f) => f !== undefined && f.trim() !== '') ?? '').trim();
  return {
    classname: clip(classname.trim(), limits.maxName),
    name: clip((c.attrs.name ?? '').trim() || '(unnamed)', limits.maxName),
    status,
    time: parseTime(c.attrs.time),
    message,
    output,
    ...(file !== '' ? { file: clip(file, limits.maxName) } : {}),
    ...(suite ? { suite } : {}),
  };
}

/** The test cases of a JUnit XML report, and notes on what could not be read. Never throws. */
export function parseJUnit(input: string, limitsIn: Partial<JUnitLimits> & { suites?: boolean } = {}): JUnitResult {
  const { suites: withSuites = false, ...rest } = limitsIn;
  const limits = { ...DEFAULT_JUNIT_LIMITS, ...rest };
  const cases: JUnitCase[] = [];
  const notes: string[] = [];
  let xml = input.charCodeAt(0) === 0xfeff ? input.slice(1) : input;
  if (xml.length > limits.maxInput) {
    notes.push(`the report is larger than ${limits.maxInput} characters; only its beginning was read`);
    xml = xml.slice(0, limits.maxInput);
  }

  /** Names of the open elements, outermost first. */
  const stack: string[] = [];
  /** The `name` of each open testsuite, for cases without a classname, and its `file`. */
  const suites: string[] = [];
  const suiteFiles: (string | undefined)[] = [];
  /** Each open testsuite's number and time (with `suites`). */
  const suiteInfo: { id: number; time: number | null }[] = [];
  let suiteCount = 0;
  let current: OpenCase | null = null;
  let root: string | null = null;
  let capturing: Capture | null = null;
  let full = false;

  try {
    for (const token of tokens(xml)) {
      if (token.kind === 'text') {
        if (capturing) append(capturing, token.text);
        else if (root === null && token.text.trim() !== '') throw new XmlError('text before the root element', 0);
        continue;
      }
      if (token.kind === 'open') {
        if (root === null) {
          root = token.name;
          if (root !== 'testsuites' && root !== 'testsuite') {
            notes.push(`not a JUnit report: the root element is <${clip(root, 100)}>, not <testsuites> or <testsuite>`);
            return { cases, notes };
          }
        } else if (stack.length === 0) {
          throw new XmlError(`a second root element <${token.name}>`, token.offset);
        }
        if (token.name === 'testsuite' && current === null) {
          suites.push(token.attrs.name ?? '');
          suiteFiles.push(token.attrs.file);
          suiteInfo.push({ id: (suiteCount += 1), time: parseTime(token.attrs.time) });
        }
        if (current) {
          current.depth += 1;
          if (current.depth === 1 && OUTCOMES.has(token.name)) {
            const outcome = { kind: token.name as 'failure' | 'error' | 'skipped', attrs: token.attrs, body: { text: '' } };
            current.outcome.push(outcome);
            capturing = token.selfClosing ? null : outcome.body;
          } else if (current.depth === 1 && (token.name === 'system-out' || token.name === 'system-err')) {
            capturing = token.selfClosing ? null : token.name === 'system-out' ? current.systemOut : current.systemErr;
          }
          // Deeper elements (or others, such as surefire's rerunFailure) add their text to
          // whatever is being captured, or nothing.
        } else if (token.name === 'testcase') {
          current = { attrs: token.attrs, depth: 0, outcome: [], systemOut: { text: '' }, systemErr: { text: '' } };
        }
        if (token.selfClosing) {
          closeElement(token.name);
        } else {
          stack.push(token.name);
        }
        if (full) break;
        continue;
      }
      // close
      const open = stack.pop();
      if (open === undefined) throw new XmlError(`end tag </${token.name}> without a start tag`, token.offset);
      if (open !== token.name) throw new XmlError(`end tag </${token.name}> where </${open}> was expected`, token.offset);
      closeElement(token.name);
      if (full) break;
    }
    if (!full && stack.length > 0) {
      notes.push(`the report ends early: <${stack[stack.length - 1]}> is not closed (truncated file?)`);
    } else if (root === null) {
      notes.push('not a JUnit report: no XML elements in it');
    }
  } catch (err) {
    if (err instanceof XmlError) {
      notes.push(`malformed XML at line ${lineOf(xml, err.offset)}: ${clip(err.message, 200)}; cases before it were kept`);
    } else {
      notes.push(`could not read the report: ${clip((err as Error).message ?? String(err), 200)}`);
    }
  }
  return { cases, notes };

  function closeElement(name: string): void {
    if (current) {
      if (current.depth === 0) {
        // The testcase itself.
        if (cases.length < limits.maxCases) {
          cases.push(finishCase(current, suites, suiteFiles, withSuites ? suiteInfo[suiteInfo.length - 1] : undefined, limits));
        } else {
          notes.push(`more than ${limits.maxCases} test cases; only the first ${limits.maxCases} were kept`);
          full = true;
        }
        current = null;
        capturing = null;
        return;
      }
      current.depth -= 1;
      if (current.depth === 0) capturing = null;
      return;
    }
    if (name === 'testsuite') {
      suites.pop();
      suiteFiles.pop();
      suiteInfo.pop();
    }
  }
}

/**
 * Where a failing test case failed, read from its failure text (issue 37): the stack trace's
 * frames (`at fn (/tree/test/a.test.js:12:5)`, `at /tree/test/a.test.js:12:5`, Python's
 * `File "/tree/test_a.py", line 12`, Ruby's `/tree/spec/a_spec.rb:12:in ...`, Go's
 * `a_test.go:12:`), taken as paths of the checkout. The first frame in the test file itself
 * wins (where the assertion is); else the first in the checkout outside dependencies (a helper
 * the test called); else none.
 */

export interface FailureLocation {
  /** Relative to the checkout, as test files are listed. */
  file: string;
  line: number;
}

/** `path:line` with an optional column, as JavaScript, Ruby, Go, Rust and Java stacks print it. */
const COLON_FRAME = /(?:^|[\s(['"])((?:[A-Za-z]:)?[\w@.~+\-/\\]*[\w@~+-]\.[A-Za-z]{1,5}):(\d{1,7})(?::\d{1,7})?/gm;
/** Python: `File "path", line N`. */
const PYTHON_FRAME = /File "([^"\n]+)", line (\d{1,7})/g;
/** Frames of what the test depends on, not of the project's own code. */
const DEPENDENCY = /(^|\/)(node_modules|site-packages|dist-packages|vendor|\.bundle|gems)\//;

/**
 * The location of the failure in `text` (a case's message and stack trace); `inTree` maps a
 * path as the stack printed it to the checkout's relative path, or null when it is outside.
 */
export function failureLocation(text: string, testFile: string | null, inTree: (printed: string) => string | null): FailureLocation | null {
  const frames: (FailureLocation & { at: number })[] = [];
  for (const pattern of [COLON_FRAME, PYTHON_FRAME]) {
    for (const m of text.matchAll(pattern)) {
      const file = inTree(m[1]!.replace(/\\/g, '/'));
      const line = Number(m[2]);
      if (file !== null && line > 0 && !DEPENDENCY.test(file)) frames.push({ file, line, at: m.index });
    }
  }
  // In the order the text gives them (JavaScript and Ruby print the innermost frame first).
  frames.sort((a, b) => a.at - b.at);
  const found = frames.find((f) => f.file === testFile) ?? frames[0];
  return found ? { file: found.file, line: found.line } : null;
}

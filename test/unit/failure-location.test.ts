import { failureLocation } from '../../src/core/failureLocation';

const TREE = '/var/sluice/trees/7/w1';
/** As a lane maps a printed path: the checkout's, relative; anything else is outside. */
const inTree = (printed: string): string | null => {
  if (printed.startsWith(`${TREE}/`)) return printed.slice(TREE.length + 1);
  if (!printed.startsWith('/') && !printed.startsWith('node:')) return printed.replace(/^\.\//, '');
  return null;
};

describe('failureLocation', () => {
  it('finds the assertion in the test file of a jest stack, past the library frames', () => {
    const text = [
      'Error: expect(received).toBe(expected) // Object.is equality',
      '',
      'Expected: 3',
      'Received: 2',
      `    at Object.toBe (${TREE}/node_modules/expect/build/index.js:315:11)`,
      `    at Object.<anonymous> (${TREE}/test/sum.test.js:12:17)`,
      '    at Promise.then.completed (node:internal/process/task_queues:95:5)',
    ].join('\n');
    expect(failureLocation(text, 'test/sum.test.js', inTree)).toEqual({ file: 'test/sum.test.js', line: 12 });
  });

  it('prefers the test file to a helper that failed first in the stack', () => {
    const text = `AssertionError: nope\n    at check (${TREE}/test/helpers.js:4:9)\n    at Context.<anonymous> (${TREE}/test/api.spec.js:30:5)`;
    expect(failureLocation(text, 'test/api.spec.js', inTree)).toEqual({ file: 'test/api.spec.js', line: 30 });
    // The test file not in the stack: the project's own first frame.
    expect(failureLocation(text, 'test/other.spec.js', inTree)).toEqual({ file: 'test/helpers.js', line: 4 });
  });

  it('reads mocha stacks without a function name, Python tracebacks and Ruby backtraces', () => {
    expect(failureLocation(`Error: boom\n    at ${TREE}/test/a.js:7:3`, 'test/a.js', inTree)).toEqual({ file: 'test/a.js', line: 7 });
    const py = `Traceback (most recent call last):\n  File "${TREE}/tests/test_x.py", line 21, in test_x\n    assert f() == 2\nAssertionError`;
    expect(failureLocation(py, 'tests/test_x.py', inTree)).toEqual({ file: 'tests/test_x.py', line: 21 });
    expect(failureLocation(`expected 1 got 2\n# ./spec/model_spec.rb:44:in 'block (2 levels) in <top>'`, 'spec/model_spec.rb', inTree)).toEqual({ file: 'spec/model_spec.rb', line: 44 });
  });

  it('says nothing when no frame is the project’s', () => {
    expect(failureLocation('TypeError: x is not a function', 'test/a.js', inTree)).toBeNull();
    expect(failureLocation('at node:internal/modules/cjs/loader:1080:14\n at /usr/lib/node/x.js:3:1', 'test/a.js', inTree)).toBeNull();
    expect(failureLocation(`at ${TREE}/node_modules/mocha/lib/runner.js:120:4`, 'test/a.js', inTree)).toBeNull();
  });

  it('takes no version number, URL port or time for a location', () => {
    expect(failureLocation('expected v1.2 at http://127.0.0.1:8080/x, took 12:30', 'test/a.js', inTree)).toBeNull();
  });
});

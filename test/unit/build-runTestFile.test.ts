import { TailBuffer } from '../../src/steps/isolation/process';
import { CommandSyntaxError, checkTestPath, splitArgs, testEnvironment } from '../../src/steps/tests/runTestFile';

describe('splitArgs', () => {
  it.each([
    ['', []],
    ['   ', []],
    ['bash', ['bash']],
    ['  node   --test\t-x  ', ['node', '--test', '-x']],
    [`sh -c 'echo a b'`, ['sh', '-c', 'echo a b']],
    [`sh -c "echo a b"`, ['sh', '-c', 'echo a b']],
    [`a 'it''s'`, ['a', 'its']],
    [`a "it's"`, ['a', "it's"]],
    [`a 'x\\y'`, ['a', 'x\\y']], // backslash is literal in single quotes
    [`a "x\\"y"`, ['a', 'x"y']],
    [`a "x\\\\y"`, ['a', 'x\\y']],
    [`a "x\\ny"`, ['a', 'x\\ny']], // \n is not an escape inside double quotes
    [`a "\\$HOME"`, ['a', '$HOME']],
    ['a \\"b', ['a', '"b']],
    ['a b\\ c', ['a', 'b c']],
    ['a \\\n b', ['a', 'b']], // line continuation
    [`a '' ""`, ['a', '', '']],
    [`pre'mid'"post"`, ['premidpost']],
    ['echo $HOME && rm -rf / | x > y; `z`', ['echo', '$HOME', '&&', 'rm', '-rf', '/', '|', 'x', '>', 'y;', '`z`']],
    ['python3 -m pytest -k "a or b"', ['python3', '-m', 'pytest', '-k', 'a or b']],
    ['a\nb\r\nc', ['a', 'b', 'c']],
  ])('%j → %j', (command, expected) => {
    expect(splitArgs(command)).toEqual(expected);
  });

  it.each([[`a 'b`], [`a "b`], [`a "b\\"`], ['a \\']])('rejects %j', (command) => {
    expect(() => splitArgs(command)).toThrow(CommandSyntaxError);
  });
});

describe('testEnvironment', () => {
  it('is the fixed base plus the given variables, nothing else', () => {
    expect(testEnvironment('/h', { FOO: 'bar' })).toEqual({
      PATH: '/usr/local/bin:/usr/bin:/bin',
      HOME: '/h',
      LANG: 'C.UTF-8',
      CI: 'true',
      SLUICE: 'true',
      FOO: 'bar',
    });
  });

  it('lets the build override the base (e.g. PATH)', () => {
    expect(testEnvironment('/h', { PATH: '/opt/bin' }).PATH).toBe('/opt/bin');
  });

  it('skips names and values an environment block cannot hold', () => {
    const env = testEnvironment('/h', { 'A=B': 'x', '': 'y', NUL: 'a\0b', OK: '' });
    expect(Object.keys(env).sort()).toEqual(['CI', 'HOME', 'LANG', 'OK', 'PATH', 'SLUICE']);
  });
});

describe('checkTestPath', () => {
  it.each(['t.sh', 'tests/a b.sh', 'a/./b.sh', '-x.sh', '.hidden/t.sh'])('accepts %j', (p) => {
    expect(checkTestPath(p)).toBeNull();
  });
  it.each(['', '/etc/passwd', '../x', 'a/../../x', 'a/../b', '.git/hooks/pre-commit', 'sub/.git/config'])('rejects %j', (p) => {
    expect(checkTestPath(p)).toEqual(expect.any(String));
  });
});

describe('TailBuffer', () => {
  it('keeps everything under the cap', () => {
    const b = new TailBuffer(10);
    b.push(Buffer.from('abc'));
    b.push(Buffer.from('def'));
    expect(b.toString()).toBe('abcdef');
  });

  it('keeps the last bytes and says how much was dropped', () => {
    const b = new TailBuffer(4);
    for (const s of ['abc', 'def', 'gh']) b.push(Buffer.from(s));
    expect(b.toString()).toBe('[sluice] output truncated: the first 4 bytes were dropped\nefgh');
  });

  it('does not start in the middle of a UTF-8 character', () => {
    const b = new TailBuffer(3);
    b.push(Buffer.from('xé!!')); // é is 2 bytes: the cut lands inside it
    expect(b.toString()).toBe('[sluice] output truncated: the first 3 bytes were dropped\n!!');
  });

  it('stays bounded however much is pushed', () => {
    const b = new TailBuffer(1024);
    for (let i = 0; i < 10_000; i++) b.push(Buffer.alloc(100, 'x'));
    const text = b.toString();
    expect(text.endsWith('x'.repeat(1024))).toBe(true);
    expect(text).toContain('the first 998976 bytes were dropped');
  });
});

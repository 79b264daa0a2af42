// parseFileTrace (issue 40): strace -f -y lines as the real strace prints them (see
// test/integration/file-trace.test.ts for real traces), including the shapes that are rare in a
// short run: calls split between processes, escaped names, links, paths outside the tree.
import { parseFileTrace } from '../../src/steps/tests/fileTrace';

const root = '/ws/tree';

it('joins a call strace split between two processes, and follows each process’s chdir', () => {
  const d = parseFileTrace(
    [
      '10 openat(AT_FDCWD</ws/tree>, "lib/a.js", O_RDONLY|O_CLOEXEC <unfinished ...>',
      '11 chdir("sub") = 0',
      '10 <... openat resumed>) = 3</ws/tree/lib/a.js>',
      '11 access("x.cfg", R_OK) = -1 ENOENT (No such file or directory)',
      '10 access("y.cfg", R_OK) = -1 ENOENT (No such file or directory)',
      '10 +++ exited with 0 +++',
    ].join('\n'),
    root,
  );
  expect(d).toEqual({ reads: ['lib/a.js'], lists: [], probes: ['sub/x.cfg', 'y.cfg'] });
});

it('reads escaped names, keeps a link and what it leads to, and leaves out what is outside the tree or in .git', () => {
  const d = parseFileTrace(
    [
      '7 openat(AT_FDCWD</ws/tree>, "data/caf\\303\\251 \\"x\\".txt", O_RDONLY) = 4</ws/tree/data/café "x".txt>',
      '7 openat(AT_FDCWD</ws/tree>, "current.json", O_RDONLY) = 4</ws/tree/versions/v2.json>',
      '7 openat(AT_FDCWD</ws/tree>, "/etc/passwd", O_RDONLY|O_CLOEXEC) = 5</etc/passwd>',
      '7 openat(AT_FDCWD</ws/tree>, "../other/secret", O_RDONLY) = 5</ws/other/secret>',
      '7 openat(AT_FDCWD</ws/tree>, ".git/HEAD", O_RDONLY) = 5</ws/tree/.git/HEAD>',
      '7 openat(3</ws/tree/lib>, "b.js", O_RDONLY) = 6</ws/tree/lib/b.js>',
      '7 execve("./bin/t_test", ["./bin/t_test"], 0x7ffd /* 9 vars */) = 0',
      '7 execve("/usr/bin/sh", ["sh"], 0x7ffd /* 9 vars */) = 0',
      '7 openat(AT_FDCWD</ws/tree>, "spec", O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_DIRECTORY) = 3</ws/tree/spec>',
      '7 newfstatat(AT_FDCWD</ws/tree>, "lib/c.json", 0x7ffc, 0) = -1 ENOENT (No such file or directory)',
      '7 statx(AT_FDCWD</ws/tree>, "lib/b.js", AT_STATX_SYNC_AS_STAT, STATX_ALL, {}) = 0',
      '7 openat(AT_FDCWD</ws/tree>, "gone/x", O_RDONLY) = -1 ENOTDIR (Not a directory)',
      '7 openat(AT_FDCWD</ws/tree>, "locked", O_RDONLY) = -1 EACCES (Permission denied)',
    ].join('\n'),
    root,
  );
  expect(d.reads).toEqual(['bin/t_test', 'current.json', 'data/café "x".txt', 'lib/b.js', 'versions/v2.json']);
  expect(d.lists).toEqual(['spec']);
  // Read files are not listed again as looked for; a refused open is neither.
  expect(d.probes).toEqual(['gone/x', 'lib/c.json']);
});

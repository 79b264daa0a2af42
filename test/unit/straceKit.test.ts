// How the runner's strace is brought into an image (issue 40): what `ldd` says it loads.
import { parseLdd } from '../../src/steps/isolation/straceKit';

it('finds the loader and each library by the name the program asks for, not the kernel’s vdso', () => {
  const out = [
    '\tlinux-vdso.so.1 (0x00007ffd1b5f9000)',
    '\tlibunwind-ptrace.so.0 => /lib/x86_64-linux-gnu/libunwind-ptrace.so.0 (0x00007f31d381b000)',
    '\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f31d33f8000)',
    '\t/lib64/ld-linux-x86-64.so.2 (0x00007f31d382b000)',
    '',
  ].join('\n');
  expect(parseLdd(out)).toEqual({
    loader: '/lib64/ld-linux-x86-64.so.2',
    libraries: [
      ['libunwind-ptrace.so.0', '/lib/x86_64-linux-gnu/libunwind-ptrace.so.0'],
      ['libc.so.6', '/lib/x86_64-linux-gnu/libc.so.6'],
    ],
  });
});

it('a static program loads nothing; a library missing on the runner is said by name', () => {
  expect(parseLdd('')).toEqual({ loader: null, libraries: [] });
  expect(() => parseLdd('\tlibdw.so.1 => not found\n')).toThrow('libdw.so.1 not found');
});

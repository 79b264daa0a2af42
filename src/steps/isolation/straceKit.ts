/**
 * The runner's strace, brought into a build's image for a mapping run (issue 40). An image has
 * no strace of ours and may have no glibc at all (Alpine's is musl), so strace comes with its own
 * loader and libraries, each file bound read-only under KIT_DIR in the image's /run (a tmpfs of
 * the build's own there), and starts through that loader: `ld.so --library-path KIT_DIR strace`.
 * What strace then runs is the image's, with the image's own loader, as in any build.
 */
import { execFile } from 'node:child_process';
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { STRACE } from '../tests/fileTrace';

/** Where the kit appears inside an image's sandbox. */
export const KIT_DIR = '/run/sluice-strace';

export interface StraceKit {
  /** The argv that starts strace inside the image (its options follow). */
  command: string[];
  /** Host files bound read-only inside, each [host path, path inside]. */
  binds: Array<[host: string, inside: string]>;
}

/** What `ldd` printed: the loader (null for a static program) and each library by the name the program asks for. */
export function parseLdd(out: string): { loader: string | null; libraries: Array<[name: string, file: string]> } {
  let loader: string | null = null;
  const libraries: Array<[string, string]> = [];
  for (const line of out.split('\n').map((l) => l.trim()).filter(Boolean)) {
    const linked = /^(\S+) => (.+?)(?: \(0x[0-9a-f]+\))?$/.exec(line);
    if (linked) {
      if (linked[2] === 'not found') throw new Error(`${linked[1]} not found`);
      libraries.push([linked[1]!, linked[2]!]);
      continue;
    }
    const own = /^(\/\S+) \(0x[0-9a-f]+\)$/.exec(line);
    if (own) loader = own[1]!; // the one library named by its path: the program's loader
    // Anything else (linux-vdso.so.1, the kernel's own) is not a file.
  }
  return { loader, libraries };
}

let made: Promise<StraceKit> | undefined;

/** The kit of this runner's strace, found once (a failure is tried again next time). */
export function straceKit(): Promise<StraceKit> {
  made ??= makeKit().catch((err: unknown) => {
    made = undefined;
    throw err;
  });
  return made;
}

async function makeKit(): Promise<StraceKit> {
  const strace = await realpath(STRACE);
  const ldd = await promisify(execFile)('ldd', [strace], { env: { PATH: '/usr/bin:/bin', LANG: 'C' }, timeout: 10_000 }).then(
    ({ stdout }) => stdout,
    (err: { stdout?: string; stderr?: string; message: string }) => {
      // A static strace needs nothing but itself.
      if (`${err.stdout ?? ''}${err.stderr ?? ''}`.includes('not a dynamic executable')) return '';
      throw new Error(`ldd ${strace}: ${(err.stderr ?? '').trim() || err.message}`);
    },
  );
  const { loader, libraries } = parseLdd(ldd);
  const inside = (name: string) => path.posix.join(KIT_DIR, path.posix.basename(name));
  const binds: Array<[string, string]> = [[strace, `${KIT_DIR}/strace`]];
  for (const [name, file] of libraries) binds.push([await realpath(file), inside(name)]);
  if (loader === null) return { command: [`${KIT_DIR}/strace`], binds };
  binds.push([await realpath(loader), `${KIT_DIR}/ld.so`]);
  return { command: [`${KIT_DIR}/ld.so`, '--library-path', KIT_DIR, `${KIT_DIR}/strace`], binds };
}

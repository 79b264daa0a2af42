/**
 * The unprivileged user tests run as. A runner running as root never runs a build as root: it
 * takes SLUICE_BUILD_USER when set, and otherwise a user of its own, `sluice-build`, created at
 * its first start (as `.ci/run` and the Dockerfile do), or `nobody` where no user can be created.
 * A test running as that user cannot read the runner's environment (`/proc/<pid>/environ`: the
 * database URL and the secret key), memory or files, nor signal it.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import type { BuildUser } from './process';

/** The user a root runner creates for its builds when SLUICE_BUILD_USER names none. */
export const OWN_BUILD_USER = 'sluice-build';
/** The last resort of a root runner that cannot create a user (no `useradd` in the image). */
const NOBODY = 'nobody';

export function resolveBuildUser(name: string, passwd = '/etc/passwd'): BuildUser {
  if (process.getuid?.() !== 0) {
    throw new Error(`SLUICE_BUILD_USER=${name}: the runner must run as root to start tests as another user`);
  }
  const ids = lookupUser(name, passwd);
  if (!ids) throw new Error(`SLUICE_BUILD_USER=${name}: no such user (create it: useradd --system --no-create-home --shell /usr/sbin/nologin ${name})`);
  if (!unprivileged(ids)) throw new Error(`SLUICE_BUILD_USER=${name} is root or in group root: use an unprivileged user`);
  return ids;
}

/** The ids when they are neither root nor in group root; else null. */
function unprivileged(ids: BuildUser | null): BuildUser | null {
  return ids && ids.uid !== 0 && ids.gid !== 0 ? ids : null;
}

/** A user's ids by /etc/passwd; null when there is no such user. */
export function lookupUser(name: string, passwd = '/etc/passwd'): BuildUser | null {
  for (const line of readFileSync(passwd, 'utf8').split('\n')) {
    const [user, , uid, gid] = line.split(':');
    if (user === name && uid !== undefined && gid !== undefined) return { uid: Number(uid), gid: Number(gid) };
  }
  return null;
}

/**
 * The user a root runner runs builds as when SLUICE_BUILD_USER is not set: `sluice-build`,
 * created now if the machine lacks it, or `nobody` where it cannot be created.
 */
export async function ownBuildUser(): Promise<{ name: string; user: BuildUser }> {
  const existing = unprivileged(lookupUser(OWN_BUILD_USER));
  if (existing) return { name: OWN_BUILD_USER, user: existing };
  try {
    await promisify(execFile)('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', OWN_BUILD_USER]);
  } catch {
    // Another runner on this machine created it first, or there is no useradd: look again below.
  }
  const created = unprivileged(lookupUser(OWN_BUILD_USER));
  if (created) return { name: OWN_BUILD_USER, user: created };
  const nobody = unprivileged(lookupUser(NOBODY));
  if (nobody) return { name: NOBODY, user: nobody };
  throw new Error(`the runner runs as root and could not create the user ${OWN_BUILD_USER} to run builds as: create an unprivileged user and set SLUICE_BUILD_USER`);
}

/**
 * The unprivileged user tests run as (SLUICE_BUILD_USER, e.g. `sluice-build`, which `.ci/run`
 * creates). The runner must be root to start processes as another user; a test running as
 * that user cannot read the runner's environment (`/proc/<pid>/environ`: the database URL and
 * the secret key), memory or files, nor signal it.
 */
import { readFileSync } from 'node:fs';
import type { BuildUser } from '../build/process';

export function resolveBuildUser(name: string, passwd = '/etc/passwd'): BuildUser {
  if (process.getuid?.() !== 0) {
    throw new Error(`SLUICE_BUILD_USER=${name}: the runner must run as root to start tests as another user`);
  }
  for (const line of readFileSync(passwd, 'utf8').split('\n')) {
    const [user, , uid, gid] = line.split(':');
    if (user === name && uid !== undefined && gid !== undefined) {
      const ids = { uid: Number(uid), gid: Number(gid) };
      if (ids.uid === 0 || ids.gid === 0) throw new Error(`SLUICE_BUILD_USER=${name} is root or in group root: use an unprivileged user`);
      return ids;
    }
  }
  throw new Error(`SLUICE_BUILD_USER=${name}: no such user (create it: useradd --system --no-create-home --shell /usr/sbin/nologin ${name})`);
}

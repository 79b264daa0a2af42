// The directory store written by a runner running as root (it starts tests as the build user)
// and read by the API and workers running as another user (docker-compose.yml: `node`): what the
// root writer puts there belongs to the store directory's owner, not to root.
import { execFileSync } from 'node:child_process';
import { chown, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { openStore } from '../../src/store';

const asRoot = process.getuid?.() === 0;
// Another user to own the store: the build user .ci/run makes, which any Debian machine's root can use.
const owner = (() => {
  try {
    return { uid: Number(execFileSync('id', ['-u', 'sluice-build'], { encoding: 'utf8' })), gid: Number(execFileSync('id', ['-g', 'sluice-build'], { encoding: 'utf8' })) };
  } catch {
    return null;
  }
})();
if (!asRoot || !owner) console.warn('store-owner.test.ts: skipped: it needs root and the user sluice-build (.ci/run makes it)');

(asRoot && owner ? it : it.skip)('a blob root writes, and the directories made for it, belong to the store directory’s owner', async () => {
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'sluice-store-owner-'));
  try {
    const root = path.join(tmp, 'store');
    execFileSync('mkdir', ['-m', '0700', root]);
    await chown(root, owner!.uid, owner!.gid);
    const file = path.join(tmp, 'report.html');
    await writeFile(file, '<p>coverage</p>');
    await openStore({ kind: 'dir', dir: root }).putFile('artifacts/7/1/3', file);
    for (const p of ['artifacts', 'artifacts/7', 'artifacts/7/1', 'artifacts/7/1/3']) {
      const info = await stat(path.join(root, p));
      expect([p, info.uid, info.gid]).toEqual([p, owner!.uid, owner!.gid]);
    }
    expect((await stat(path.join(root, 'artifacts/7/1/3'))).mode & 0o777).toBe(0o600);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
});

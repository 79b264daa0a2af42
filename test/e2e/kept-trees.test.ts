/**
 * A warm runner starts a build from the tree of the last one (steps/checkout/kept.ts, issue 49):
 * a whole Sluice with one runner and a real SSH git server, in production's shape where this
 * machine allows it (root: tests as the build user in bubblewrap, the cache restored by an
 * overlay mount over the checkout). The second build's checkout comes from the kept tree
 * (sluice_checkouts_total{tree="kept"}), and its tests see nothing the first build's tests left:
 * not a new file, not an ignored one, not a tracked file they changed.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { checkouts } from '../../src/metrics/registry';
import { keptDir } from '../../src/steps/checkout/kept';
import { pushCommit } from '../support/gitRepo';
import { script, World } from '../support/world';

let w: World;
beforeAll(async () => {
  // As root, as production runs: builds as the build user, sandboxed (the user .ci/run makes).
  w = await World.start(process.getuid?.() === 0 ? { runners: 1, buildUser: 'sluice-build', sandbox: 'bwrap' } : { runners: 1 });
});
afterAll(() => w?.stop());

const fromKept = async () => (await checkouts.get()).values.find((v) => v.labels.tree === 'kept')?.value ?? 0;

/** Resolves once the runner keeps a tree of `repoId` (it retires a lane's tree after the lane ends). */
async function keptTreeOf(repoId: number, timeoutMs = 30_000): Promise<void> {
  const dir = path.join(keptDir(w.sluice.config.workspaceDir), String(repoId));
  const until = Date.now() + timeoutMs;
  while (!(await readdir(dir).catch(() => [] as string[])).some((e) => e.startsWith('kept-'))) {
    if (Date.now() > until) throw new Error(`no tree of repository ${repoId} kept after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

it('starts the next build from the last one’s tree, with nothing the last build left in it', async () => {
  const repo = await w.makeRepo(
    {
      '.gitignore': { content: 'build/\ndeps/\n' },
      'deps.lock': { content: 'v1\n' },
      'sluice.yml': { content: ['hooks:', '  pre_setup: "[ -d deps ] || { mkdir deps && echo dep > deps/lib.txt; }"', 'cache:', '  key_paths: [deps.lock]', '  save_paths: [deps]', ''].join('\n') },
      'data.txt': { content: 'as committed\n' },
      // The first build's test leaves a file, an ignored directory and a changed tracked file.
      't/a_test.sh': script('echo left > left.txt; mkdir -p build; echo out > build/out.js; echo changed > data.txt'),
    },
    { suite: { branch: 'master', test_pattern: 't/*_test.sh' } },
  );
  const first = await w.build(repo);
  expect((await w.eventsOf(first.session)).at(-1)).toMatchObject({ event: 'stop', status: 'passed' });
  await keptTreeOf(repo.id);
  // Once more, now that the cache has an entry (restored, on a root runner, by an overlay mount).
  const again = await w.build(repo, { force: true });
  expect((await w.eventsOf(again.session)).at(-1)).toMatchObject({ event: 'stop', status: 'passed' });
  const notes = ((await w.session(again.session)) as unknown as { worker_setup: { notes: string[] }[] }).worker_setup[0]!.notes.join('\n');
  expect(notes).toMatch(process.getuid?.() === 0 ? /cache restored deps .*mounted/ : /cache restored deps/);
  await keptTreeOf(repo.id);

  await pushCommit(repo.bare, { 't/a_test.sh': script('test ! -e left.txt && test ! -e build && grep -qx "as committed" data.txt && test -e b.txt && test -e deps/lib.txt'), 'b.txt': { content: 'new\n' } }, 'check the tree');
  const before = await fromKept();
  const second = await w.build(repo);
  expect((await w.eventsOf(second.session)).at(-1)).toMatchObject({ event: 'stop', status: 'passed' });
  expect((await fromKept()) - before).toBe(1);
});

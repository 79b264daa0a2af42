// The web pages' side of `image:` (issue 35), as a browser without JavaScript uses them: a
// suite's Image field on the CI Setup page (read back through the JSON API, a bad reference
// shown on its form), the Registry logins section (add, replace, delete; never a password on
// the page; an admin's alone), and a build that ran in an image: its reference and digest, its
// image step, the timeline's wording, the "resolving the image again" rebuild (which leaves the
// digests out of the trigger it queues, where Rebuild pins them) and the report's image line.
import { startApiHarness, seedRepo, type ApiHarness } from '../support/apiApp';
import { addPerson, type Person } from '../support/people';
import { Jar, webForms } from '../support/webForms';
import { findSessionWithRepo, recordSessionImage } from '../../src/db/sessions';
import { finishHook, startHook } from '../../src/db/sessionHooks';

let h: ApiHarness;
let forms: ReturnType<typeof webForms>;
let admin: Person;
let maintainer: Person;
let viewer: Person;
let repoId: number;
let suiteId: number;
let webhookPath: string;

const REFERENCE = 'docker.io/library/node:22';
const DIGEST = `sha256:${'0123456789abcdef'.repeat(4)}`;
const PULLED = 'pulled: 2 layers, 118 MiB fetched, 302 MiB unpacked, in 2.4 s';

beforeAll(async () => {
  h = await startApiHarness();
  const acme = await seedRepo(h, { org: 'acme', repo: 'web' });
  repoId = acme.repo.id;
  suiteId = acme.suites[0]!.id;
  webhookPath = new URL(acme.repo.webhook_url).pathname;
  admin = await addPerson(h.db.pool, h.config, { name: 'Ann Admin', email: 'ann@acme.example', roles: { [acme.orgId]: 'admin' } });
  maintainer = await addPerson(h.db.pool, h.config, { name: 'Max', email: 'max@acme.example', roles: { [acme.orgId]: 'maintainer' } });
  viewer = await addPerson(h.db.pool, h.config, { name: 'Vic', email: 'vic@acme.example', roles: { [acme.orgId]: 'viewer' } });
  forms = webForms(h);
});

afterAll(async () => {
  await h?.close();
});

/** The suite form's fields as the page sends them, with `image` as typed. */
const suiteFields = (image: string) => ({ test_pattern: 'tests/*.sh', test_command: '', workers: '2', junit_pattern: '', deadline_minutes: '', profiles: '', plan: '', setup: '', image });

const suitesOverApi = async (): Promise<{ id: number; branch: string; image: string | null }[]> => (await h.admin('GET', `/api/v1/repos/${repoId}/suites`)).json();

describe('a suite’s image on the CI Setup page', () => {
  it('is set, shown, refused when bad and cleared through the suite’s form', async () => {
    const jar = new Jar(admin.cookie);
    const setup = `/repos/${repoId}`;
    const saved = await forms.post(jar, setup, `${setup}/suites/${suiteId}`, suiteFields('node:22'));
    expect(saved.statusCode).toBe(303);
    expect(saved.headers.location).toBe(`${setup}?saved=suite#suite-${suiteId}`);
    expect((await suitesOverApi()).find((s) => s.id === suiteId)?.image).toBe('node:22');
    const page = (await forms.get(jar, setup)).body;
    expect(page).toContain(`name="image" placeholder="node:22" autocomplete="off" spellcheck="false" value="node:22"`);
    expect(page).toContain('· image node:22');

    // The API's message beside the form, the field marked, what was typed kept.
    const bad = await forms.post(jar, setup, `${setup}/suites/${suiteId}`, suiteFields('Node:22 beta'));
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toMatch(/<p class="error" role="alert">image: [^<]+<\/p>/);
    expect(bad.body).toMatch(/id="suite-\d+-image"[^>]*value="Node:22 beta" aria-invalid="true"/);
    expect((await suitesOverApi()).find((s) => s.id === suiteId)?.image).toBe('node:22');

    expect((await forms.post(jar, setup, `${setup}/suites/${suiteId}`, suiteFields(''))).statusCode).toBe(303);
    expect((await suitesOverApi()).find((s) => s.id === suiteId)?.image).toBeNull();
  });

  it('is taken by the new suite form, and left out when empty', async () => {
    const jar = new Jar(admin.cookie);
    const setup = `/repos/${repoId}`;
    expect((await forms.post(jar, setup, `${setup}/suites`, { branch: 'images', ...suiteFields('ghcr.io/acme/ci:3') })).statusCode).toBe(303);
    expect((await forms.post(jar, setup, `${setup}/suites`, { branch: 'plain', ...suiteFields('') })).statusCode).toBe(303);
    const suites = await suitesOverApi();
    expect(suites.find((s) => s.branch === 'images')?.image).toBe('ghcr.io/acme/ci:3');
    expect(suites.find((s) => s.branch === 'plain')?.image).toBeNull();
    const bad = await forms.post(jar, setup, `${setup}/suites`, { branch: 'broken', ...suiteFields('https://ghcr.io/acme/ci') });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('image: is an image reference, not a URL');
    expect(bad.body).toMatch(/id="suite-new-image"[^>]*aria-invalid="true"/);
  });
});

describe('registry logins on the CI Setup page', () => {
  const setup = () => `/repos/${repoId}`;
  const overApi = async (): Promise<{ host: string; username: string }[]> => (await h.admin('GET', `/api/v1/repos/${repoId}/registries`)).json();

  it('adds, replaces and deletes a login, never showing its password', async () => {
    const jar = new Jar(admin.cookie);
    const empty = await forms.get(jar, setup());
    expect(empty.body).toContain('aria-label="Set a registry login"');
    expect(empty.body).toContain('No registry logins');

    const added = await forms.post(jar, setup(), `${setup()}/registries`, { host: 'Registry.Example.com:5000', username: 'ci-bot', password: 'first-password-1' });
    expect(added.statusCode).toBe(303);
    expect(added.headers.location).toBe(`${setup()}?saved=registry#registries`);
    expect(await overApi()).toEqual([expect.objectContaining({ host: 'registry.example.com:5000', username: 'ci-bot' })]);
    let page = await forms.get(jar, `${setup()}?saved=registry`);
    expect(page.body).toContain('Registry login saved.');
    expect(page.body).toContain('data-registry="registry.example.com:5000"');
    expect(page.body).toContain('<td data-label="Username">ci-bot</td>');
    expect(page.body).toContain(`action="/repos/${repoId}/registries/registry.example.com%3A5000/delete"`);
    expect(page.body).not.toContain('first-password-1');

    // The same host again replaces it.
    expect((await forms.post(jar, setup(), `${setup()}/registries`, { host: 'registry.example.com:5000', username: 'ci-bot-2', password: 'second-password-2' })).statusCode).toBe(303);
    expect(await overApi()).toEqual([expect.objectContaining({ host: 'registry.example.com:5000', username: 'ci-bot-2' })]);
    page = await forms.get(jar, setup());
    expect(page.body).toContain('<td data-label="Username">ci-bot-2</td>');
    expect(page.body).not.toContain('second-password-2');
    const { rows } = await h.db.pool.query<{ password_sealed: string }>('SELECT password_sealed FROM registry_logins');
    expect(rows[0]!.password_sealed).not.toContain('second-password-2');

    const deleted = await forms.post(jar, setup(), `${setup()}/registries/registry.example.com%3A5000/delete`);
    expect(deleted.statusCode).toBe(303);
    expect(deleted.headers.location).toBe(`${setup()}?saved=registry-deleted#registries`);
    expect(await overApi()).toEqual([]);
    expect((await forms.get(jar, setup())).body).not.toContain('data-registry=');
    // Gone already: said on the list's form.
    const again = await forms.post(jar, setup(), `${setup()}/registries/registry.example.com%3A5000/delete`);
    expect(again.statusCode).toBe(404);
    expect(again.body).toContain('no such registry login');
  });

  it('shows a bad host or an empty field with the field, keeping what was typed but the password', async () => {
    const jar = new Jar(admin.cookie);
    const url = await forms.post(jar, setup(), `${setup()}/registries`, { host: 'https://ghcr.io/acme', username: 'ci-bot', password: 'typed-password-3' });
    expect(url.statusCode).toBe(400);
    expect(url.body).toContain('host: must be a registry host');
    expect(url.body).toMatch(/id="registry-host"[^>]*value="https:\/\/ghcr.io\/acme" aria-invalid="true"/);
    expect(url.body).toContain('value="ci-bot"');
    expect(url.body).not.toContain('typed-password-3');

    const noUser = await forms.post(jar, setup(), `${setup()}/registries`, { host: 'ghcr.io', username: ' ', password: 'typed-password-4' });
    expect(noUser.statusCode).toBe(400);
    expect(noUser.body).toMatch(/<p class="error" role="alert">username: [^<]+<\/p>/);
    expect(noUser.body).toMatch(/name="username"[^>]*aria-invalid="true"/);
    expect(noUser.body).not.toContain('typed-password-4');

    const noPassword = await forms.post(jar, setup(), `${setup()}/registries`, { host: 'ghcr.io', username: 'ci-bot', password: '' });
    expect(noPassword.statusCode).toBe(400);
    expect(noPassword.body).toMatch(/<p class="error" role="alert">password: [^<]+<\/p>/);
    expect(noPassword.body).toMatch(/name="password" type="password" required autocomplete="new-password" aria-invalid="true"/);
    expect(await overApi()).toEqual([]);
  });

  it('is an admin’s: a maintainer sees neither the list nor the forms, and is refused', async () => {
    await h.admin('PUT', `/api/v1/repos/${repoId}/registries/ghcr.io`, { username: 'hidden-user', password: 'hidden-password' });
    const jar = new Jar(maintainer.cookie);
    const page = await forms.get(jar, setup());
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('aria-label="New suite"');
    for (const adminOnly of ['id="registries"', 'aria-label="Set a registry login"', 'hidden-user', '/registries/']) expect(page.body).not.toContain(adminOnly);
    const refused = await forms.post(jar, setup(), `${setup()}/registries`, { host: 'ghcr.io', username: 'x', password: 'y' });
    expect(refused.statusCode).toBe(403);
    expect((await forms.post(jar, setup(), `${setup()}/registries/ghcr.io/delete`)).statusCode).toBe(403);
    expect(await overApi()).toEqual([expect.objectContaining({ host: 'ghcr.io', username: 'hidden-user' })]);
  });
});

describe('a build that ran in an image', () => {
  let session: number;

  /** A session of the master suite, ended `passed`, as a trigger makes one. */
  async function endedSession(): Promise<number> {
    const trigger = await h.request({ method: 'POST', url: webhookPath, payload: { branch: 'master', force: true } });
    expect(trigger.statusCode).toBe(200);
    const id = h.enqueued.at(-1)!.sessionId;
    await h.db.pool.query(`UPDATE sessions SET status = 'passed', commit_id = $2 WHERE id = $1`, [id, 'c0ffee'.repeat(6) + 'c0ff']);
    return id;
  }

  beforeAll(async () => {
    session = await endedSession();
    await recordSessionImage(h.db.pool, session, REFERENCE, DIGEST);
    const row = await startHook(h.db.pool, { sessionId: session, name: 'image', worker: 1, command: `${REFERENCE}@${DIGEST}`, detail: PULLED, runner: 'runner-a' });
    await finishHook(h.db.pool, row, { status: 'passed', exitCode: null, durationMs: 2400, output: '[sluice] unpacked into the build’s root' });
  });

  it('shows its reference, its digest and its image step, with the rebuild that resolves it again', async () => {
    const page = (await forms.get(new Jar(maintainer.cookie), `/builds/${session}`)).body;
    expect(page).toContain(`<code data-image-ref title="${REFERENCE}@${DIGEST}">${REFERENCE}</code>`);
    expect(page).toContain(`<code data-image-digest title="${DIGEST}">sha256:0123456789ab</code>`);
    // The step on its worker's line, with what the pull took.
    expect(page).toMatch(/<strong><code>image<\/code><\/strong> · worker 1 · <span class="status status-passed">passed<\/span> · <span class="muted">2\.4 s<\/span>/);
    expect(page).toContain(PULLED);
    expect(page).toContain(`${REFERENCE}@${DIGEST}`);
    // The timeline's tooltip: "image", not "image hook".
    expect(page).toContain('image on worker 1: passed, 2.4 s');
    expect(page).not.toContain('image hook');
    expect(page).toMatch(/<form class="inline" method="post" action="\/builds\/\d+\/rebuild" data-rebuild-resolving><input type="hidden" name="_csrf" value="[^"]+"><input type="hidden" name="resolve_images" value="1"><button[^>]*>Rebuild, resolving the image again<\/button><\/form>/);

    // A viewer gets neither rebuild.
    const watched = (await forms.get(new Jar(viewer.cookie), `/builds/${session}`)).body;
    expect(watched).toContain(REFERENCE);
    expect(watched).not.toContain('resolve_images');
    expect(watched).not.toContain('data-rebuild');
  });

  it('rebuilds in the digest it ran, or resolving the image again', async () => {
    const jar = new Jar(maintainer.cookie);
    const pinned = await forms.post(jar, `/builds/${session}`, `/builds/${session}/rebuild`);
    expect(pinned.statusCode).toBe(303);
    const pinnedId = Number(/^\/builds\/(\d+)$/.exec(pinned.headers.location ?? '')?.[1]);
    expect(h.enqueued.at(-1)!.sessionId).toBe(pinnedId);
    expect((await findSessionWithRepo(h.db.pool, pinnedId))!.trigger).toMatchObject({ rebuildOf: session, imageDigests: { [REFERENCE]: DIGEST } });

    const resolved = await forms.post(jar, `/builds/${session}`, `/builds/${session}/rebuild`, { resolve_images: '1' });
    expect(resolved.statusCode).toBe(303);
    const resolvedId = Number(/^\/builds\/(\d+)$/.exec(resolved.headers.location ?? '')?.[1]);
    expect(resolvedId).not.toBe(pinnedId);
    expect(h.enqueued.at(-1)!.sessionId).toBe(resolvedId);
    const trigger = (await findSessionWithRepo(h.db.pool, resolvedId))!.trigger;
    expect(trigger).toMatchObject({ rebuildOf: session });
    expect(trigger.imageDigests).toBeUndefined();
  });

  it('offers no second rebuild for a build that ran in no image', async () => {
    const plain = await endedSession();
    const page = (await forms.get(new Jar(maintainer.cookie), `/builds/${plain}`)).body;
    expect(page).toContain('data-rebuild>');
    expect(page).toContain('data-rebuild-resolving hidden');
    expect(page).toContain('<span data-image hidden>');
  });

  it('puts the image on its report, escaped', async () => {
    const report = async (id: number) => {
      const view = (await h.admin('GET', `/api/v1/sessions/${id}`)).json();
      expect(view.image).toEqual({ reference: expect.any(String), digest: expect.any(String) });
      const url = new URL(view.url);
      return (await h.request({ method: 'GET', url: `${url.pathname}${url.search}` })).body;
    };
    expect(await report(session)).toContain(`<tr><th>image</th><td>${REFERENCE}@${DIGEST}</td></tr>`);
    // What the runner recorded is shown as text, whatever it holds.
    const odd = await endedSession();
    await recordSessionImage(h.db.pool, odd, 'registry.example.com/<b>x</b>:"1"', DIGEST);
    const page = await report(odd);
    expect(page).toContain(`<tr><th>image</th><td>registry.example.com/&lt;b&gt;x&lt;/b&gt;:&quot;1&quot;@${DIGEST}</td></tr>`);
    expect(page).not.toContain('<b>x</b>');
  });
});

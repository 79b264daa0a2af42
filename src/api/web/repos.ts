/**
 * A repository's CI Setup page (`/repos/:id`: how to connect it, its settings, suites, secrets
 * and registry logins) and its Branches page (`/repos/:id/branches`: every known branch with its
 * toggles and last build). Each form posts to a route here that turns its fields into the JSON API's
 * body and calls the same operation of the application layer as the JSON route (app/), so the
 * rules and their messages are the API's; a refused field is shown next to the form it came from.
 */
import { suiteInsights, testHistory } from '../../app/insights';
import { unmute } from '../../app/mutes';
import { decide, stoppedBy } from '../../core/access';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import type { RepoRow } from '../../db/repos';
import type { SuiteRow } from '../../db/suites';
import { STATUS_PROVIDERS, type StatusProvider } from '../../core/commitStatus';
import { providers } from '../../providers';
import { branchesWithLastBuild, setBranch } from '../../app/branches';
import { deactivateRepo, repairRepo, repoConnection } from '../../app/connections';
import { appOfRepo, deactivateAppRepo } from '../../app/githubApps';
import { putRegistryLogin, registryLoginsOf, removeRegistryLogin } from '../../app/registries';
import { loadRepo, repoView, rotateRepoKey, rotateRepoSshKey, updateRepo } from '../../app/repos';
import { putSecret, removeSecret, secretsOf } from '../../app/secrets';
import { createSuite, removeSuite, suitesOf, updateSuite } from '../../app/suites';
import { parseId } from '../../app/errors';
import { HttpError } from '../http';
import { checked, formatTime, formFields, given, lines, notFoundPage, orNull, page, tryAction, type FailedForm, type WebScope } from './pages';
import type { SignedIn } from './signIn';
import { suiteChartSvg } from './suiteChart';

// The pages' forms, as FailedForm names them: `settings`, `webhook-secret`, `known-hosts`, `commit-status`,
// `suite:new`, `suite:<id>`, `secret`, `secrets`, `registry`, `registries`, `branch:<name>`,
// `suite-delete:<id>`, `rotate-key`, `rotate-ssh-key`.

/** What a `?saved=` after a form's redirect says; anything else says nothing. */
const NOTICES: Record<string, string> = {
  settings: 'Settings saved.',
  'webhook-secret': 'Webhook secret saved.',
  'known-hosts': 'SSH host keys saved.',
  'commit-status': 'Commit status settings saved.',
  suite: 'Suite saved.',
  secret: 'Secret saved.',
  'secret-deleted': 'Secret deleted.',
  registry: 'Registry login saved.',
  'registry-deleted': 'Registry login deleted.',
  branch: 'Branch saved.',
  'suite-deleted': 'Suite deleted, with its builds.',
  key: 'New trigger key made: the old webhook URLs no longer work. Put the new ones into your hosting sites.',
  'ssh-key': 'New SSH key pair made: put the new public key on the git server (and the CI server) in place of the old one.',
  activated: 'Activated: the hosting site has its webhook and deploy key. Add a suite for the branches to build.',
  repaired: 'Repaired: the webhook and deploy key are at the hosting site.',
  deactivated: 'Deactivated: the webhook and deploy key are gone from the hosting site; this repository and its builds stay.',
  'app-activated': 'Activated: the GitHub App’s webhook brings its pushes and pull requests, each checkout gets a token of its own, results go back as check runs. Add a suite for the branches to build.',
  'app-deactivated': 'No longer built through the GitHub App: no more tokens or check runs; this repository and its builds stay.',
};

/** How people know the registry's adapters; one missing here shows by its path segment. */
const PROVIDER_LABELS: Record<string, string> = {
  builds: 'Generic (curl, hooks, JSON)',
  github: 'GitHub',
  gitlab: 'GitLab',
  bitbucket: 'Bitbucket Cloud',
  stash: 'Bitbucket Server',
  gitea: 'Gitea / Forgejo',
  gogs: 'Gogs',
  gerrit: 'Gerrit',
};

/** Fields never written back into a page: what was typed there is a secret. */
const SECRET_FIELDS = ['value', 'webhook_secret', 'status_token', 'password'];

/** The hosting sites commit statuses go to, as people call them. */
const STATUS_LABELS: Record<StatusProvider, string> = {
  github: 'GitHub',
  gitlab: 'GitLab',
  gitea: 'Gitea / Forgejo',
  bitbucket: 'Bitbucket Cloud',
  'bitbucket-server': 'Bitbucket Server / Data Center',
};

/** Browsers send a textarea's lines with CRLF; the API's text rules expect LF. */
const unixLines = (value: string | undefined): string => (value ?? '').replace(/\r\n?/g, '\n');

/** A number field as the JSON API takes it: absent when empty, else a number (NaN is refused there). */
const numberField = (value: string | undefined): number | undefined => (given(value) === undefined ? undefined : Number(value));

/** A `true`/`false` button value as a toggle; absent: unchanged. */
const toggle = (value: string | undefined): boolean | undefined => (value === undefined ? undefined : value === 'true');

/** Profiles (or a setup) typed as YAML (JSON is YAML too); empty is none. Unreadable text is a 400 on the field. */
function profilesField(value: string | undefined, field = 'profiles'): unknown {
  const text = unixLines(value).trim();
  if (text === '') return [];
  try {
    return parseYaml(text);
  } catch (err) {
    throw new HttpError(400, 'invalid request', `not YAML or JSON: ${(err as Error).message.split('\n')[0]}`, field);
  }
}

/** The setup keys a suite's Setup field takes, as sluice.yml writes them at its top. */
const SETUP_KEYS = ['hooks', 'cache', 'services', 'artifacts'] as const;

/**
 * A suite's setup typed as YAML (sluice.yml's `hooks`, `cache`, `services` and `artifacts`); each
 * key left out is unset (null; creating: not given). The API's rules check what the keys say.
 */
function setupField(value: string | undefined, creating: boolean): Record<string, unknown> {
  const parsed = profilesField(value, 'setup');
  const given = parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  if (Array.isArray(parsed) ? parsed.length > 0 : parsed !== null && typeof parsed !== 'object') {
    throw new HttpError(400, 'invalid request', 'must be a mapping with the keys hooks, cache, services and artifacts', 'setup');
  }
  const unknown = Object.keys(given).filter((k) => !(SETUP_KEYS as readonly string[]).includes(k));
  if (unknown.length > 0) throw new HttpError(400, 'invalid request', `unknown key ${JSON.stringify(unknown[0])}: the keys are hooks, cache, services and artifacts`, 'setup');
  return Object.fromEntries(SETUP_KEYS.map((k) => [k, given[k] ?? (creating ? undefined : null)]));
}

/** The settings form as a PATCH /repos/:repo body: every field given, empty ones cleared. */
const settingsBody = (v: Record<string, string>) => ({
  pull_url: given(v.pull_url) ?? '',
  ci_push_url: orNull(v.ci_push_url),
  pull_request_only: checked(v.pull_request_only),
  trust_same_repo_pull_requests: checked(v.trust_same_repo_pull_requests),
  ci_squash: checked(v.ci_squash),
  branch_blacklist: lines(v.branch_blacklist),
  chat_url: orNull(v.chat_url),
});

/** A suite's form as a POST (`branch` given) or PATCH body: empty optional fields are none. */
function suiteBody(v: Record<string, string>, creating: boolean) {
  const plan = lines(v.plan);
  const body = {
    test_pattern: given(v.test_pattern) ?? '',
    test_command: creating ? given(v.test_command) : orNull(v.test_command),
    workers: numberField(v.workers),
    junit_pattern: creating ? given(v.junit_pattern) : orNull(v.junit_pattern),
    profiles: profilesField(v.profiles),
    plan: plan.length > 0 ? plan : creating ? undefined : null,
    deadline_minutes: numberField(v.deadline_minutes) ?? (creating ? undefined : null),
    // Its own field, not a key of the Setup text: the one place on the page that sets it.
    image: creating ? given(v.image) : orNull(v.image),
    ...setupField(v.setup, creating),
  };
  return creating ? { branch: given(v.branch) ?? '', ...body } : body;
}

/** A suite as its form shows it: profiles as YAML, the plan one name a line. */
const suiteForm = (s: SuiteRow) => ({
  id: s.id,
  branch: s.branch,
  test_pattern: s.test_pattern,
  test_command: s.test_command ?? '',
  workers: String(s.workers),
  junit_pattern: s.junit_pattern ?? '',
  profiles: s.profiles.length > 0 ? toYaml(s.profiles) : '',
  plan: (s.plan ?? []).join('\n'),
  deadline_minutes: s.deadline_minutes === null ? '' : String(s.deadline_minutes),
  setup: setupYaml(s),
  image: s.image ?? '',
});

/** A suite's setup keys that are set, as the YAML its form shows. */
function setupYaml(s: SuiteRow): string {
  const set = Object.fromEntries(SETUP_KEYS.filter((k) => s[k] !== null).map((k) => [k, s[k]]));
  return Object.keys(set).length > 0 ? toYaml(set) : '';
}

/** An id for a branch's row and the fragment that scrolls to it (a name may hold `/`). */
const branchAnchor = (name: string): string => `branch-${encodeURIComponent(name)}`;

export function registerRepoPages(web: FastifyInstance, { deps, csrf, requireUser }: WebScope): void {
  const { pool, config } = deps;

  /** The repository `/repos/:id` names (its numeric id only), or undefined. */
  const findRepo = async (id: string): Promise<RepoRow | undefined> => {
    const found = await tryAction(() => loadRepo(pool, String(parseId(id, 'repository'))));
    return found.ok ? found.value : undefined;
  };

  const heading = (repo: RepoRow) => ({ id: repo.id, org_name: repo.org_name, name: repo.name });

  const setupPage = async (reply: FastifyReply, user: SignedIn, repo: RepoRow, failed: FailedForm | null, status = 200, notice?: string) => {
    const view = repoView(repo, config);
    // Keys, settings, statuses, secrets and registry logins are an admin's; a maintainer's page shows suites.
    const isAdmin = decide(user, 'admin', repo.org_id, true).allowed;
    const [suites, secrets, registries, site, githubApp] = await Promise.all([
      suitesOf(pool, repo),
      secretsOf(deps, repo),
      isAdmin ? registryLoginsOf(pool, repo) : [],
      // Activated from a hosting site: how its parts there are (the site is asked; a repository not activated has none).
      isAdmin ? tryAction(() => repoConnection(deps, repo)) : null,
      // Built through a GitHub App: which, and through which installation.
      isAdmin ? appOfRepo(deps, repo) : null,
    ]);
    return page(
      reply,
      'repoSetup',
      {
        title: `CI setup of ${repo.org_name}/${repo.name}`,
        section: 'orgs',
        user,
        isAdmin,
        notice: notice ?? null,
        failed,
        repo: {
          ...heading(repo),
          scm: view.scm,
          pull_url: view.pull_url,
          ci_push_url: view.ci_push_url ?? '',
          pull_request_only: view.pull_request_only,
          trust_same_repo_pull_requests: view.trust_same_repo_pull_requests,
          ci_squash: view.ci_squash,
          branch_blacklist: view.branch_blacklist.join('\n'),
          chat_url: view.chat_url ?? '',
          ssh_public_key: view.ssh_public_key,
          webhook_secret_set: view.webhook_secret_set,
          ssh_known_hosts: view.ssh_known_hosts ?? '',
          status_provider: view.status_provider ?? '',
          // As stored, not the provider's default the view shows: saving the form must not pin it.
          status_api_url: repo.status_api_url ?? '',
          status_repo: view.status_repo ?? '',
          status_token_set: view.status_token_set,
        },
        statusProviders: STATUS_PROVIDERS.map((name) => ({ name, label: STATUS_LABELS[name] })),
        // One URL per adapter of the registry: the generic one as repoView gives it, the others
        // with the provider's path segment in place of `builds`.
        hooks: Object.keys(providers).map((name) => ({ name, label: PROVIDER_LABELS[name] ?? name, url: `${config.baseUrl}/1/${name}/${view.key}` })),
        suites: suites.map(suiteForm),
        secrets,
        // Hosts and users only: the logins' view leaves the sealed password behind.
        registries: registries.map((login) => ({ ...login, path: encodeURIComponent(login.host), updated: formatTime(login.updated_at) })),
        site: site?.ok
          ? {
              ...site.value,
              last_hook: site.value.last_hook_at ? formatTime(site.value.last_hook_at) : null,
              last_refused: site.value.last_refused_at ? formatTime(site.value.last_refused_at) : null,
              delivery: site.value.site_last_delivery ? { ...site.value.site_last_delivery, at: formatTime(site.value.site_last_delivery.at) } : null,
            }
          : null,
        githubApp: githubApp ? { ...githubApp, last_hook: githubApp.last_hook_at ? formatTime(githubApp.last_hook_at) : null } : null,
      },
      status,
    );
  };

  const branchesPage = async (reply: FastifyReply, user: SignedIn, repo: RepoRow, failed: FailedForm | null, status = 200, notice?: string) => {
    const list = (await branchesWithLastBuild(pool, repo)).map(({ branch: b, last: build }) => ({
      ...b,
      anchor: branchAnchor(b.name),
      path: encodeURIComponent(b.name),
      last: build ? { session: build.id, status: build.status, when: formatTime(build.received_at) } : null,
    }));
    // Turning branches on and off is a maintainer's: a viewer sees them without the buttons.
    const mayChange = decide(user, 'maintainer', repo.org_id, true).allowed;
    return page(reply, 'branches', { title: `Branches of ${repo.org_name}/${repo.name}`, section: 'orgs', user, notice: notice ?? null, failed, repo: heading(repo), branches: list, mayChange }, status);
  };

  /** A page of one repository: the signed-in user and the repository, or a redirect / 404 sent. */
  const repoGet = (path: string, render: typeof setupPage) =>
    web.get<{ Params: { id: string }; Querystring: { saved?: string } }>(path, async (request, reply) => {
      const user = requireUser(request, reply);
      if (!user) return reply;
      const repo = await findRepo(request.params.id);
      if (!repo) return notFoundPage(reply, user, `repository ${request.params.id}`);
      const notice = request.query.saved !== undefined && Object.hasOwn(NOTICES, request.query.saved) ? NOTICES[request.query.saved] : undefined;
      return render(reply, user, repo, null, 200, notice);
    });

  /**
   * A form of one repository's page: `act` calls the application layer and answers where to go
   * (303); a refusal it throws (the application layer's, or a form field's own) shows the page
   * again with the message next to form `form`.
   */
  const repoPost = <P extends Record<string, string>>(
    path: string,
    render: typeof setupPage,
    form: (params: P) => string,
    act: (repo: RepoRow, values: Record<string, string>, params: P, user: SignedIn) => Promise<string>,
  ) =>
    web.post(path, csrf, async (request, reply) => {
      const user = requireUser(request, reply);
      if (!user) return reply;
      // The router fills exactly the parameters `path` names.
      const params = request.params as P & { id: string };
      const repo = await findRepo(params.id);
      if (!repo) return notFoundPage(reply, user, `repository ${params.id}`);
      const values = formFields(request);
      const done = await tryAction(() => act(repo, values, params, user));
      if (done.ok) return reply.code(303).header('location', done.value).send();
      const kept = Object.fromEntries(Object.entries(values).filter(([key]) => !SECRET_FIELDS.includes(key)));
      return render(reply, user, repo, { form: form(params), error: done.error, values: kept }, done.status);
    });

  const setup = (repo: RepoRow, saved: string, anchor: string) => `/repos/${repo.id}?saved=${saved}#${anchor}`;

  repoGet('/repos/:id', setupPage);

  // A repository activated from a hosting site (app/connections.ts): its parts there made again, or removed.
  repoPost('/repos/:id/connection/repair', setupPage, () => 'site', async (repo) => {
    await repairRepo(deps, repo);
    return setup(repo, 'repaired', 'site');
  });
  repoPost('/repos/:id/connection/deactivate', setupPage, () => 'site', async (repo) => {
    await deactivateRepo(deps, repo);
    return setup(repo, 'deactivated', 'site');
  });

  // A repository built through a GitHub App (app/githubApps.ts): no longer.
  repoPost('/repos/:id/github-app/deactivate', setupPage, () => 'github-app', async (repo) => {
    await deactivateAppRepo(deps, repo);
    return setup(repo, 'app-deactivated', 'connect');
  });

  repoPost('/repos/:id/settings', setupPage, () => 'settings', async (repo, v) => {
    await updateRepo(deps, repo, settingsBody(v));
    return setup(repo, 'settings', 'settings');
  });

  // Set with the typed value, or removed by the form's Remove button.
  repoPost('/repos/:id/webhook-secret', setupPage, () => 'webhook-secret', async (repo, v) => {
    await updateRepo(deps, repo, { webhook_secret: v.remove !== undefined ? null : (v.webhook_secret ?? '') });
    return setup(repo, 'webhook-secret', 'connect');
  });

  // Commit statuses: no provider turns them off, keeping the other settings (as the JSON PATCH
  // does); an empty token keeps the one set, Remove drops it.
  repoPost('/repos/:id/commit-status', setupPage, () => 'commit-status', async (repo, v) => {
    const provider = given(v.status_provider);
    const where = provider ? { status_provider: provider, status_api_url: orNull(v.status_api_url), status_repo: orNull(v.status_repo) } : { status_provider: null };
    await updateRepo(deps, repo, {
      ...where,
      ...(v.remove_token !== undefined ? { status_token: null } : v.status_token ? { status_token: v.status_token } : {}),
    });
    return setup(repo, 'commit-status', 'statuses');
  });

  // Emptied, they are forgotten and learned again on the next connection (updateRepo).
  repoPost('/repos/:id/known-hosts', setupPage, () => 'known-hosts', async (repo, v) => {
    await updateRepo(deps, repo, { ssh_known_hosts: unixLines(v.ssh_known_hosts) });
    return setup(repo, 'known-hosts', 'known-hosts');
  });

  repoPost('/repos/:id/suites', setupPage, () => 'suite:new', async (repo, v) => {
    const suite = await createSuite(pool, repo, suiteBody(v, true));
    return setup(repo, 'suite', `suite-${suite.id}`);
  });

  repoPost<{ suite: string }>('/repos/:id/suites/:suite', setupPage, (p) => `suite:${p.suite}`, async (repo, v, p) => {
    const suite = await updateSuite(pool, repo, parseId(p.suite, 'suite'), suiteBody(v, false));
    return setup(repo, 'suite', `suite-${suite.id}`);
  });

  // After a second click (the form sits in a <details>); builds under way are stopped by the user.
  repoPost<{ suite: string }>('/repos/:id/suites/:suite/delete', setupPage, (p) => `suite-delete:${p.suite}`, async (repo, _v, p, user) => {
    await removeSuite(deps, repo, parseId(p.suite, 'suite'), { stoppedBy: stoppedBy(user) ?? user.name });
    return setup(repo, 'suite-deleted', 'suites');
  });

  repoPost('/repos/:id/rotate-key', setupPage, () => 'rotate-key', async (repo) => {
    await rotateRepoKey(deps, repo);
    return setup(repo, 'key', 'connect');
  });

  repoPost('/repos/:id/rotate-ssh-key', setupPage, () => 'rotate-ssh-key', async (repo) => {
    await rotateRepoSshKey(deps, repo);
    return setup(repo, 'ssh-key', 'connect');
  });

  // The value is taken as typed (never trimmed): it is what the tests get.
  repoPost('/repos/:id/secrets', setupPage, () => 'secret', async (repo, v) => {
    await putSecret(deps, repo, given(v.name) ?? '', { value: v.value ?? '' });
    return setup(repo, 'secret', 'secrets');
  });

  repoPost<{ name: string }>('/repos/:id/secrets/:name/delete', setupPage, () => 'secrets', async (repo, _v, p) => {
    await removeSecret(pool, repo, p.name);
    return setup(repo, 'secret-deleted', 'secrets');
  });

  // The host as typed (the API normalizes it: `Docker.io` is `docker.io`); the password as typed, never trimmed.
  repoPost('/repos/:id/registries', setupPage, () => 'registry', async (repo, v) => {
    await putRegistryLogin(deps, repo, given(v.host) ?? '', { username: given(v.username) ?? '', password: v.password ?? '' });
    return setup(repo, 'registry', 'registries');
  });

  // `:host` comes URL-encoded (a port's `:`); the router decodes it.
  repoPost<{ host: string }>('/repos/:id/registries/:host/delete', setupPage, () => 'registries', async (repo, _v, p) => {
    await removeRegistryLogin(pool, repo, p.host);
    return setup(repo, 'registry-deleted', 'registries');
  });

  repoGet('/repos/:id/branches', branchesPage);

  web.post<{ Params: { id: string; suite: string } }>('/repos/:id/suites/:suite/unmute', csrf, async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const repo = await findRepo(request.params.id);
    if (!repo) return notFoundPage(reply, user, `repository ${request.params.id}`);
    const v = formFields(request);
    const done = await tryAction(() => unmute(pool, repo, request.params.suite, { classname: v.classname ?? '', name: v.name ?? '' }));
    if (!done.ok) return notFoundPage(reply, user, 'such muted test');
    return reply.code(303).header('location', `/repos/${repo.id}/suites/${encodeURIComponent(request.params.suite)}#muted`).send();
  });

  // A suite's history at a glance (issue 37): its last builds' chart, pass rate, slowest files, flakiest and most failing tests.
  web.get<{ Params: { id: string; suite: string }; Querystring: { builds?: string; classname?: string; name?: string } }>('/repos/:id/suites/:suite', async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const repo = await findRepo(request.params.id);
    if (!repo) return notFoundPage(reply, user, `repository ${request.params.id}`);
    const found = await tryAction(() => suiteInsights(deps, repo, request.params.suite, { builds: /^\d{1,3}$/.test(request.query.builds ?? '') ? request.query.builds : undefined }));
    if (!found.ok) return notFoundPage(reply, user, `suite ${request.params.suite} of ${repo.org_name}/${repo.name}`);
    const insights = found.value;
    // `?classname=&name=`: one test's history too (a case's link on a build page).
    const history = request.query.name ? await tryAction(() => testHistory(deps, repo, request.params.suite, { classname: request.query.classname ?? '', name: request.query.name })) : null;
    const title = `Suite ${insights.suite.branch} of ${repo.org_name}/${repo.name}`;
    // Unmuting is a maintainer's: a viewer sees the list without the buttons.
    const mayChange = decide(user, 'maintainer', repo.org_id, true).allowed;
    return page(reply, 'suite', { title, section: 'orgs', user, repo: heading(repo), insights, history: history?.ok ? history.value : null, mayChange, mutedAt: (d: Date) => formatTime(d), chartSvg: suiteChartSvg(insights.builds, `Test span of the last ${insights.builds.length === 1 ? 'build' : `${insights.builds.length} builds`} of ${title}`) });
  });

  // Each button sends one toggle: `enabled` or `locked_visible`, `true` or `false`.
  repoPost<{ branch: string }>('/repos/:id/branches/:branch', branchesPage, (p) => `branch:${p.branch}`, async (repo, v, p) => {
    const branch = await setBranch(pool, repo, p.branch, { enabled: toggle(v.enabled), locked_visible: toggle(v.locked_visible) });
    return `/repos/${repo.id}/branches?saved=branch#${branchAnchor(branch.name)}`;
  });
}

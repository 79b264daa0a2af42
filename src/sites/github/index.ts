/**
 * GitHub (GitHub.com, or GitHub Enterprise Server at `https://ghe.example.com/api/v3`), REST API
 * 2022-11-28, with a person's access token: a fine-grained token with Administration (deploy
 * keys), Webhooks and Commit statuses write on the repositories, or a classic one with `repo`
 * and `admin:repo_hook`. Woodpecker's and Drone's way: a webhook and a read-only deploy key per
 * repository. (A GitHub App, installed once on an organization, with check runs and installation
 * tokens, is the next step: docs/sites/github.md.)
 *
 * GitHub finds a repository by id only through undocumented paths, so the id, which renames and
 * transfers keep, is looked for in the list of the account's repositories (`/user/repos`, whose
 * `permissions.admin` says what it administers). docs.github.com/rest: repos, webhooks (and
 * their deliveries), deploy keys; lists page by `Link: rel="next"`, at most 100 a page.
 */
import { siteHttp } from '../http';
import { SiteError, type SiteClient, type SiteClientOptions, type SiteRepo, type SiteWiring } from '../types';

interface Repository {
  id: number;
  full_name: string;
  ssh_url: string;
  html_url: string;
  default_branch?: string;
  permissions?: { admin: boolean };
}

interface Delivery {
  delivered_at: string;
  status_code: number;
  status: string;
}

export const githubWiring: SiteWiring = {
  triggerProvider: 'github',
  statusProvider: 'github',
  statusRepo: (repo) => repo.fullName,
};

export function githubClient(o: SiteClientOptions): SiteClient {
  const http = siteHttp({
    apiUrl: o.apiUrl,
    headers: { authorization: `Bearer ${o.token}`, accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28' },
    secrets: [o.token],
    allow: o.allow,
    deadline: o.deadline,
    dispatcher: o.dispatcher,
  });
  const path = (repo: SiteRepo) => `/repos/${repo.fullName.split('/').map(encodeURIComponent).join('/')}`;
  const toRepo = (r: Repository): SiteRepo => ({
    id: String(r.id),
    fullName: r.full_name,
    sshUrl: r.ssh_url,
    webUrl: r.html_url,
    defaultBranch: r.default_branch ?? null,
    admin: r.permissions?.admin === true,
  });
  const mine = async () => (await http.all<Repository>('/user/repos?per_page=100&sort=full_name')).map(toRepo);

  return {
    site: 'github',
    async account() {
      return (await http.need<{ login: string }>('GET', '/user')).login;
    },
    listRepos: mine,
    async repo(id) {
      return (await mine()).find((r) => r.id === id) ?? null;
    },
    async hooks(repo) {
      return (await http.all<{ id: number; config: { url?: string } }>(`${path(repo)}/hooks?per_page=100`)).map((h) => ({ id: String(h.id), url: h.config.url ?? '' }));
    },
    async createHook(repo, hook) {
      const made = await http.need<{ id: number }>('POST', `${path(repo)}/hooks`, {
        name: 'web',
        active: true,
        events: ['push', 'create', 'delete', 'pull_request'],
        config: { url: hook.url, content_type: 'json', secret: hook.secret, insecure_ssl: '0' },
      });
      return String(made.id);
    },
    deleteHook: (repo, id) => http.remove(`${path(repo)}/hooks/${encodeURIComponent(id)}`),
    async deployKeys(repo) {
      return (await http.all<{ id: number; key: string }>(`${path(repo)}/keys?per_page=100`)).map((k) => ({ id: String(k.id), key: k.key }));
    },
    async addDeployKey(repo, key) {
      const made = await http.need<{ id: number }>('POST', `${path(repo)}/keys`, { title: key.title, key: key.key, read_only: true });
      return String(made.id);
    },
    deleteDeployKey: (repo, id) => http.remove(`${path(repo)}/keys/${encodeURIComponent(id)}`),
    async lastDelivery(repo, hookId) {
      const res = await http.call<Delivery[]>('GET', `${path(repo)}/hooks/${encodeURIComponent(hookId)}/deliveries?per_page=1`);
      if (res.status !== 200 || !Array.isArray(res.body)) throw new SiteError(res.status, `GET ${path(repo)}/hooks/${hookId}/deliveries answered ${res.status}`);
      const last = res.body[0];
      if (!last) return null;
      // 0: GitHub did not get an answer.
      const status = last.status_code > 0 ? last.status_code : null;
      return { at: new Date(last.delivered_at), status, ok: status !== null && status >= 200 && status < 300 };
    },
  };
}

/**
 * Gitea and Forgejo (Codeberg, self-hosted), REST API v1, with an access token of scopes
 * `read:user` and `write:repository`. Webhooks and deploy keys take the repository's admin
 * right, which `/user/repos` does not filter by: its `permissions.admin` says. Repositories are
 * found again by their numeric id (`/repositories/{id}`), which renames and transfers keep; the
 * site keeps no delivery log its API shows.
 *
 * Read from Gitea's and Forgejo's sources (routers/api/v1, modules/structs): pages of at most
 * 50 (`limit`); `/user/repos` sends `Link`, the hook and key lists only `X-Total-Count`; a hook's
 * `active` defaults to false and a key's `read_only` too, so both are always sent.
 */
import { MAX_PAGES, siteHttp } from '../http';
import { SiteError, type SiteClient, type SiteClientOptions, type SiteRepo, type SiteWiring } from '../types';

/** Gitea's largest page (MAX_RESPONSE_ITEMS, 50 unless an admin changed it). */
const LIMIT = 50;

interface Repository {
  id: number;
  full_name: string;
  ssh_url: string;
  html_url: string;
  default_branch?: string;
  permissions?: { admin: boolean; push: boolean; pull: boolean };
}

interface Hook {
  id: number;
  /** Forgejo; Gitea has only `config.url`. */
  url?: string;
  config?: { url?: string };
}

interface DeployKey {
  id: number;
  key: string;
}

export const giteaWiring: SiteWiring = {
  triggerProvider: 'gitea',
  statusProvider: 'gitea',
  statusRepo: (repo) => repo.fullName,
};

export function giteaClient(o: SiteClientOptions): SiteClient {
  const http = siteHttp({ apiUrl: o.apiUrl, headers: { authorization: `token ${o.token}` }, secrets: [o.token], allow: o.allow, deadline: o.deadline, dispatcher: o.dispatcher });
  const path = (repo: SiteRepo) => `/repos/${repo.fullName.split('/').map(encodeURIComponent).join('/')}`;
  const toRepo = (r: Repository): SiteRepo => ({
    id: String(r.id),
    fullName: r.full_name,
    sshUrl: r.ssh_url,
    webUrl: r.html_url,
    defaultBranch: r.default_branch || null,
    admin: r.permissions?.admin === true,
  });
  /** Every page of a list that sends no `Link`: pages until one is short. */
  const pages = async <T>(list: string): Promise<T[]> => {
    const items: T[] = [];
    for (let page = 1; page <= MAX_PAGES; page++) {
      const batch = await http.need<T[]>('GET', `${list}?limit=${LIMIT}&page=${page}`);
      if (!Array.isArray(batch)) throw new SiteError(200, `GET ${list}: the site's answer is not a list`);
      items.push(...batch);
      if (batch.length < LIMIT) break;
    }
    return items;
  };

  return {
    site: 'gitea',
    async account() {
      return (await http.need<{ login: string }>('GET', '/user')).login;
    },
    async listRepos() {
      return (await http.all<Repository>(`/user/repos?limit=${LIMIT}&page=1`)).map(toRepo);
    },
    async repo(id) {
      const res = await http.call<Repository>('GET', `/repositories/${encodeURIComponent(id)}`);
      if (res.status === 404) return null;
      if (res.status !== 200) throw new SiteError(res.status, `GET /repositories/${id} answered ${res.status}`);
      return toRepo(res.body);
    },
    async hooks(repo) {
      return (await pages<Hook>(`${path(repo)}/hooks`)).map((h) => ({ id: String(h.id), url: h.url ?? h.config?.url ?? '' }));
    },
    async createHook(repo, hook) {
      const made = await http.need<Hook>('POST', `${path(repo)}/hooks`, {
        type: 'gitea',
        config: { url: hook.url, content_type: 'json', secret: hook.secret },
        events: ['push', 'create', 'delete', 'pull_request'],
        active: true,
      });
      return String(made.id);
    },
    deleteHook: (repo, id) => http.remove(`${path(repo)}/hooks/${encodeURIComponent(id)}`),
    async deployKeys(repo) {
      return (await pages<DeployKey>(`${path(repo)}/keys`)).map((k) => ({ id: String(k.id), key: k.key }));
    },
    async addDeployKey(repo, key) {
      const made = await http.need<DeployKey>('POST', `${path(repo)}/keys`, { title: key.title, key: key.key, read_only: true });
      return String(made.id);
    },
    deleteDeployKey: (repo, id) => http.remove(`${path(repo)}/keys/${encodeURIComponent(id)}`),
    async lastDelivery() {
      return undefined;
    },
  };
}

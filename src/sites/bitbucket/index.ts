/**
 * Bitbucket Cloud, REST API 2.0 (`https://api.bitbucket.org/2.0`), with an Atlassian API token
 * given as `<e-mail>:<token>` (Basic; scopes read:user, read:workspace, read:repository,
 * admin:repository, read/write/delete:webhook, write/delete:ssh-key) or an OAuth access token
 * (Bearer). Repositories are named by their workspace's and their own UUIDs
 * (`{workspace-uuid}/{repo-uuid}`), which renames keep. Bitbucket keeps no hook delivery log its
 * API shows; its deploy keys are read-only by nature.
 *
 * Atlassian's OpenAPI document (swagger.v3.json): pages are `{values, next}` (follow `next`,
 * `pagelen` at most 100); UUIDs in a path are in curly braces, percent-encoded.
 */
import { bitbucketAuthorization } from '../../delivery/commitStatus';
import { MAX_PAGES, siteHttp } from '../http';
import { SiteError, type SiteClient, type SiteClientOptions, type SiteRepo, type SiteWiring } from '../types';

interface Repository {
  uuid: string;
  full_name: string;
  mainbranch?: { name: string } | null;
  links: { html?: { href: string }; clone?: { name: string; href: string }[] };
}

interface Page<T> {
  values: T[];
  next?: string;
}

const UUID = /^\{[0-9a-f-]{36}\}$/;

export const bitbucketWiring: SiteWiring = {
  triggerProvider: 'bitbucket',
  statusProvider: 'bitbucket',
  statusRepo: (repo) => repo.fullName,
};

export function bitbucketClient(o: SiteClientOptions): SiteClient {
  const authorization = bitbucketAuthorization(o.token);
  const http = siteHttp({ apiUrl: o.apiUrl, headers: { authorization }, secrets: [o.token, authorization.split(' ')[1]!], allow: o.allow, deadline: o.deadline, dispatcher: o.dispatcher });
  /** `{ws}/{repo}` → the repository's path, each UUID percent-encoded; undefined for any other id. */
  const pathOf = (id: string): string | undefined => {
    const [ws, repo, ...rest] = id.split('/');
    if (!ws || !repo || rest.length > 0 || !UUID.test(ws) || !UUID.test(repo)) return undefined;
    return `/repositories/${encodeURIComponent(ws)}/${encodeURIComponent(repo)}`;
  };
  const path = (repo: SiteRepo) => pathOf(repo.id)!;
  const toRepo = (r: Repository, workspaceUuid: string, admin: boolean): SiteRepo => ({
    id: `${workspaceUuid}/${r.uuid}`,
    fullName: r.full_name,
    sshUrl: r.links.clone?.find((c) => c.name === 'ssh')?.href ?? `git@bitbucket.org:${r.full_name}.git`,
    webUrl: r.links.html?.href ?? '',
    defaultBranch: r.mainbranch?.name ?? null,
    admin,
  });
  /** Every page of a list: `next` links in the body. */
  const values = async <T>(first: string): Promise<T[]> => {
    const items: T[] = [];
    let next: string | undefined = first;
    for (let page = 0; next !== undefined && page < MAX_PAGES; page++) {
      const body: Page<T> = await http.need<Page<T>>('GET', next);
      if (!Array.isArray(body?.values)) throw new SiteError(200, `GET ${first}: the site's answer is not a page of values`);
      items.push(...body.values);
      next = body.next;
    }
    return items;
  };
  /** The repositories of a workspace the account administers (explicitly, as Bitbucket's `role=admin` says). */
  const administered = (workspaceUuid: string, query = '') =>
    values<Repository>(`/repositories/${encodeURIComponent(workspaceUuid)}?role=admin&pagelen=100${query ? `&q=${encodeURIComponent(query)}` : ''}`);

  return {
    site: 'bitbucket',
    async account() {
      const me = await http.need<{ nickname?: string; display_name?: string; uuid: string }>('GET', '/user');
      return me.nickname || me.display_name || me.uuid;
    },
    async listRepos() {
      // The workspaces the account is in, then each one's repositories it administers.
      const workspaces = await values<{ workspace: { uuid: string } }>('/user/workspaces?pagelen=100');
      const repos: SiteRepo[] = [];
      for (const { workspace } of workspaces) repos.push(...(await administered(workspace.uuid)).map((r) => toRepo(r, workspace.uuid, true)));
      return repos;
    },
    async repo(id) {
      const p = pathOf(id);
      if (!p) return null;
      const res = await http.call<Repository>('GET', p);
      if (res.status === 404 || res.status === 403) return null;
      if (res.status !== 200) throw new SiteError(res.status, `GET ${p} answered ${res.status}`);
      const ws = id.split('/')[0]!;
      const admin = (await administered(ws, `uuid="${res.body.uuid}"`)).some((r) => r.uuid === res.body.uuid);
      return toRepo(res.body, ws, admin);
    },
    async hooks(repo) {
      return (await values<{ uuid: string; url: string }>(`${path(repo)}/hooks?pagelen=100`)).map((h) => ({ id: h.uuid, url: h.url }));
    },
    async createHook(repo, hook) {
      const made = await http.need<{ uuid: string }>('POST', `${path(repo)}/hooks`, {
        description: 'Sluice',
        url: hook.url,
        active: true,
        secret: hook.secret,
        events: ['repo:push', 'pullrequest:created', 'pullrequest:updated', 'pullrequest:fulfilled', 'pullrequest:rejected'],
      });
      return made.uuid;
    },
    deleteHook: (repo, id) => http.remove(`${path(repo)}/hooks/${encodeURIComponent(id)}`),
    async deployKeys(repo) {
      return (await values<{ id: number; key: string }>(`${path(repo)}/deploy-keys?pagelen=100`)).map((k) => ({ id: String(k.id), key: k.key }));
    },
    async addDeployKey(repo, key) {
      const made = await http.need<{ id: number }>('POST', `${path(repo)}/deploy-keys`, { key: key.key, label: key.title });
      return String(made.id);
    },
    deleteDeployKey: (repo, id) => http.remove(`${path(repo)}/deploy-keys/${encodeURIComponent(id)}`),
    async lastDelivery() {
      return undefined;
    },
  };
}

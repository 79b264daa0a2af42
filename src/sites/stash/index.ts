/**
 * Bitbucket Server and Data Center (formerly Stash), REST API 1.0 under the server's own address
 * (`https://bitbucket.example.com`, with its context path if it has one), with an HTTP access
 * token (Bearer) or `user:password` (Basic) of an account with the repositories' admin right
 * (REPO_ADMIN). The server has no "who am I" endpoint: every authenticated answer names the user
 * in `X-AUSERNAME` (Atlassian's own Jenkins plugin reads it from `/rest/capabilities`). Nor does
 * it find a repository by id: the id, which a rename or a move to another project keeps, is
 * looked for in the list of repositories the account administers.
 *
 * Atlassian's OpenAPI document (9.2): pages are `{values, isLastPage, nextPageStart}` (`start`,
 * `limit`); webhooks, their last invocation and access keys (`/rest/keys/1.0`) need REPO_ADMIN.
 */
import { bitbucketAuthorization } from '../../delivery/commitStatus';
import { MAX_PAGES, siteHttp } from '../http';
import { SiteError, type SiteClient, type SiteClientOptions, type SiteRepo, type SiteWiring } from '../types';

interface Repository {
  id: number;
  slug: string;
  project: { key: string };
  defaultBranch?: string;
  links?: { clone?: { name: string; href: string }[]; self?: { href: string }[] };
}

interface Page<T> {
  values: T[];
  isLastPage: boolean;
  nextPageStart?: number;
}

const LIMIT = 100;

export const stashWiring: SiteWiring = {
  triggerProvider: 'stash',
  statusProvider: 'bitbucket-server',
  statusRepo: (repo) => repo.fullName,
};

export function stashClient(o: SiteClientOptions): SiteClient {
  const authorization = bitbucketAuthorization(o.token);
  const http = siteHttp({ apiUrl: o.apiUrl, headers: { authorization }, secrets: [o.token, authorization.split(' ')[1]!], allow: o.allow, deadline: o.deadline, dispatcher: o.dispatcher });
  /** `PROJECT/slug` → the repository's part of a path. */
  const repoPath = (repo: SiteRepo) => {
    const [project, slug] = repo.fullName.split('/');
    return `projects/${encodeURIComponent(project!)}/repos/${encodeURIComponent(slug!)}`;
  };
  const api = (repo: SiteRepo) => `/rest/api/1.0/${repoPath(repo)}`;
  const toRepo = (r: Repository, admin: boolean): SiteRepo => ({
    id: String(r.id),
    fullName: `${r.project.key}/${r.slug}`,
    sshUrl: r.links?.clone?.find((c) => c.name === 'ssh')?.href ?? '',
    webUrl: r.links?.self?.[0]?.href ?? '',
    defaultBranch: r.defaultBranch ?? null,
    admin,
  });
  /** Every page of a list (`start`, `nextPageStart`). */
  const values = async <T>(list: string): Promise<T[]> => {
    const items: T[] = [];
    let start: number | undefined = 0;
    for (let page = 0; start !== undefined && page < MAX_PAGES; page++) {
      const body: Page<T> = await http.need<Page<T>>('GET', `${list}${list.includes('?') ? '&' : '?'}start=${start}&limit=${LIMIT}`);
      if (!Array.isArray(body?.values)) throw new SiteError(200, `GET ${list}: the server's answer is not a page of values`);
      items.push(...body.values);
      start = body.isLastPage ? undefined : body.nextPageStart;
    }
    return items;
  };
  const administered = () => values<Repository>('/rest/api/1.0/repos?permission=REPO_ADMIN');

  return {
    site: 'stash',
    async account() {
      const res = await http.call('GET', '/rest/capabilities');
      if (res.status !== 200) throw new SiteError(res.status, `GET /rest/capabilities answered ${res.status}`);
      const user = res.headers['x-ausername'];
      if (typeof user !== 'string' || user === '') throw new SiteError(401, 'the server did not say whose token this is (no X-AUSERNAME): is the token valid?');
      return user;
    },
    async listRepos() {
      return (await administered()).map((r) => toRepo(r, true));
    },
    async repo(id) {
      if (!/^[0-9]{1,15}$/.test(id)) return null;
      let found = (await administered()).find((r) => String(r.id) === id);
      const admin = found !== undefined;
      found ??= (await values<Repository>('/rest/api/1.0/repos')).find((r) => String(r.id) === id);
      if (!found) return null;
      const repo = toRepo(found, admin);
      if (repo.defaultBranch === null) {
        const res = await http.call<{ displayId?: string }>('GET', `/rest/api/1.0/${repoPath(repo)}/default-branch`);
        if (res.status === 200 && typeof res.body?.displayId === 'string') repo.defaultBranch = res.body.displayId;
      }
      return repo;
    },
    async hooks(repo) {
      return (await values<{ id: number; url: string }>(`${api(repo)}/webhooks`)).map((h) => ({ id: String(h.id), url: h.url }));
    },
    async createHook(repo, hook) {
      const made = await http.need<{ id: number }>('POST', `${api(repo)}/webhooks`, {
        name: 'Sluice',
        url: hook.url,
        active: true,
        events: ['repo:refs_changed', 'pr:opened', 'pr:from_ref_updated', 'pr:merged', 'pr:declined'],
        configuration: { secret: hook.secret },
      });
      return String(made.id);
    },
    deleteHook: (repo, id) => http.remove(`${api(repo)}/webhooks/${encodeURIComponent(id)}`),
    async deployKeys(repo) {
      return (await values<{ key: { id: number; text: string } }>(`/rest/keys/1.0/${repoPath(repo)}/ssh`)).map((k) => ({ id: String(k.key.id), key: k.key.text }));
    },
    async addDeployKey(repo, key) {
      const made = await http.need<{ key: { id: number } }>('POST', `/rest/keys/1.0/${repoPath(repo)}/ssh`, { key: { text: key.key, label: key.title }, permission: 'REPO_READ' });
      return String(made.key.id);
    },
    deleteDeployKey: (repo, id) => http.remove(`/rest/keys/1.0/${repoPath(repo)}/ssh/${encodeURIComponent(id)}`),
    async lastDelivery(repo, hookId) {
      // The hook's last invocation: 204 when it has made none.
      const res = await http.call<{ start?: number; finish?: number; result?: { outcome?: string; description?: string } }>('GET', `${api(repo)}/webhooks/${encodeURIComponent(hookId)}/latest`);
      if (res.status === 204) return null;
      if (res.status === 404) return undefined;
      if (res.status !== 200) throw new SiteError(res.status, `GET ${api(repo)}/webhooks/${hookId}/latest answered ${res.status}`);
      const at = res.body.finish ?? res.body.start;
      if (at === undefined) return null;
      const status = /^[0-9]{3}$/.test(String(res.body.result?.description ?? '').trim()) ? Number(res.body.result!.description!.trim()) : null;
      return { at: new Date(at), status, ok: res.body.result?.outcome === 'SUCCESS' };
    },
  };
}

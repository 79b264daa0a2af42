/**
 * GitLab (GitLab.com or self-managed), REST API v4, with a personal, group or project access
 * token of scope `api` (writes need it; `read_api` is GET only). Managing a project's webhooks
 * and deploy keys takes the Maintainer role (access level 40), so that is what the list asks
 * for. Projects are named by their numeric id, which renames and transfers keep.
 *
 * docs.gitlab.com/api: projects.md, project_webhooks.md (events: GitLab 17.3 and later),
 * deploy_keys.md, users.md; pages follow `Link: rel="next"`.
 */
import { siteHttp } from '../http';
import { SiteError, type SiteClient, type SiteClientOptions, type SiteRepo, type SiteWiring } from '../types';

/** Maintainer: may manage webhooks and deploy keys. */
const MAINTAINER = 40;

interface Project {
  id: number;
  path_with_namespace: string;
  ssh_url_to_repo: string;
  web_url: string;
  default_branch?: string | null;
  permissions?: { project_access: { access_level: number } | null; group_access: { access_level: number } | null } | null;
}

interface Hook {
  id: number;
  url: string;
}

interface DeployKey {
  id: number;
  key: string;
}

interface HookEvent {
  response_status: string | number | null;
  created_at: string;
}

export const gitlabWiring: SiteWiring = {
  triggerProvider: 'gitlab',
  statusProvider: 'gitlab',
  // The id, not the path: statuses keep reaching a project renamed or moved.
  statusRepo: (repo) => repo.id,
};

export function gitlabClient(o: SiteClientOptions): SiteClient {
  const http = siteHttp({ apiUrl: o.apiUrl, headers: { 'private-token': o.token }, secrets: [o.token], allow: o.allow, deadline: o.deadline, dispatcher: o.dispatcher });
  const project = (repo: SiteRepo) => `/projects/${encodeURIComponent(repo.id)}`;
  const toRepo = (p: Project, admin: boolean): SiteRepo => ({
    id: String(p.id),
    fullName: p.path_with_namespace,
    sshUrl: p.ssh_url_to_repo,
    webUrl: p.web_url,
    defaultBranch: p.default_branch ?? null,
    admin,
  });

  return {
    site: 'gitlab',
    async account() {
      return (await http.need<{ username: string }>('GET', '/user')).username;
    },
    async listRepos() {
      const projects = await http.all<Project>(`/projects?min_access_level=${MAINTAINER}&order_by=id&sort=asc&per_page=100`);
      return projects.map((p) => toRepo(p, true));
    },
    async repo(id) {
      const res = await http.call<Project>('GET', `/projects/${encodeURIComponent(id)}`);
      if (res.status === 404) return null;
      if (res.status !== 200) throw new SiteError(res.status, `GET /projects/${id} answered ${res.status}`);
      const p = res.body;
      // The role the account has: on the project itself or through its group, whichever is higher.
      const level = Math.max(p.permissions?.project_access?.access_level ?? 0, p.permissions?.group_access?.access_level ?? 0);
      return toRepo(p, level >= MAINTAINER);
    },
    async hooks(repo) {
      return (await http.all<Hook>(`${project(repo)}/hooks?per_page=100`)).map((h) => ({ id: String(h.id), url: h.url }));
    },
    async createHook(repo, hook) {
      const made = await http.need<Hook>('POST', `${project(repo)}/hooks`, {
        url: hook.url,
        token: hook.secret,
        push_events: true,
        tag_push_events: true,
        merge_requests_events: true,
        enable_ssl_verification: true,
      });
      return String(made.id);
    },
    deleteHook: (repo, id) => http.remove(`${project(repo)}/hooks/${encodeURIComponent(id)}`),
    async deployKeys(repo) {
      return (await http.all<DeployKey>(`${project(repo)}/deploy_keys?per_page=100`)).map((k) => ({ id: String(k.id), key: k.key }));
    },
    async addDeployKey(repo, key) {
      const made = await http.need<DeployKey>('POST', `${project(repo)}/deploy_keys`, { title: key.title, key: key.key, can_push: false });
      return String(made.id);
    },
    deleteDeployKey: (repo, id) => http.remove(`${project(repo)}/deploy_keys/${encodeURIComponent(id)}`),
    async lastDelivery(repo, hookId) {
      // GitLab 17.3 and later; an older one answers 404 and keeps no log we can read.
      const res = await http.call<HookEvent[]>('GET', `${project(repo)}/hooks/${encodeURIComponent(hookId)}/events?per_page=1`);
      if (res.status === 404) return undefined;
      if (res.status !== 200 || !Array.isArray(res.body)) throw new SiteError(res.status, `GET ${project(repo)}/hooks/${hookId}/events answered ${res.status}`);
      const last = res.body[0];
      if (!last) return null;
      // A string ("200"), or words ("internal error") when GitLab did not reach Sluice.
      const status = /^[0-9]{3}$/.test(String(last.response_status)) ? Number(last.response_status) : null;
      return { at: new Date(last.created_at), status, ok: status !== null && status >= 200 && status < 300 };
    },
  };
}

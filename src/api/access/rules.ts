/**
 * What every route needs (issue 25), in one table to read and review: the role it takes in the
 * organization its resource belongs to, and what the audit trail calls a change made through
 * it. A route missing here is refused at start (api/access/guard.ts), so a new route cannot go
 * out unguarded; test/integration/access-routes.test.ts tries every route with every role.
 *
 * The roles: a `viewer` sees builds and reports; a `maintainer` also manages suites and
 * branches and stops and rebuilds; an `admin` also the repositories' settings, secrets,
 * webhooks and members. Installation administrators (and the admin token) may do anything,
 * and they alone make organizations and look after runners and people.
 */
import type { Need } from '../../core/access';

/** Where the organization of a route's resource comes from: the kind of resource, and its path parameter. */
export interface OrgSource {
  kind: 'org' | 'repo' | 'webhook' | 'delivery' | 'session';
  param: string;
}

export interface AccessRule {
  need: Need;
  of?: OrgSource;
  /** The audit trail's name for what the route changes; reads have none. */
  audit?: string;
  /** A public route: why no one is asked who they are. */
  why?: string;
  /** A public page that differs for someone signed in (the sign-in page): who it is is looked up. */
  knowsWho?: boolean;
  /** The web pages (cookies, a redirect to sign in) or the JSON API (a Bearer token). */
  surface: 'api' | 'web';
}

type Rule = Omit<AccessRule, 'surface'>;

const open = (why: string): Rule => ({ need: 'public', why });
const signedIn: Rule = { need: 'signed-in' };
const installation = (audit?: string): Rule => ({ need: 'installation', audit });
const on =
  (kind: OrgSource['kind'], param: string) =>
  (need: Exclude<Need, 'public' | 'signed-in' | 'installation'>, audit?: string): Rule => ({ need, of: { kind, param }, audit });

const org = on('org', 'org');
const repo = on('repo', 'repo');
const webhook = on('webhook', 'id');
const delivery = on('delivery', 'id');
const session = on('session', 'session');

const API: Record<string, Rule> = {
  'GET /healthz': open('health checks of load balancers and orchestrators'),
  'GET /ci_events/:guid/guid': open('a trigger’s status_uri: its random guid is what opens it'),
  'POST /1/:provider/:key': open('triggers: the repository key in the URL (and a webhook secret, if set) is the credential'),
  'POST /api/v1/github-apps/hooks/:hook': open('a GitHub App’s webhook: signed with the app’s webhook secret, checked over the body'),
  'GET /1/reports/:session': open('a report opens with its own random token, or an API token that may see its build (routes/reports.ts)'),
  'GET /1/reports/:session/artifacts/:artifact': open('as the report it belongs to'),
  'GET /api/v1/openapi.json': open('the description of this API'),
  'GET /api/docs*': open('the API’s interactive documentation page'),
  'ANY /api/v1/runner/*': open('runners present a runner token, which the runner API checks itself (routes/runnerApi.ts)'),

  'GET /api/v1/me': signedIn,
  'GET /api/v1/users': installation(),
  'PATCH /api/v1/users/:user': installation('user.update'),
  'DELETE /api/v1/users/:user': installation('user.remove'),
  'GET /api/v1/tokens': signedIn,
  'POST /api/v1/tokens': { need: 'signed-in', audit: 'token.create' },
  'DELETE /api/v1/tokens/:id': { need: 'signed-in', audit: 'token.revoke' },
  'GET /api/v1/audit': signedIn,

  'GET /api/v1/orgs': signedIn,
  'POST /api/v1/orgs': installation('org.create'),
  'GET /api/v1/orgs/:org': org('viewer'),
  'DELETE /api/v1/orgs/:org': org('admin', 'org.delete'),
  'GET /api/v1/orgs/:org/repos': org('viewer'),
  'POST /api/v1/orgs/:org/repos': org('admin', 'repo.create'),
  'GET /api/v1/orgs/:org/webhooks': org('admin'),
  'POST /api/v1/orgs/:org/webhooks': org('admin', 'webhook.create'),
  'GET /api/v1/orgs/:org/members': org('viewer'),
  'PUT /api/v1/orgs/:org/members/:user': org('admin', 'member.set'),
  'DELETE /api/v1/orgs/:org/members/:user': org('admin', 'member.remove'),
  'GET /api/v1/orgs/:org/invitations': org('admin'),
  'POST /api/v1/orgs/:org/invitations': org('admin', 'invitation.create'),
  'DELETE /api/v1/orgs/:org/invitations/:id': org('admin', 'invitation.delete'),
  'GET /api/v1/orgs/:org/membership-rules': org('admin'),
  'POST /api/v1/orgs/:org/membership-rules': org('admin', 'membership-rule.create'),
  'DELETE /api/v1/orgs/:org/membership-rules/:id': org('admin', 'membership-rule.delete'),
  'GET /api/v1/orgs/:org/audit': org('admin'),

  'GET /api/v1/repos/:repo': repo('viewer'),
  'PATCH /api/v1/repos/:repo': repo('admin', 'repo.update'),
  'DELETE /api/v1/repos/:repo': repo('admin', 'repo.delete'),
  'POST /api/v1/repos/:repo/rotate-key': repo('admin', 'repo.rotate-key'),
  'POST /api/v1/repos/:repo/rotate-ssh-key': repo('admin', 'repo.rotate-ssh-key'),
  'GET /api/v1/repos/:repo/branches': repo('viewer'),
  'GET /api/v1/repos/:repo/branches/:branch': repo('viewer'),
  'PUT /api/v1/repos/:repo/branches/:branch': repo('maintainer', 'branch.update'),
  'GET /api/v1/repos/:repo/secrets': repo('admin'),
  'PUT /api/v1/repos/:repo/secrets/:name': repo('admin', 'secret.set'),
  'DELETE /api/v1/repos/:repo/secrets/:name': repo('admin', 'secret.delete'),
  'GET /api/v1/orgs/:org/connections': org('admin'),
  'POST /api/v1/orgs/:org/connections': org('admin', 'connection.create'),
  'DELETE /api/v1/orgs/:org/connections/:connection': org('admin', 'connection.delete'),
  'PUT /api/v1/orgs/:org/connections/:connection/token': org('admin', 'connection.token'),
  'GET /api/v1/orgs/:org/connections/:connection/repos': org('admin'),
  'POST /api/v1/orgs/:org/connections/:connection/repos': org('admin', 'repo.activate'),
  'GET /api/v1/repos/:repo/connection': repo('admin'),
  'POST /api/v1/repos/:repo/connection/repair': repo('admin', 'repo.repair'),
  'DELETE /api/v1/repos/:repo/connection': repo('admin', 'repo.deactivate'),
  'POST /api/v1/orgs/:org/github-apps/manifest': org('admin'),
  'POST /api/v1/orgs/:org/github-apps': org('admin', 'github_app.create'),
  'GET /api/v1/orgs/:org/github-apps': org('admin'),
  'GET /api/v1/orgs/:org/github-apps/:app': org('admin'),
  'DELETE /api/v1/orgs/:org/github-apps/:app': org('admin', 'github_app.delete'),
  'POST /api/v1/orgs/:org/github-apps/:app/repos': org('admin', 'repo.activate'),
  'GET /api/v1/repos/:repo/github-app': repo('admin'),
  'DELETE /api/v1/repos/:repo/github-app': repo('admin', 'repo.deactivate'),
  'GET /api/v1/repos/:repo/registries': repo('admin'),
  'PUT /api/v1/repos/:repo/registries/:host': repo('admin', 'registry.set'),
  'DELETE /api/v1/repos/:repo/registries/:host': repo('admin', 'registry.delete'),
  'GET /api/v1/repos/:repo/statuses': repo('viewer'),
  'GET /api/v1/repos/:repo/suites': repo('viewer'),
  'POST /api/v1/repos/:repo/suites': repo('maintainer', 'suite.create'),
  'PATCH /api/v1/repos/:repo/suites/:suite': repo('maintainer', 'suite.update'),
  'DELETE /api/v1/repos/:repo/suites/:suite': repo('maintainer', 'suite.delete'),
  'GET /api/v1/repos/:repo/suites/:suite/insights': repo('viewer'),
  'GET /api/v1/repos/:repo/suites/:suite/history': repo('viewer'),
  'GET /api/v1/repos/:repo/suites/:suite/muted': repo('viewer'),
  'PUT /api/v1/repos/:repo/suites/:suite/muted': repo('maintainer', 'test.mute'),
  'DELETE /api/v1/repos/:repo/suites/:suite/muted': repo('maintainer', 'test.unmute'),

  'GET /api/v1/webhooks/:id': webhook('admin'),
  'PATCH /api/v1/webhooks/:id': webhook('admin', 'webhook.update'),
  'DELETE /api/v1/webhooks/:id': webhook('admin', 'webhook.delete'),
  'POST /api/v1/webhooks/:id/ping': webhook('admin', 'webhook.ping'),
  'POST /api/v1/webhooks/:id/preview': webhook('admin'),
  'POST /api/v1/webhooks/:id/rotate-secret': webhook('admin', 'webhook.rotate-secret'),
  'GET /api/v1/webhooks/:id/deliveries': webhook('admin'),
  'GET /api/v1/deliveries/:id': delivery('admin'),
  'POST /api/v1/deliveries/:id/redeliver': delivery('admin', 'delivery.redeliver'),

  'GET /api/v1/sessions': signedIn,
  'GET /api/v1/sessions/:session': session('viewer'),
  'GET /api/v1/sessions/:session/artifacts': session('viewer'),
  'GET /api/v1/sessions/:session/cases': session('viewer'),
  'GET /api/v1/sessions/:session/output': session('viewer'),
  'POST /api/v1/sessions/:session/stop': session('maintainer', 'session.stop'),
  'POST /api/v1/sessions/:session/rebuild': session('maintainer', 'session.rebuild'),

  'GET /api/v1/runners': installation(),
  'GET /api/v1/runner-tokens': installation(),
  'POST /api/v1/runner-tokens': installation('runner-token.create'),
  'DELETE /api/v1/runner-tokens/:id': installation('runner-token.revoke'),
};

// The web pages name a repository and a build `:id`.
const webRepo = on('repo', 'id');
const build = on('session', 'id');

const WEB: Record<string, Rule> = {
  'GET /sign-in': { ...open('the sign-in page'), knowsWho: true },
  'POST /sign-in': open('signing in with the admin token'),
  'GET /auth/:provider': open('signing in through an identity provider'),
  'GET /auth/:provider/callback': open('the identity provider’s answer'),
  'POST /sign-out': open('signing out needs no sign-in'),
  'POST /sign-out-everywhere': signedIn,
  'GET /assets/*': open('the pages’ scripts'),

  'GET /': signedIn,
  'GET /builds/:id': build('viewer'),
  'GET /builds/:id/live': build('viewer'),
  'GET /builds/:id/output': build('viewer'),
  'POST /builds/:id/stop': build('maintainer', 'session.stop'),
  'POST /builds/:id/rebuild': build('maintainer', 'session.rebuild'),
  'POST /builds/:id/mute': build('maintainer', 'test.mute'),

  'GET /orgs': signedIn,
  'POST /orgs': installation('org.create'),
  'POST /orgs/:org/delete': org('admin', 'org.delete'),
  'POST /orgs/:org/repos': org('admin', 'repo.create'),
  'GET /orgs/:org/webhooks': org('admin'),
  'POST /orgs/:org/webhooks': org('admin', 'webhook.create'),
  'GET /orgs/:org/members': org('viewer'),
  'POST /orgs/:org/members': org('admin', 'invitation.create'),
  'POST /orgs/:org/members/:user': org('admin', 'member.set'),
  'POST /orgs/:org/members/:user/remove': org('admin', 'member.remove'),
  'POST /orgs/:org/invitations/:id/delete': org('admin', 'invitation.delete'),
  'POST /orgs/:org/membership-rules': org('admin', 'membership-rule.create'),
  'POST /orgs/:org/membership-rules/:id/delete': org('admin', 'membership-rule.delete'),
  'GET /orgs/:org/audit': org('admin'),
  'GET /orgs/:org/connections': org('admin'),
  'POST /orgs/:org/connections': org('admin', 'connection.create'),
  'POST /orgs/:org/connections/:connection/delete': org('admin', 'connection.delete'),
  'POST /orgs/:org/connections/:connection/token': org('admin', 'connection.token'),
  'GET /orgs/:org/connections/:connection': org('admin'),
  'POST /orgs/:org/connections/:connection/repos': org('admin', 'repo.activate'),
  'POST /orgs/:org/github-apps/new': org('admin'),
  'GET /orgs/:org/github-apps/created': org('admin', 'github_app.create'),
  'GET /orgs/:org/github-apps/:app': org('admin'),
  'POST /orgs/:org/github-apps/:app/repos': org('admin', 'repo.activate'),
  'POST /orgs/:org/github-apps/:app/delete': org('admin', 'github_app.delete'),

  'GET /tokens': signedIn,
  'POST /tokens': { need: 'signed-in', audit: 'token.create' },
  'POST /tokens/:id/revoke': { need: 'signed-in', audit: 'token.revoke' },

  // A repository's CI Setup page shows its trigger URL, whose key is a credential: maintainers up.
  'GET /repos/:id': webRepo('maintainer'),
  'GET /repos/:id/branches': webRepo('viewer'),
  'GET /repos/:id/suites/:suite': webRepo('viewer'),
  'POST /repos/:id/suites/:suite/unmute': webRepo('maintainer', 'test.unmute'),
  'POST /repos/:id/branches/:branch': webRepo('maintainer', 'branch.update'),
  'POST /repos/:id/suites': webRepo('maintainer', 'suite.create'),
  'POST /repos/:id/suites/:suite': webRepo('maintainer', 'suite.update'),
  'POST /repos/:id/suites/:suite/delete': webRepo('maintainer', 'suite.delete'),
  'POST /repos/:id/settings': webRepo('admin', 'repo.update'),
  'POST /repos/:id/commit-status': webRepo('admin', 'repo.update'),
  'POST /repos/:id/known-hosts': webRepo('admin', 'repo.update'),
  'POST /repos/:id/webhook-secret': webRepo('admin', 'repo.update'),
  'POST /repos/:id/rotate-key': webRepo('admin', 'repo.rotate-key'),
  'POST /repos/:id/rotate-ssh-key': webRepo('admin', 'repo.rotate-ssh-key'),
  'POST /repos/:id/secrets': webRepo('admin', 'secret.set'),
  'POST /repos/:id/secrets/:name/delete': webRepo('admin', 'secret.delete'),
  'POST /repos/:id/registries': webRepo('admin', 'registry.set'),
  'POST /repos/:id/registries/:host/delete': webRepo('admin', 'registry.delete'),
  'POST /repos/:id/delete': webRepo('admin', 'repo.delete'),
  'POST /repos/:id/connection/repair': webRepo('admin', 'repo.repair'),
  'POST /repos/:id/connection/deactivate': webRepo('admin', 'repo.deactivate'),
  'POST /repos/:id/github-app/deactivate': webRepo('admin', 'repo.deactivate'),

  'GET /webhooks/:id': webhook('admin'),
  'POST /webhooks/:id': webhook('admin', 'webhook.update'),
  'POST /webhooks/:id/delete': webhook('admin', 'webhook.delete'),
  'POST /webhooks/:id/ping': webhook('admin', 'webhook.ping'),
  'POST /webhooks/:id/preview': webhook('admin'),
  'POST /webhooks/:id/rotate-secret': webhook('admin', 'webhook.rotate-secret'),
  'GET /webhooks/:id/deliveries': webhook('admin'),
  'GET /deliveries/:id': delivery('admin'),
  'POST /deliveries/:id/redeliver': delivery('admin', 'delivery.redeliver'),

  'GET /runners': installation(),
  'POST /runner-tokens': installation('runner-token.create'),
  'POST /runner-tokens/:id/revoke': installation('runner-token.revoke'),
};

/** Every rule, by `METHOD /path` as the routes are registered (`*` at the end: that prefix, `ANY`: every method). */
export const RULES: ReadonlyMap<string, AccessRule> = new Map<string, AccessRule>([
  ...Object.entries(API).map(([route, rule]): [string, AccessRule] => [route, { ...rule, surface: 'api' }]),
  ...Object.entries(WEB).map(([route, rule]): [string, AccessRule] => [route, { ...rule, surface: 'web' }]),
]);

/** The rule of a route (HEAD is GET's), or undefined when the table has none. */
export function ruleFor(method: string, url: string): AccessRule | undefined {
  const m = method === 'HEAD' ? 'GET' : method;
  const exact = RULES.get(`${m} ${url}`);
  if (exact) return exact;
  for (const [key, rule] of RULES) {
    const [ruleMethod, pattern] = key.split(' ') as [string, string];
    if ((ruleMethod === m || ruleMethod === 'ANY') && pattern.endsWith('*') && url.startsWith(pattern.slice(0, -1))) return rule;
  }
  return undefined;
}

import type { ChangesetKind, Scm, TriggerKind } from '../core/types';

/**
 * The one shape every trigger format is turned into (`POST /1/<provider>/<KEY>`: the generic
 * formats of `builds` and every hosting provider's hook). Pure data: event.ts maps it onto a
 * TriggerEvent and the commit-selection rules read it.
 */

/**
 * Pull-request actions in one vocabulary, whatever the provider calls them, so the rules never
 * need to know that Gitea says `synchronized` where GitHub says `synchronize`.
 * - `updated`: the source branch got new commits (GitHub `synchronize`, Gitea/Gogs
 *   `synchronized`, GitLab `update` with `oldrev`, Bitbucket `pullrequest:updated`, Bitbucket
 *   Server `pr:from_ref_updated`, a Gerrit patch set after the first).
 * - `closed`: closed without merging (declined, rejected); `merged`: closed by merging.
 */
export type PullRequestAction = 'opened' | 'updated' | 'reopened' | 'closed' | 'merged' | 'assigned' | 'labeled';

export interface ProviderCommit {
  id: string;
  message: string;
  /** The author's email address when the payload has one, else their name, else "". */
  author: string;
}

export interface ProviderPullRequest {
  /** The number people see (GitHub/Gitea/Gogs `number`, GitLab `iid`, Gerrit change number). */
  id: string;
  /** The pull request's web page, for the report page. */
  url?: string;
  action: PullRequestAction;
  /** The provider's own word for the action, for the record (`synchronize`, `pr:merged`, ...). */
  providerAction: string;
  /** The branch the pull request wants to merge into, when the payload says. */
  targetBranch: string | null;
  /** `changeset.kind` of the generic trigger (spec §2). */
  changesetKind: ChangesetKind;
  /**
   * The payload shows the source branch is in this very repository, not a fork (same
   * repository id or full name on both sides). False when it does not say: untrusted.
   */
  sameRepository: boolean;
}

/**
 * What a trigger may ask of the build beyond the commit: the generic format's fields (spec §2).
 * Provider hooks ask none of it; absent fields are the defaults (force false, the tail of the
 * queue, no env, the `default` profile, the repository's queue).
 */
export interface BuildOptions {
  force?: boolean;
  queuePosition?: 'tail' | 'head';
  profileName?: string;
  /** Every test file, over a profile's selection of affected ones (issue 40). */
  full?: boolean;
  /** Fetched besides `ref` (a pull request's private ref is added for providers). */
  refspec?: string[];
  env?: Record<string, string>;
  queue?: string;
  /** The changeset as the sender names it; provider hooks give `pullRequest` instead. */
  changeset?: { kind: ChangesetKind; id?: string; url?: string };
}

export interface ProviderTrigger {
  /**
   * The provider's own name of the event (`push`, `Merge Request Hook`, `repo:push`, ...);
   * absent for the generic format, which has no events.
   */
  event?: string;
  /**
   * Absent when the format does not say (generic): then it is read as `pull-request` with a
   * `changeset`, else `push` (core/selection `triggerKind`).
   */
  kind?: TriggerKind;
  /**
   * Branch the commits live on: for a pull request its source branch, for a tag the branch the
   * provider says it was cut from. When the payload names none, `?branch=` (spec §4); else null.
   */
  branch: string | null;
  /** Commit to build; null when the payload names none (build the tip of `ref`/`branch`). */
  head: string | null;
  /**
   * Full ref a checkout can fetch: `refs/heads/x`, `refs/tags/v1`, a provider's private
   * pull-request ref (`refs/pull/7/head`, `refs/merge-requests/7/head`,
   * `refs/pull-requests/7/from`, `refs/changes/34/1234/2`); for the generic format whatever
   * the sender names. Null when there is none (Mercurial, Bitbucket Cloud pull requests).
   */
  ref: string | null;
  scm: Scm;
  /** Oldest first, the head commit last when the payload lists it. Often incomplete (providers cap it). */
  commits: ProviderCommit[];
  /** Present exactly when `kind` is `pull-request`. */
  pullRequest?: ProviderPullRequest;
  /** The generic format only. */
  options?: BuildOptions;
}

export interface ProviderInput {
  /** Request headers, names in lower case. */
  headers: Readonly<Record<string, string | undefined>>;
  /**
   * The parsed body (providers/parse.ts): JSON, or the form object of a form-encoded
   * delivery (GitHub, Gitea and Gogs can send `payload=<json>`; it is unwrapped here).
   * Undefined when the request had none.
   */
  body: unknown;
  /**
   * How the body was sent: `json` (the default) or `form`, whose fields are strings and a field
   * sent more than once the array of its values (for most formats a 400).
   */
  format?: 'json' | 'form';
  /** `?branch=` (spec §4): the branch when the payload has none. As sent: an array when repeated. */
  query: { branch?: unknown };
  /** The addressed repository's SCM, for formats that leave it to the repository (generic). */
  repoScm?: Scm;
}

/**
 * - triggers: one per ref the delivery changed. Most providers send one ref per delivery;
 *   Bitbucket (Cloud and Server) send every ref of a push in one, e.g. a branch and the tag
 *   pushed with it. Never empty.
 * - ignore: a delivery that is fine but asks for nothing (GitHub `ping`, a pull-request action
 *   we don't build on): answer 200, build nothing.
 * - 422: the hook is misconfigured (wrong provider path, an event we don't act on; spec §7).
 * - 400: the payload is malformed; `field` names what is wrong (`pull_request.head.sha`,
 *   `headers.x-github-event`, `query.branch`, `body`).
 */
export type ProviderResult =
  | { ok: true; triggers: [ProviderTrigger, ...ProviderTrigger[]] }
  | { ok: true; ignore: string }
  | { ok: false; status: 400 | 422; field: string; message: string };

export interface ProviderAdapter {
  /** The `<provider>` path segment. */
  name: string;
  /** Pure, no I/O. Any input gets a result: malformed or unexpected payloads are a 400/422, not an exception. */
  parse(input: ProviderInput): ProviderResult;
}

/**
 * What Sluice asks of a hosting site's API to connect repositories (issue 38), whatever the
 * site: who the token belongs to, which repositories that account administers, and the webhook
 * and deploy key Sluice keeps on each. One folder a site implements it (github/, gitlab/,
 * gitea/, bitbucket/, stash/).
 */
import type { Dispatcher } from 'undici';
import type { StatusProvider } from '../core/commitStatus';
import type { Cidr } from '../ip/ranges';

export const SITES = ['github', 'gitlab', 'gitea', 'bitbucket', 'stash'] as const;
export type Site = (typeof SITES)[number];

/** How a client reaches its site. */
export interface SiteClientOptions {
  /** The API's root (Bitbucket Server: the server's own address). */
  apiUrl: string;
  token: string;
  /** SLUICE_WEBHOOK_ALLOW: private ranges a self-hosted site may be on. */
  allow: readonly Cidr[];
  /** When every request must have been answered (epoch ms): a look that must not keep a page waiting. */
  deadline?: number;
  /** Tests: replaces the guarded Agent. */
  dispatcher?: Dispatcher;
}

/** A repository as a site lists it. */
export interface SiteRepo {
  /** The site's stable id: renames and transfers keep it. */
  id: string;
  /** `owner/name` (GitLab: the whole namespace path), as the site names it today. */
  fullName: string;
  /** Where Sluice pulls from with the repository's deploy key. */
  sshUrl: string;
  webUrl: string;
  defaultBranch: string | null;
  /** Whether the token's account may manage the repository's webhooks and deploy keys, as the site says. */
  admin: boolean;
}

export interface SiteHook {
  id: string;
  url: string;
}

export interface SiteDeployKey {
  id: string;
  /** The public key, `ssh-ed25519 AAAA…` (the site may drop the comment). */
  key: string;
}

/** The site's own word on its last attempt to deliver the hook, where it keeps one. */
export interface HookDelivery {
  at: Date;
  /** The status Sluice answered; null when the site did not reach it. */
  status: number | null;
  ok: boolean;
}

export interface SiteClient {
  readonly site: Site;
  /** The login of the account the token belongs to; a SiteError (401) for a token the site refuses. */
  account(): Promise<string>;
  /** The repositories the account administers (at most a few thousand: the site's pages, bounded). */
  listRepos(): Promise<SiteRepo[]>;
  /** One repository by its stable id; null when it is gone or the account no longer sees it. */
  repo(id: string): Promise<SiteRepo | null>;
  hooks(repo: SiteRepo): Promise<SiteHook[]>;
  /** Makes a webhook for pushes, tags and pull (merge) requests, signed with `secret`; its id. */
  createHook(repo: SiteRepo, hook: { url: string; secret: string }): Promise<string>;
  /** Deletes a webhook; one already gone is not an error. */
  deleteHook(repo: SiteRepo, id: string): Promise<void>;
  deployKeys(repo: SiteRepo): Promise<SiteDeployKey[]>;
  /** Adds a read-only deploy key; its id. */
  addDeployKey(repo: SiteRepo, key: { title: string; key: string }): Promise<string>;
  /** Deletes a deploy key; one already gone is not an error. */
  deleteDeployKey(repo: SiteRepo, id: string): Promise<void>;
  /** The site's last delivery of the hook to Sluice; null when it has delivered none, undefined where the site keeps no such log. */
  lastDelivery(repo: SiteRepo, hookId: string): Promise<HookDelivery | null | undefined>;
}

/** How a site's connected repositories trigger Sluice and hear back from it. */
export interface SiteWiring {
  /** The trigger path's provider (`/1/<provider>/<key>`): it reads the site's hook payloads. */
  triggerProvider: string;
  /** The commit status provider, and what names the repository to it. */
  statusProvider: StatusProvider;
  statusRepo(repo: SiteRepo): string;
}

/** A site's API refused or failed a request: the status it answered (null: it did not answer) and its message. */
export class SiteError extends Error {
  constructor(
    readonly status: number | null,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The hosting sites Sluice connects to (issue 38), one folder each: a client of the site's API
 * and how its repositories are wired to Sluice (which trigger path reads its hooks, which
 * commit status provider answers it). A new site is one folder and one line in each table.
 */
import { bitbucketClient, bitbucketWiring } from './bitbucket';
import { giteaClient, giteaWiring } from './gitea';
import { githubClient, githubWiring } from './github';
import { gitlabClient, gitlabWiring } from './gitlab';
import { stashClient, stashWiring } from './stash';
import type { Site, SiteClient, SiteClientOptions, SiteWiring } from './types';

const CLIENTS: Record<Site, (o: SiteClientOptions) => SiteClient> = {
  github: githubClient,
  gitlab: gitlabClient,
  gitea: giteaClient,
  bitbucket: bitbucketClient,
  stash: stashClient,
};

const WIRING: Record<Site, SiteWiring> = {
  github: githubWiring,
  gitlab: gitlabWiring,
  gitea: giteaWiring,
  bitbucket: bitbucketWiring,
  stash: stashWiring,
};

export const siteClient = (site: Site, o: SiteClientOptions): SiteClient => CLIENTS[site](o);
export const siteWiring = (site: Site): SiteWiring => WIRING[site];

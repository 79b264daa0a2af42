import { bitbucket } from './bitbucket';
import { gerrit } from './gerrit';
import { generic } from './generic';
import { gitea } from './gitea';
import { github } from './github';
import { gitlab } from './gitlab';
import { gogs } from './gogs';
import { stash } from './stash';
import type { ProviderAdapter } from './types';

/**
 * The adapters of `POST /1/<provider>/<KEY>` (spec §4), by path segment: `builds` for the
 * generic formats (JSON, form-encoded, Mercurial changegroup), then the hosting providers.
 * Adding one is a folder beside these and a line here.
 */
export const providers: Readonly<Record<string, ProviderAdapter>> = Object.freeze({
  builds: generic,
  bitbucket,
  gerrit,
  gitea,
  github,
  gitlab,
  gogs,
  stash,
});

/** The adapter for a path segment, or undefined (answer 404). Own keys only: `constructor` is no provider. */
export function getProvider(name: string): ProviderAdapter | undefined {
  return Object.hasOwn(providers, name) ? providers[name] : undefined;
}

export { parseDelivery, type Delivery, type DeliveryResult } from './parse';
export type * from './types';

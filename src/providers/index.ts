import { bitbucket } from './bitbucket';
import { gerrit } from './gerrit';
import { gitea } from './gitea';
import { github } from './github';
import { gitlab } from './gitlab';
import { gogs } from './gogs';
import { stash } from './stash';
import type { ProviderAdapter } from './types';

/**
 * The hosting providers of `POST /1/<provider>/<KEY>` (spec §4), by path segment. Adding one
 * is a folder beside these and a line here. The generic formats of `/1/builds/<KEY>` are not
 * here: they live in core/trigger.
 */
export const providers: Readonly<Record<string, ProviderAdapter>> = Object.freeze({
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

export type * from './types';

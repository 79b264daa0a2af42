/**
 * The configured identity providers (SLUICE_SIGN_IN_PROVIDERS), each with its client, and how a
 * signed-in browser's session is renewed: at its `refresh_at` the provider is asked again; a
 * "no" ends the session, a provider that does not answer leaves it be (it is asked again a
 * minute later: api/access/principal.ts).
 */
import type { Pool } from 'pg';
import { DEFAULT_SIGN_IN_REFRESH_MS, type Config, type SignInProvider } from '../../config';
import { seal, unseal } from '../../crypto/sealed';
import { refreshedWebSession } from '../../db/webSessions';
import type { RefreshSession } from '../access/principal';
import { githubClient } from './github';
import { oidcClient } from './oidc';
import type { SignInClient } from './types';

export interface SignInOption {
  provider: SignInProvider;
  client: SignInClient;
}

export function signInOptions(config: Config): Map<string, SignInOption> {
  return new Map(
    (config.signInProviders ?? []).map((provider) => [provider.id, { provider, client: provider.kind === 'oidc' ? oidcClient(provider) : githubClient(provider) }]),
  );
}

/** The providers as the pages offer them: a button (or a rule's choice) each. */
export const signInChoices = (config: Config): { id: string; name: string }[] => (config.signInProviders ?? []).map(({ id, name }) => ({ id, name }));

/** How long a signed-in person goes before their provider is asked again. */
export const refreshEvery = (config: Config): number => config.signInRefreshMs ?? DEFAULT_SIGN_IN_REFRESH_MS;

/** Where a provider sends the browser back to. */
export const callbackUrl = (config: Config, providerId: string): string => `${config.baseUrl}/auth/${providerId}/callback`;

export function renewSessions(pool: Pool, config: Config, options: Map<string, SignInOption>, log: (err: unknown) => void): RefreshSession {
  const every = refreshEvery(config);
  return async (session, idHash) => {
    const option = session.provider ? options.get(session.provider) : undefined;
    // A provider no longer configured cannot vouch for anyone.
    if (!option) return false;
    // Nothing to ask with (an OIDC provider not asked for offline_access): the session lasts its time.
    if (!session.refresh_token) {
      await refreshedWebSession(pool, idHash, null, new Date(Date.now() + every));
      return true;
    }
    try {
      const renewed = await option.client.renew(unseal(config.secretKey, session.refresh_token));
      if (!renewed) return false;
      await refreshedWebSession(pool, idHash, seal(config.secretKey, renewed.renewal), new Date(Date.now() + every));
      return true;
    } catch (err) {
      log(err);
      return true;
    }
  };
}

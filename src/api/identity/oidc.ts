/**
 * Signing in with OpenID Connect (authorization code with PKCE, state and nonce) through
 * openid-client: the provider is found by its issuer's discovery document, once, when the first
 * person signs in. Plain-HTTP issuers are accepted on loopback only (a provider on the same
 * machine); anywhere else the issuer must be HTTPS.
 */
import * as oidc from 'openid-client';
import type { SignInProvider } from '../../config';
import { isLoopbackHost } from '../../core/names';
import { SignInError, type Identity, type SignInClient } from './types';

type OidcProvider = Extract<SignInProvider, { kind: 'oidc' }>;

const asString = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);

export function oidcClient(p: OidcProvider): SignInClient {
  let found: Promise<oidc.Configuration> | undefined;
  const configuration = (): Promise<oidc.Configuration> => {
    const issuer = new URL(p.issuer);
    const insecure = issuer.protocol === 'http:' && isLoopbackHost(issuer.hostname);
    found ??= oidc.discovery(issuer, p.clientId, p.clientSecret, oidc.ClientSecretBasic(p.clientSecret), insecure ? { execute: [oidc.allowInsecureRequests] } : undefined);
    // A provider that did not answer is asked again at the next sign-in.
    found.catch(() => (found = undefined));
    return found;
  };
  const offline = p.scopes.includes('offline_access');

  return {
    async start(redirectUri) {
      const config = await configuration();
      const verifier = oidc.randomPKCECodeVerifier();
      const state = oidc.randomState();
      const nonce = oidc.randomNonce();
      const url = oidc.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        scope: p.scopes.join(' '),
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state,
        nonce,
        // Providers issue a refresh token for offline_access only when consent is asked (OIDC Core 11).
        ...(offline ? { prompt: 'consent' } : {}),
      });
      return { url: url.href, pending: { state, verifier, nonce } };
    },

    async finish(callbackUrl, pending) {
      const config = await configuration();
      let tokens;
      try {
        tokens = await oidc.authorizationCodeGrant(config, callbackUrl, { pkceCodeVerifier: pending.verifier, expectedState: pending.state, expectedNonce: pending.nonce, idTokenExpected: true });
      } catch (err) {
        throw new SignInError(`${p.name} did not sign you in: ${(err as Error).message}`);
      }
      const claims = tokens.claims()!;
      // The ID token may carry only `sub`: the rest comes from userinfo, for the same subject.
      const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub).catch(() => ({}) as oidc.UserInfoResponse);
      const all: Record<string, unknown> = { ...claims, ...info };
      const email = asString(all.email);
      if (!email) throw new SignInError(`${p.name} gave no e-mail address: Sluice needs the "email" scope`);
      const groups = all[p.groupsClaim];
      return {
        subject: claims.sub,
        name: asString(all.name) ?? asString(all.preferred_username) ?? email,
        email,
        emailVerified: all.email_verified === true,
        groups: Array.isArray(groups) ? groups.filter((g): g is string => typeof g === 'string') : [],
        renewal: tokens.refresh_token,
      } satisfies Identity;
    },

    async renew(renewal) {
      const config = await configuration();
      try {
        const tokens = await oidc.refreshTokenGrant(config, renewal);
        return { renewal: tokens.refresh_token ?? renewal };
      } catch (err) {
        // The provider's own "no" (the person removed, the grant revoked); anything else is it not answering.
        if (err instanceof oidc.ResponseBodyError && err.error === 'invalid_grant') return null;
        throw err;
      }
    },
  };
}

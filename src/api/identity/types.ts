/**
 * What Sluice needs of an identity provider (issue 25), whatever protocol it speaks: a URL to
 * send the browser to, who came back, and later whether they are still the provider's.
 */

/** A person as their provider vouches for them. */
export interface Identity {
  /** The provider's own stable id of them (OIDC `sub`, GitHub's numeric id). */
  subject: string;
  name: string;
  email: string;
  /** Whether the provider checked the address: only a verified one takes invitations or matches a domain. */
  emailVerified: boolean;
  /** Groups the provider says they are in (OIDC's groups claim; GitHub: organizations and `org/team`s). */
  groups: string[];
  /** What asks the provider again later (a refresh token; GitHub: the access token). */
  renewal?: string;
}

/** What the browser carries between leaving for the provider and coming back (a signed cookie). */
export interface Pending {
  state: string;
  verifier: string;
  nonce?: string;
}

export interface SignInClient {
  /** Where to send the browser, and what to keep until it comes back. */
  start(redirectUri: string): Promise<{ url: string; pending: Pending }>;
  /** The person the provider's answer (the callback URL, with its code) names. Throws when it is no good. */
  finish(callbackUrl: URL, pending: Pending, redirectUri: string): Promise<Identity>;
  /**
   * Whether the person is still the provider's: the new renewal (or the same) when yes, null
   * when the provider says no. Throws when the provider does not answer (the session goes on).
   */
  renew(renewal: string): Promise<{ renewal: string } | null>;
}

/** A sign-in the provider refused or that failed its checks: shown on the sign-in page. */
export class SignInError extends Error {}

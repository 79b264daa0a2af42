/**
 * People for tests of who may do what (issue 25): a user with memberships, their own API token
 * (made as POST /api/v1/tokens makes one) and a signed-in browser's cookie (as a sign-in leaves
 * it), written straight to the database the API under test reads.
 */
import { sign } from '@fastify/cookie';
import type { Pool } from 'pg';
import type { Role } from '../../src/core/access';
import type { Config } from '../../src/config';
import { newSessionId, SESSION_COOKIE } from '../../src/api/access/principal';
import { newApiToken } from '../../src/app/tokens';
import { keyHash } from '../../src/crypto/sealed';
import { cookieSecret, SIGN_IN_TTL_MS } from '../../src/api/web/signIn';
import { insertApiToken } from '../../src/db/apiTokens';
import { insertUser, setMember, type UserRow } from '../../src/db/people';
import { insertWebSession } from '../../src/db/webSessions';

export interface Person {
  user: UserRow;
  /** `Authorization` of their own API token. */
  bearer: string;
  token: string;
  /** `Cookie` of a browser they are signed in with. */
  cookie: string;
}

/** Signs `value` as the web pages' cookie plugin does. */
export const signedCookie = (config: Config, value: string): string => `${SESSION_COOKIE}=${encodeURIComponent(sign(value, cookieSecret(config)))}`;

export async function addPerson(
  pool: Pool,
  config: Config,
  p: { name: string; email: string; emailVerified?: boolean; roles?: Record<number, Role>; installationAdmin?: boolean; token?: { readOnly?: boolean; orgId?: number | null } },
): Promise<Person> {
  const user = await insertUser(pool, { name: p.name, email: p.email, emailVerified: p.emailVerified ?? true, installationAdmin: p.installationAdmin ?? false });
  for (const [orgId, role] of Object.entries(p.roles ?? {})) await setMember(pool, Number(orgId), user.id, role, 'invitation');
  const token = newApiToken();
  await insertApiToken(pool, {
    userId: user.id,
    name: 'tests',
    hash: keyHash(token),
    readOnly: p.token?.readOnly ?? false,
    orgId: p.token?.orgId ?? null,
    expiresAt: new Date(Date.now() + 366 * 86_400_000),
  });
  const session = newSessionId();
  await insertWebSession(pool, {
    idHash: keyHash(session),
    userId: user.id,
    name: user.name,
    provider: null,
    refreshToken: null,
    refreshAt: null,
    expiresAt: new Date(Date.now() + SIGN_IN_TTL_MS),
    ip: '127.0.0.1',
  });
  return { user, bearer: `Bearer ${token}`, token, cookie: signedCookie(config, session) };
}

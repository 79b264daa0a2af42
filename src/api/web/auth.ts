/**
 * Signing in through an identity provider (issue 25): `/auth/:provider` sends the browser to the
 * provider with what the answer must match (state, PKCE verifier, nonce) kept in a short-lived
 * signed cookie; `/auth/:provider/callback` checks the answer, admits the person
 * (identity/admit.ts) and starts their session. A refusal is shown on the sign-in page, with
 * the reason.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import { seal } from '../../crypto/sealed';
import { admit } from '../identity/admit';
import { callbackUrl, refreshEvery, signInChoices, type SignInOption } from '../identity/providers';
import { SignInError, type Pending } from '../identity/types';
import { page, safeNext, type WebScope } from './pages';
import { cookieOptions, signIn } from './signIn';

const AUTH_COOKIE = 'sluice_auth';
/** How long a browser may take at its provider. */
const AUTH_TTL_S = 10 * 60;

const Carried = z.object({ provider: z.string(), state: z.string(), verifier: z.string(), nonce: z.string().optional(), next: z.string() });

export function registerAuthPages(web: FastifyInstance, { deps }: WebScope, options: Map<string, SignInOption>): void {
  const { config, pool } = deps;
  // Path /auth only; Lax, because the provider's answer is a navigation from its site.
  const authCookie = { ...cookieOptions(config), path: '/auth', sameSite: 'lax' as const };
  const providers = signInChoices(config);
  const refused = (reply: FastifyReply, error: string, status: number, next = '/') =>
    page(reply, 'signIn', { title: 'Sign in', user: null, next, name: '', error, providers, tokenTried: false }, status);

  web.get<{ Params: { provider: string }; Querystring: { next?: string } }>('/auth/:provider', async (request, reply) => {
    const option = options.get(request.params.provider);
    const next = safeNext(request.query.next);
    if (!option) return refused(reply, `There is no sign-in provider “${request.params.provider}” here.`, 404, next);
    let started: { url: string; pending: Pending };
    try {
      started = await option.client.start(callbackUrl(config, option.provider.id));
    } catch (err) {
      request.log.warn({ err, provider: option.provider.id }, 'the identity provider did not answer');
      return refused(reply, `${option.provider.name} did not answer. Try again in a moment.`, 502, next);
    }
    const carried: z.infer<typeof Carried> = { provider: option.provider.id, ...started.pending, next };
    void reply.setCookie(AUTH_COOKIE, Buffer.from(JSON.stringify(carried)).toString('base64url'), { ...authCookie, maxAge: AUTH_TTL_S });
    return reply.code(303).header('location', started.url).send();
  });

  web.get<{ Params: { provider: string } }>('/auth/:provider/callback', async (request, reply) => {
    const option = options.get(request.params.provider);
    const raw = request.cookies[AUTH_COOKIE];
    void reply.clearCookie(AUTH_COOKIE, authCookie);
    const unsigned = raw ? request.unsignCookie(raw) : null;
    let carried: z.infer<typeof Carried> | undefined;
    try {
      carried = unsigned?.valid && unsigned.value ? Carried.parse(JSON.parse(Buffer.from(unsigned.value, 'base64url').toString('utf8'))) : undefined;
    } catch {
      carried = undefined;
    }
    if (!option || !carried || carried.provider !== option.provider.id) return refused(reply, 'This sign-in has expired or was started in another browser. Start again.', 400);
    const redirectUri = callbackUrl(config, option.provider.id);
    const answer = new URL(redirectUri);
    answer.search = new URL(request.url, 'http://answer').search;
    try {
      const who = await option.client.finish(answer, carried, redirectUri);
      const user = await admit(pool, option.provider.id, who);
      await signIn(request, reply, config, pool, {
        userId: user.id,
        name: user.name,
        provider: option.provider.id,
        refreshToken: who.renewal ? seal(config.secretKey, who.renewal) : undefined,
        refreshAt: new Date(Date.now() + refreshEvery(config)),
      });
      return reply.code(303).header('location', safeNext(carried.next)).send();
    } catch (err) {
      if (err instanceof SignInError) return refused(reply, err.message, 403, carried.next);
      request.log.warn({ err, provider: option.provider.id }, 'sign-in failed');
      return refused(reply, `${option.provider.name} did not answer. Try again in a moment.`, 502, carried.next);
    }
  });
}

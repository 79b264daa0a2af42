/**
 * The runners page (`/runners`, in the navigation): the runners up now, as
 * `GET /api/v1/runners` lists them, with how each isolates builds and whether it is busy; and
 * the runner tokens (`/api/v1/runner-tokens`): made here (the token shown once, in the answer of
 * the form that made it, with the command that starts a runner with it), listed with what their
 * runner last said, and revoked.
 */
import { parseId } from '../../app/errors';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { createRunnerToken, revokeRunnerToken, runnersUp, runnerTokenOrgs, runnerTokens } from '../../app/runners';
import type { SignedIn } from './signIn';
import { formFields, page, tryAction, type FormError, type WebScope } from './pages';

interface Shown {
  made?: { name: string; token: string };
  notice?: string;
  again?: { values: Record<string, string>; error: FormError };
}

export function registerRunnerPages(web: FastifyInstance, { deps, csrf, requireUser }: WebScope): void {
  const { pool, config } = deps;

  const runnersPage = async (reply: FastifyReply, user: SignedIn, shown: Shown = {}, status = 200) => {
    const [runners, tokens, orgs] = await Promise.all([runnersUp(pool), runnerTokens(pool), runnerTokenOrgs(pool)]);
    return page(
      reply,
      'runners',
      { title: 'Runners', section: 'runners', user, runners, tokens, orgs, apiUrl: config.baseUrl, buildQueue: config.buildQueue, ...shown },
      status,
    );
  };

  web.get<{ Querystring: { revoked?: string } }>('/runners', async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const revoked = request.query.revoked;
    return runnersPage(reply, user, revoked && /^[0-9]{1,15}$/.test(revoked) ? { notice: `Runner token #${revoked} revoked: its runner gets no more work, and the jobs it was running are tried again elsewhere.` } : {});
  });

  web.post('/runner-tokens', csrf, async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const values = formFields(request);
    const made = await tryAction(() => createRunnerToken(pool, { name: values.name ?? '', ...(values.org ? { org: values.org } : {}) }));
    if (!made.ok) return runnersPage(reply, user, { again: { values, error: made.error } }, made.status);
    return runnersPage(reply, user, { made: { name: made.value.row.name, token: made.value.token } });
  });

  web.post<{ Params: { id: string } }>('/runner-tokens/:id/revoke', csrf, async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const id = parseId(request.params.id, 'runner token');
    // A token already revoked (from another tab) is no error here: the form goes back to the list either way.
    await tryAction(() => revokeRunnerToken(pool, id));
    return reply.code(303).header('location', `/runners?revoked=${id}#runner-tokens`).send();
  });
}

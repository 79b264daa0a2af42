/**
 * The runners page (`/runners`, in the navigation): the runners up now, as
 * `GET /api/v1/runners` lists them, with how each isolates builds and whether it is busy.
 */
import type { FastifyInstance } from 'fastify';
import { listRunners } from '../../db/runners';
import { runnerView } from '../routes/admin/runners';
import { page, type WebScope } from './pages';

export function registerRunnerPages(web: FastifyInstance, { deps, requireUser }: WebScope): void {
  web.get('/runners', async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const runners = (await listRunners(deps.pool)).map(runnerView);
    return page(reply, 'runners', { title: 'Runners', section: 'runners', user, runners });
  });
}

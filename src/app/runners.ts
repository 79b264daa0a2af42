/**
 * Runners and runner tokens, as the JSON API and the web pages both decide about them: the
 * runners up now (they write their rows themselves: runner/run.ts, db/runners.ts), and the
 * tokens runners that hold no keys authenticate with (issue 23). A token is made for the
 * installation or for one organization's own runners, shown once (only its sha256 is kept),
 * listed with what its runner last said, and revoked: its runner's next call is refused, and the
 * jobs it was running fail at once, to be tried again on another runner.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { keyHash } from '../crypto/sealed';
import { findOrg, listOrgs, type OrgRow } from '../db/orgs';
import { listRunners, unisolatedRunners, type RunnerListRow, type UnisolatedRunner } from '../db/runners';
import { insertRunnerToken, listRunnerTokens, revokeRunnerToken as revokeRunnerTokenRow, type RunnerTokenRow } from '../db/runnerTokens';
import { uniqueViolation, type Db } from '../db/transaction';
import { AppError, conflict, notFound, validate } from './errors';
import { resourceName } from './fields';

export interface RunnerView {
  name: string;
  version: string;
  sandboxed: boolean;
  build_user: string | null;
  gaps: string[];
  started_at: string;
  last_seen_at: string;
  busy_lanes: number;
}

export const runnerView = (r: RunnerListRow): RunnerView => ({
  name: r.name,
  version: r.version,
  sandboxed: r.sandboxed,
  build_user: r.build_user,
  gaps: r.gaps,
  started_at: r.started_at.toISOString(),
  last_seen_at: r.last_seen_at.toISOString(),
  busy_lanes: r.busy_lanes,
});

/** The runners up now (seen in the last two minutes), busiest first. */
export async function runnersUp(db: Db): Promise<RunnerView[]> {
  return (await listRunners(db)).map(runnerView);
}

export const CreateRunnerToken = z
  .strictObject({
    name: resourceName,
    /** An organization's id or name: its runners take only its builds. Absent: the installation's. */
    org: z.union([z.string().min(1).max(100), z.number().int().positive()]).optional(),
  })
  .meta({ examples: [{ name: 'build-host-1' }, { name: 'acme-gpu', org: 'acme' }] });

export const RunnerToken = z.object({
  id: z.number().int(),
  name: z.string(),
  org: z.object({ id: z.number().int(), name: z.string().nullable() }).nullable(),
  created_at: z.iso.datetime(),
  revoked_at: z.iso.datetime().nullable(),
  last_seen_at: z.iso.datetime().nullable(),
  runner: z.string().nullable(),
  version: z.string().nullable(),
  queues: z.array(z.string()),
  busy: z.number().int().describe('jobs its runner is running now; 0 is idle'),
});

export type RunnerTokenView = z.output<typeof RunnerToken>;

/** What a runner token looks like: a prefix that says what it is (secret scanners key on it), then 256 random bits. */
export const newRunnerToken = (): string => `sluice_rt_${randomBytes(32).toString('base64url')}`;
/** How a runner token is kept and looked up (api/routes/runnerApi.ts reads a runner's with it). */
export const runnerTokenHash = keyHash;

export const runnerTokenView = (t: RunnerTokenRow): RunnerTokenView => ({
  id: t.id,
  name: t.name,
  org: t.org_id === null ? null : { id: t.org_id, name: t.org_name },
  created_at: t.created_at.toISOString(),
  revoked_at: t.revoked_at?.toISOString() ?? null,
  last_seen_at: t.last_seen_at?.toISOString() ?? null,
  runner: t.runner,
  version: t.version,
  queues: t.queues,
  busy: t.busy,
});

/** Every runner token, with what its runner last said. */
export async function runnerTokens(db: Db): Promise<RunnerTokenView[]> {
  return (await listRunnerTokens(db)).map(runnerTokenView);
}

/** The organizations a runner token may be for (their own runners). */
export const runnerTokenOrgs = (db: Db): Promise<OrgRow[]> => listOrgs(db);

/** Makes a token from a body of POST /runner-tokens; the row and the token (shown once). */
export async function createRunnerToken(db: Db, input: unknown): Promise<{ row: RunnerTokenRow; token: string }> {
  const body = validate(CreateRunnerToken, input);
  let orgId: number | null = null;
  if (body.org !== undefined) {
    const org = await findOrg(db, String(body.org));
    if (!org) throw new AppError('invalid', 'no such organization', 'org');
    orgId = org.id;
  }
  const token = newRunnerToken();
  try {
    return { row: await insertRunnerToken(db, { name: body.name, orgId, hash: runnerTokenHash(token) }), token };
  } catch (err) {
    if (uniqueViolation(err) !== undefined) throw conflict('name', 'a runner token with this name exists');
    throw err;
  }
}

/** Revokes a runner token: not found when there is none. */
export async function revokeRunnerToken(db: Db, id: number): Promise<void> {
  if (!(await revokeRunnerTokenRow(db, id))) throw notFound('runner token');
}

/** Runners up that run builds without isolation (SLUICE_SANDBOX=off): the pages warn installation administrators. */
export const runnersWithoutIsolation = (db: Db): Promise<UnisolatedRunner[]> => unisolatedRunners(db);

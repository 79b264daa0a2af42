/**
 * Repositories, as the JSON API and the web pages both decide about them: finding one by id or
 * `<org>/<name>`, and again after a change.
 */
import { notFound } from './errors';
import { findRepoById, findRepoByRef, type RepoRow } from '../db/repos';
import type { Db } from '../db/transaction';

/** The repository a `:repo` parameter names, or a 404. */
export async function loadRepo(db: Db, ref: string): Promise<RepoRow> {
  const repo = await findRepoByRef(db, ref);
  if (!repo) throw notFound('repository');
  return repo;
}

/** The repository again after a change: a 404 when a DELETE racing the request removed it meanwhile. */
export async function reloadRepo(db: Db, id: number): Promise<RepoRow> {
  const repo = await findRepoById(db, id);
  if (!repo) throw notFound('repository');
  return repo;
}

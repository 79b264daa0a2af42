/**
 * A PostgreSQL server of a test's own (initdb into a temporary directory, on a free loopback
 * port), for tests that stop the database and start it again: the shared server on 5432 serves
 * every other test file meanwhile. Real PostgreSQL, run as the `postgres` system user (it
 * refuses to run as root), with the same binaries as the shared one.
 */
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../src/temporal/devServer';

const run = promisify(execFile);

export interface PrivatePostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  url: string;
  port: number;
  /** Stops the server (fast shutdown: sessions are ended) and waits until it has. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops it for good and removes its files. */
  remove(): Promise<void>;
}

async function binDir(): Promise<string> {
  const versions = (await readdir('/usr/lib/postgresql')).sort((a, b) => Number(b) - Number(a));
  if (!versions[0]) throw new Error('no PostgreSQL under /usr/lib/postgresql');
  return `/usr/lib/postgresql/${versions[0]}/bin`;
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = await binDir();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sluice-pg-'));
  await chmod(dir, 0o777);
  const data = path.join(dir, 'data');
  const port = await freePort();
  const asPostgres = (cmd: string, args: string[]) => {
    const argv = [cmd, ...args];
    return os.userInfo().uid === 0 ? run('runuser', ['-u', 'postgres', '--', ...argv]) : run(argv[0]!, argv.slice(1));
  };
  await asPostgres(`${bin}/initdb`, ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
  const start = () => asPostgres(`${bin}/pg_ctl`, ['-D', data, '-o', opts, '-l', path.join(dir, 'log'), '-w', 'start']).then(() => undefined);
  const stop = () => asPostgres(`${bin}/pg_ctl`, ['-D', data, '-m', 'fast', '-w', 'stop']).then(() => undefined);
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    stop,
    start,
    async remove() {
      await stop().catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

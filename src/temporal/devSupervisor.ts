/**
 * `npm start` keeps its Temporal dev server up (issue 26): when the server exits for any reason
 * but our own stop (an out-of-memory kill, a crash), it is started again on the same port and
 * the same data file, after a pause that grows with each failed start (1 s to 30 s), each said
 * in the log. The roles reconnect by themselves (their clients and pollers retry), and the
 * workflows in flight go on from the history the data file kept.
 */
import { startDevServer, type DevServer, type DevServerOptions } from './devServer';

export interface SupervisedDevServer {
  address: string;
  uiUrl?: string;
  /** The server process now (a new one after each restart). */
  readonly pid: number;
  /** How many times it was started again. */
  readonly restarts: number;
  stop(): Promise<void>;
}

const FIRST_PAUSE_MS = 1_000;
const LONGEST_PAUSE_MS = 30_000;

export async function superviseDevServer(
  opts: DevServerOptions & { port: number },
  log: (line: string) => void,
  pauses = { firstMs: FIRST_PAUSE_MS, longestMs: LONGEST_PAUSE_MS },
): Promise<SupervisedDevServer> {
  let current: DevServer = await startDevServer(opts);
  let stopping = false;
  let restarts = 0;
  let wake: (() => void) | undefined;

  const watch = (server: DevServer): void => {
    void server.exited.then(async (why) => {
      if (stopping) return;
      let pauseMs = pauses.firstMs;
      log(`Temporal dev server ${why}; starting it again on the same data`);
      while (!stopping) {
        try {
          current = await startDevServer(opts);
          restarts += 1;
          if (stopping) {
            await current.stop();
            return;
          }
          log(`Temporal dev server running again (pid ${current.pid}); the roles reconnect by themselves`);
          watch(current);
          return;
        } catch (err) {
          log(`Temporal dev server did not start: ${(err as Error).message.split('\n')[0]}; trying again in ${pauseMs / 1000} s`);
        }
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, pauseMs);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        pauseMs = Math.min(pauseMs * 2, pauses.longestMs);
      }
    });
  };
  watch(current);

  return {
    address: current.address,
    uiUrl: current.uiUrl,
    get pid() {
      return current.pid;
    },
    get restarts() {
      return restarts;
    },
    async stop() {
      stopping = true;
      wake?.();
      await current.stop();
    },
  };
}

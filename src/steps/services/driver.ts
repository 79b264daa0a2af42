/** What each service's module (postgresql.ts, mysql.ts, redis.ts) provides, and the error codes it reports with; index.ts picks the module by name. */

export interface ServiceDriver {
  /** Drops `name`'s leftovers (a lane run again), then makes them afresh; the env the worker gets, and how to drop them. */
  make(adminUrl: string, name: string, password: string): Promise<MadeService>;
  /** Names of what this server holds that start with `prefix` (databases, roles/users, claims). */
  list(adminUrl: string, prefix: string): Promise<string[]>;
  /** Drops everything of these names (absent ones are no error). */
  drop(adminUrl: string, names: readonly string[]): Promise<void>;
  /** Whether the server answers and the admin may make databases and users; says what it found (never a password). */
  check(adminUrl: string, timeoutMs: number): Promise<string>;
}

export interface MadeService {
  env: Record<string, string>;
  drop(): Promise<void>;
}

/**
 * Failures a module reports with this code (its `err.code`) mean the server could not be
 * reached: the build ends in `error` with a ServiceUnavailableError naming the service.
 */
export const UNREACHABLE = 'ESLUICE_SERVICE_UNREACHABLE';
/** ... and this one that it has no room for another worker: a ServiceCapacityError. */
export const FULL = 'ESLUICE_SERVICE_FULL';

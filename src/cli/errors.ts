/**
 * How the command-line client ends. A watched build's result is its exit status (0 passed,
 * 1 failed, 2 error, 3 stopped, 4 skipped), so scripts can wait on a build; what went wrong
 * with the client itself has codes of its own above those.
 */

export const EXIT = {
  ok: 0,
  failed: 1,
  error: 2,
  stopped: 3,
  skipped: 4,
  /** The request failed: the API refused it, or Sluice could not be reached. */
  request: 10,
  /** The command line itself was wrong (sysexits' EX_USAGE). */
  usage: 64,
  /** A bug of the client's own (sysexits' EX_SOFTWARE). */
  internal: 70,
  /** Interrupted at a prompt (128 + SIGINT). */
  interrupted: 130,
} as const;

/** The exit status for a build that ended with `status`. */
export function exitForStatus(status: string): number {
  switch (status) {
    case 'passed':
      return EXIT.ok;
    case 'failed':
      return EXIT.failed;
    case 'stopped':
      return EXIT.stopped;
    case 'skipped':
      return EXIT.skipped;
    default:
      return EXIT.error;
  }
}

/** A failure the user reads on stderr; `exitCode` is what the process ends with. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.request,
  ) {
    super(message);
  }
}

/** What the API answered with a 4xx or 5xx: its `{error, field?, message}` (api/http.ts). */
export class ApiError extends CliError {
  constructor(
    readonly status: number,
    readonly error: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

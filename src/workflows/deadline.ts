/**
 * A suite's deadline for one build (workflow code): a Temporal timer from the build's turn.
 * When it fires before the build is over, the session stops the build as a stop does (its
 * running tests are killed) and ends it in `error`, saying why. Deterministic: the timer is a
 * command in the history, cancelled when the build ends first. No timer without a deadline,
 * so histories recorded without one replay unchanged.
 */
import { CancellationScope, isCancellation, sleep } from '@temporalio/workflow';

export class BuildDeadline {
  /** True once the deadline passed while the build was still running. */
  passed = false;
  private over = false;
  private timer: CancellationScope | null = null;

  constructor(readonly minutes: number | null) {}

  /** Starts the clock; `onPass` runs once if it runs out before `end()`. */
  start(onPass: () => void): void {
    if (this.minutes === null) return;
    const scope = new CancellationScope();
    this.timer = scope;
    void scope.run(() => sleep(this.minutes! * 60_000)).then(
      () => {
        if (this.over) return;
        this.passed = true;
        onPass();
      },
      (err: unknown) => {
        // Cancelled by end(): the build was over in time. A timer fails in no other way.
        if (!isCancellation(err)) throw err;
      },
    );
  }

  /** The build is over: the timer, if still running, is cancelled. */
  end(): void {
    this.over = true;
    if (this.timer && !this.passed) this.timer.cancel();
  }

  /** The session's reason when it passed. */
  get reason(): string {
    return `took longer than the suite's deadline of ${this.minutes} minute${this.minutes === 1 ? '' : 's'}`;
  }
}

import { backoffMs } from './backoff.js';
import type { TimerHandle, Timers } from './clock.js';
import { ConnectionFailedError } from './errors.js';
import type { ResolvedOptions } from './options.js';

/**
 * The state of failing creates: the streak, the last failure, and the backoff before the next
 * attempt (`createBackoffMs` doubling up to `maxCreateBackoffMs`, with jitter). While it runs, no
 * create starts; one timer calls `retry` when it ends. During the blocking period (no connection
 * ready or opening, `blockingPeriod` on) callers fail at once with the last connect error.
 */
export class CreateBackoff {
  /** Creates failed in a row; 0 once one succeeds. */
  streak = 0;
  /** The last create failure. */
  lastFailure: ConnectionFailedError | undefined = undefined;
  #until = 0;
  #timer: TimerHandle | undefined = undefined;

  constructor(
    readonly timers: Timers,
    readonly options: ResolvedOptions,
    /** Called when a backoff that held creates back ends. */
    readonly retry: () => void,
  ) {}

  /** A create succeeded: the streak ends. */
  succeeded(): void {
    this.streak = 0;
  }

  /** A create failed: the backoff grows. Returns its length in ms. */
  failed(err: ConnectionFailedError): number {
    this.lastFailure = err;
    this.streak++;
    const delay = backoffMs(this.streak, this.options.createBackoffMs, this.options.maxCreateBackoffMs);
    this.#until = this.timers.now() + delay;
    return delay;
  }

  /** True while the backoff runs (no create may start); a timer then calls `retry`. */
  active(): boolean {
    if (this.streak === 0) return false;
    const wait = this.#until - this.timers.now();
    if (wait <= 0) return false;
    this.#timer ??= this.timers.set(() => {
      this.#timer = undefined;
      this.retry();
    }, wait);
    return true;
  }

  /** Whether callers fail at once: creates are failing, nothing can serve them, and the backoff runs. */
  blocks(nothingCanServe: boolean): boolean {
    return this.streak > 0 && nothingCanServe && this.options.blockingPeriod && this.timers.now() < this.#until;
  }

  /** The error of a caller failed at once during the blocking period. */
  failFast(): ConnectionFailedError {
    const last = this.lastFailure;
    const retryIn = Math.max(0, Math.ceil(this.#until - this.timers.now()));
    return new ConnectionFailedError(
      this.options.name,
      `no connection can be opened (${last?.detail ?? 'creates are failing'}); ` +
        `failing fast until the next attempt in ${retryIn} ms (blockingPeriod)`,
      last,
    );
  }

  /** No more retries (the pool is closing). */
  stop(): void {
    this.timers.clear(this.#timer);
    this.#timer = undefined;
  }
}

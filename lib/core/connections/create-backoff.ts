import { backoffMs, ConnectionFailedError, type TimerHandle, type Timers } from '../common/index.js';
import type { ResolvedOptions } from '../options/index.js';
import type { BreakerState } from '../contracts/index.js';

/**
 * The state of failing creates: the streak, the last failure, the backoff before the next attempt
 * (`createBackoffMs` doubling up to `maxCreateBackoffMs`) and the breaker. While the backoff runs
 * no create starts; one timer calls `retry` when it ends.
 *
 * The breaker opens on a sustained outage: `breakerFailures` failures in a row, the first of
 * them started at least `breakerAfterMs` ago; or at once on a failure the connector calls
 * permanent (no such database, credentials refused). Until then callers wait for the next attempt (a
 * transient error is retried within their deadline, as the peer pools do). Once open, callers that
 * nothing ready can serve fail at once with the last connect error, and creates go one at a time:
 * each is a probe, and its success closes the breaker.
 */
export class CreateBackoff {
  /** Creates failed in a row; 0 once one succeeds. */
  streak = 0;
  /** The last create failure. */
  lastFailure: ConnectionFailedError | undefined = undefined;
  /** Whether the breaker is open (a sustained outage); closed again by the first success. */
  open = false;
  /** When the first failed create of the streak started. */
  #since = 0;
  #until = 0;
  #timer: TimerHandle | undefined = undefined;

  constructor(
    readonly timers: Timers,
    readonly options: ResolvedOptions,
    /** Called when a backoff that held creates back ends. */
    readonly retry: () => void,
  ) {}

  /** A create succeeded: the streak ends and the breaker closes. Whether it was open. */
  succeeded(): boolean {
    const wasOpen = this.open;
    this.streak = 0;
    this.open = false;
    return wasOpen;
  }

  /**
   * A create that started at `startedAt` failed: the backoff grows, and the breaker opens if the
   * outage is sustained, or at once if retrying cannot mend it (`permanent`). Returns the backoff
   * in ms and whether this failure opened the breaker.
   */
  failed(err: ConnectionFailedError, startedAt: number, permanent = false): { delay: number; opened: boolean } {
    const o = this.options;
    this.lastFailure = err;
    if (this.streak === 0) this.#since = startedAt;
    this.streak++;
    const now = this.timers.now();
    const delay = backoffMs(this.streak, o.createBackoffMs, o.maxCreateBackoffMs);
    this.#until = now + delay;
    const sustained = this.streak >= o.breakerFailures && now - this.#since >= o.breakerAfterMs;
    const opened = !this.open && o.blockingPeriod && (permanent || sustained);
    if (opened) this.open = true;
    return { delay, opened };
  }

  /** The breaker's state; `opening`: creates in flight (with the breaker open, the probe). */
  state(opening: number): BreakerState {
    if (!this.open) return 'closed';
    return opening > 0 ? 'half-open' : 'open';
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

  /** Whether a create may start with `opening` in flight: no backoff runs, and an open breaker probes one at a time. */
  mayStart(opening: number): boolean {
    return !(this.open && opening > 0) && !this.active();
  }

  /**
   * Whether a caller fails at once: the breaker is open, no connection is ready, and no probe may
   * start for it (one is under way, or the backoff runs). Past the backoff, the caller queues and
   * its demand starts the probe.
   */
  blocks(noneReady: boolean, opening: number): boolean {
    return this.open && noneReady && (opening > 0 || this.timers.now() < this.#until);
  }

  /** The error of a caller failed at once while the breaker is open. */
  failFast(opening: number): ConnectionFailedError {
    const last = this.lastFailure;
    const retryIn = Math.max(0, Math.ceil(this.#until - this.timers.now()));
    const next = opening > 0 ? 'a probe is under way' : `the next probe in ${retryIn} ms`;
    return new ConnectionFailedError(
      this.options.name,
      `no connection can be opened (${last?.detail ?? 'creates are failing'}); ` +
        `${this.streak} creates failed in a row over ${Math.round(this.timers.now() - this.#since)} ms, ` +
        `so callers fail fast until a create succeeds: ${next} (blockingPeriod)`,
      last,
    );
  }

  /** No more retries (the pool is closing). */
  stop(): void {
    this.timers.clear(this.#timer);
    this.#timer = undefined;
  }
}

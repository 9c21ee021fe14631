import type { TimerHandle, Timers } from './clock.js';
import { EarliestTimer } from './earliest-timer.js';
import type { Waiter, WaiterQueue } from './waiter-queue.js';

/** Waiters dated per clock read at most: a batch of queued callers shares one read. */
const STAMP_BATCH = 256;

/**
 * The deadlines of queued callers: each waiter is dated when it queues, and one timer, set for
 * the earliest deadline, sweeps the queue. Reading the clock costs as much as the rest of an
 * acquire, so waiters are dated in batches: at the end of the current event-loop turn (the
 * clock's `defer`), or after STAMP_BATCH waiters. A deadline may fire late by what remains of
 * that turn (which delays every timer anyway), never early.
 */
export class WaiterDeadlines<L> {
  /** Waiters queued since the last stamp. */
  readonly #unstamped: Waiter<L>[] = [];
  readonly #timer: EarliestTimer;
  /** The pending stamp's timer, on a clock without `defer` (one at a time). */
  #deferred: TimerHandle | undefined;

  constructor(
    readonly timers: Timers,
    readonly queue: WaiterQueue<L>,
    /** The waiters whose deadline passed, still queued, in queue order: one call per sweep. */
    readonly expired: (waiters: Waiter<L>[]) => void,
  ) {
    this.#timer = new EarliestTimer(timers, () => this.#sweep());
  }

  /** `w` was just queued: it is dated with the rest of its batch. */
  queued(w: Waiter<L>): void {
    const unstamped = this.#unstamped.push(w);
    if (unstamped === 1 && this.#deferred === undefined) this.#deferred = this.timers.defer(this.#stampDeferred);
    else if (unstamped >= STAMP_BATCH) this.#stamp();
  }

  /** No more deadlines (the pool is closing). */
  stop(): void {
    this.#timer.stop();
    this.timers.clear(this.#deferred);
    this.#deferred = undefined;
    this.#unstamped.length = 0;
  }

  /** Dates the waiters queued since the last stamp. */
  readonly #stampDeferred = (): void => {
    this.#deferred = undefined;
    this.#stamp();
  };

  #stamp(): void {
    if (this.#unstamped.length === 0) return;
    const stamp = { at: this.timers.now() };
    let shortest = Infinity;
    for (const w of this.#unstamped) {
      if (!w.queued) continue;
      w.stamp = stamp;
      if (w.timeoutMs < shortest) shortest = w.timeoutMs;
    }
    const earliest = stamp.at + shortest;
    this.#unstamped.length = 0;
    this.#timer.atLatest(earliest);
  }

  #sweep(): void {
    const now = this.timers.now();
    let next = Infinity;
    const due: Waiter<L>[] = [];
    this.queue.each((w) => {
      const deadline = w.deadline;
      if (deadline <= now) due.push(w);
      else if (deadline < next) next = deadline;
    });
    if (due.length > 0) this.expired(due);
    this.#timer.set(next);
  }
}

import type { Admission, PoolCounters, StandingFigures, StandingState } from '../contracts/index.js';
import type { ProcessHold, Timers } from '../common/index.js';
import { QueueWatch } from './queue-watch.js';
import { WaiterDeadlines } from './waiter-deadlines.js';
import { Waiter, WaiterQueue, type WaiterExtras } from './waiter-queue.js';
import type { ResolvedWaiting } from './waiting-options.js';

/**
 * The callers waiting for a connection, first come first served: each is dated for its deadline,
 * leaves at once when its signal aborts, and keeps the process alive while any waits. Whoever
 * serves a caller takes it out with `next()`; one whose deadline passed is taken out, counted,
 * and rejected with the error `timedOut` makes for it. With controlled waiting (standing-queue.ts)
 * it also tells whether it stands, and whom to refuse while it does.
 */
export class PoolQueue<L> {
  readonly #waiters = new WaiterQueue<L>();
  readonly #deadlines: WaiterDeadlines<L>;
  /** With controlled waiting: how fast it is served, and whether it stands. */
  readonly #watch: QueueWatch | undefined;

  constructor(
    timers: Timers,
    readonly holds: ProcessHold,
    readonly counters: PoolCounters,
    /** Callers whose deadline passed, still queued (one call per sweep): the error of each. */
    timedOut: (due: Waiter<L>[]) => (w: Waiter<L>) => unknown,
    /** The last caller left the queue (served, timed out, aborted). */
    readonly emptied?: () => void,
    /** How callers wait, and the slots they wait for now (the target is the mean hold of one). */
    waiting?: { readonly options: ResolvedWaiting; readonly slots: () => number },
  ) {
    if (waiting?.options.mode === 'controlled') this.#watch = new QueueWatch(timers, waiting.options, waiting.slots);
    this.#deadlines = new WaiterDeadlines(timers, this.#waiters, (due) => {
      const errorOf = timedOut(due);
      for (const w of due) {
        this.leave(w);
        counters.timeouts++;
        w.fail(errorOf(w));
      }
    });
  }

  /** Callers waiting now. */
  get length(): number {
    return this.#waiters.length;
  }

  /** The caller waiting longest, still queued. */
  get head(): Waiter<L> | null {
    return this.#waiters.head;
  }

  /**
   * Queues a caller until `timeoutMs` from now, or until `signal` aborts (the caller gets its
   * reason). `admission`: the limiter's, given back if the caller fails.
   */
  join(
    timeoutMs: number,
    signal: AbortSignal | undefined,
    stack: string | undefined,
    admission: Admission | undefined,
  ): Promise<L> {
    const w = new Waiter<L>(timeoutMs);
    w.admission = admission;
    const promise = w.promise();
    this.#waiters.push(w);
    if (this.#waiters.length === 1) {
      this.holds.hold();
      this.#watch?.formed();
    }
    this.#deadlines.queued(w);
    if (signal === undefined && stack === undefined) return promise;
    const extras: WaiterExtras = (w.extras = { abort: null, stack });
    if (signal !== undefined) {
      const listener = () => {
        extras.abort = null;
        this.leave(w);
        this.counters.aborted++;
        w.fail(signal.reason);
      };
      extras.abort = { signal, listener };
      signal.addEventListener('abort', listener, { once: true });
    }
    return promise;
  }

  /** The head of the queue, out of it: it is served. */
  next(): Waiter<L> | null {
    const w = this.#waiters.shift();
    if (w === null) return null;
    this.#watch?.served(w.since);
    this.#left(w);
    return w;
  }

  /**
   * With controlled waiting, what refuses a newcomer the standing queue would not serve within
   * its target (counted as shed); undefined when it may wait, and always without.
   */
  shed(): StandingFigures | undefined {
    return this.#watch?.refusal(this.#waiters.length, this.#waiters.head?.since);
  }

  /** With controlled waiting, whether the queue stands; undefined without. */
  standingState(): StandingState | undefined {
    return this.#watch?.state(this.#waiters.head?.since);
  }

  /** The head of the queue, out of it, not served (it is failed: the pool closes, its creates fail fast). */
  evict(): Waiter<L> | null {
    const w = this.#waiters.shift();
    if (w !== null) this.#left(w);
    return w;
  }

  /** Takes `w` out of the queue, wherever it is, and removes its abort listener. */
  leave(w: Waiter<L>): void {
    if (!w.queued) return;
    this.#waiters.remove(w);
    this.#left(w);
  }

  #left(w: Waiter<L>): void {
    const extras = w.extras;
    if (extras !== null && extras.abort !== null) {
      extras.abort.signal.removeEventListener('abort', extras.abort.listener);
      extras.abort = null;
    }
    if (this.#waiters.length === 0) {
      this.holds.unhold();
      this.#watch?.emptied();
      this.emptied?.();
    }
  }

  /** No more deadlines, and every caller still queued gets `error()` (the pool is closing). */
  close(error: () => unknown): void {
    this.#deadlines.stop();
    for (let w = this.evict(); w !== null; w = this.evict()) w.fail(error());
  }
}

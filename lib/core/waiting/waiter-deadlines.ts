import { EarliestTimer, type TimerHandle, type Timers } from '../common/index.js';
import { Stamp, type Waiter, type WaiterQueue } from './waiter-queue.js';

/** Waiters dated per clock read at most: a batch of queued callers shares one read. */
const STAMP_BATCH = 256;

/**
 * The deadlines of queued callers: each waiter is dated when it queues, and one timer, set for
 * the earliest deadline, sweeps the queue. Reading the clock costs as much as the rest of an
 * acquire, so waiters are dated in batches: a batch is dated at the end of the event-loop turn
 * it opened in (the clock's `defer`), or once STAMP_BATCH waiters joined it, whichever comes
 * first. A waiter joins the open batch by taking its stamp, undated (`at` Infinity) until the
 * batch is dated, so queueing keeps no list of waiters and dating touches none (a list of the
 * batch's waiters, each stamped in turn, was a cost every queued caller paid). A
 * deadline may fire late by what remains of that turn (which delays every timer anyway), never
 * early.
 */
export class WaiterDeadlines<L> {
  /** The batch waiters join now, undated. */
  #open = new Stamp();
  /** Waiters that joined the open batch. */
  #joined = 0;
  /** The shortest timeout among them. */
  #shortest = Infinity;
  readonly #timer: EarliestTimer;
  /** The pending datings' timers, on a clock without `defer`. */
  readonly #deferred = new Set<TimerHandle>();
  #stopped = false;

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
    const batch = (w.stamp = this.#open);
    if (w.timeoutMs < this.#shortest) this.#shortest = w.timeoutMs;
    const joined = ++this.#joined;
    if (joined === 1) this.#dateAtEndOfTurn(batch);
    else if (joined >= STAMP_BATCH) this.#date();
  }

  /** No more deadlines (the pool is closing). */
  stop(): void {
    this.#stopped = true;
    this.#timer.stop();
    for (const handle of this.#deferred) this.timers.clear(handle);
    this.#deferred.clear();
  }

  /**
   * Dates `batch` once the turn is done, unless it filled up and was dated before. (One dating
   * per batch, rather than one per turn for whichever batch is open then: with thousands of
   * batches in a turn, the fewer datings keep more of them alive longer, and a deep queue pays
   * for that in the young generation's collections.)
   */
  #dateAtEndOfTurn(batch: Stamp): void {
    const handle = this.timers.defer(() => {
      this.#deferred.delete(handle);
      if (this.#open === batch && !this.#stopped) this.#date();
    });
    if (handle !== undefined) this.#deferred.add(handle);
  }

  /** Dates the open batch and opens the next; the timer fires by the batch's earliest deadline. */
  #date(): void {
    const batch = this.#open;
    batch.at = this.timers.now();
    // A waiter of the batch served meanwhile may have had the shortest timeout: the sweep then finds no one due, and sets the timer for who is left.
    const earliest = batch.at + this.#shortest;
    this.#open = new Stamp();
    this.#joined = 0;
    this.#shortest = Infinity;
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

// Controlled waiting, after CoDel (Nichols and Jacobson, "Controlling Queue Delay", 2012), for a
// queue of callers rather than of packets. A queue that forms in a burst and drains is what a
// queue is for; one that stands — even its shortest wait over a whole interval above a target —
// only adds its wait to every call it serves, and under sustained overload a FIFO queue with
// deadlines fills to what the deadlines allow and stands there, so every served caller waits
// almost its whole deadline. While a queue stands, a newcomer is refused at once unless the queue
// ahead of it, at the rate it is served, would serve it within the target (the oldest waiter's
// age would not do: arriving faster than it is served, the queue behind the oldest is longer
// than its age says), which keeps the wait of those served near the target; the queue
// is let be again once it has stayed drained (empty, or its oldest waiter younger than half the
// target) for a whole interval. Ending at once when it empties would not do: a backlog that built
// up at twice the capacity drains oldest first, each next waiter older than the last, until the
// queue is empty; let be at once, it would build up for a whole interval again.

import type { StandingState } from '../contracts/index.js';
import type { DrainRate } from './drain-rate.js';
import type { WaitingOptions } from './waiting-options.js';

/** The least interval by default, ms. */
export const LEAST_INTERVAL_MS = 1_000;
/** The default interval, in targets. */
export const INTERVAL_TARGETS = 5;

/**
 * The rule over one queue, fed its events with the time of each: pure logic, no timer, so the
 * simulation on virtual time runs the same code as the pool and the limiters.
 */
export class StandingQueue {
  /** The last time the queue was short: empty, or a waiter served within the target. */
  #lastShort = -Infinity;
  /** While it stands: the last time its oldest waiter had waited half the target or more. */
  #lastLong = -Infinity;
  #standing = false;
  #stood = 0;
  #shed = 0;
  /** The mean hold last measured, ms (NaN: none yet). */
  #hold = NaN;

  constructor(
    /** How fast the queue is served while it stands. */
    readonly drain: DrainRate,
    /** The slots its waiters wait for, now: the target is the mean time one is held. */
    readonly slots: () => number,
    readonly options: Pick<WaitingOptions, 'targetMs' | 'intervalMs'> = {},
    /**
     * Whether the slots are still growing toward the capacity (an adaptive limit that starts
     * slowly): a queue behind them meanwhile is theirs to drain by growing, and does not stand.
     */
    readonly starting: () => boolean = () => false,
  ) {}

  /**
   * The target now, ms: the option, or the mean hold of a slot (slots over the rate the queue is
   * served at) last measured; NaN until first measured. The rate is forgotten when the queue
   * empties (a later queue may meet another limit), the hold is kept: it is the work's, and a
   * standing queue that empties for a moment must not take every newcomer until it is measured
   * again.
   */
  target(): number {
    const fixed = this.options.targetMs;
    if (fixed !== undefined) return fixed;
    const perMs = this.drain.perMs;
    if (perMs > 0) this.#hold = this.slots() / perMs;
    return this.#hold;
  }

  /** Whether the queue stands now. */
  get standing(): boolean {
    return this.#standing;
  }

  /**
   * A waiter joined an empty queue at `now`: it was short until now. (An empty queue needs no
   * event of its own: until it forms again nothing is decided, and a standing queue is let be
   * only once it stayed drained for an interval.)
   */
  formed(now: number): void {
    this.#lastShort = now;
  }

  /** A waiter was served at `now` after waiting `waitedMs`. */
  served(now: number, waitedMs: number): void {
    if (waitedMs <= this.target()) this.#lastShort = now;
  }

  /**
   * Whether a newcomer at `now` may join the queue of `waiting` callers, whose longest waiter
   * joined at `headSince` (undefined: the queue is empty). False: refuse it at once, the queue
   * stands.
   */
  admits(now: number, waiting: number, headSince: number | undefined): boolean {
    const target = this.target();
    if (!this.#update(now, target, headSince)) return true;
    // Its wait, served at the rate the queue is: the waiters ahead, and its own turn.
    const perMs = this.drain.perMs;
    const wait = perMs > 0 ? (waiting + 1) / perMs : headSince === undefined ? 0 : now - headSince;
    if (wait <= target) return true;
    this.#shed++;
    return false;
  }

  /** Whether the queue stands at `now`, found standing or let be as its oldest waiter's age says. */
  #update(now: number, target: number, headSince: number | undefined): boolean {
    if (!(target > 0)) return false;
    if (this.starting()) {
      this.#lastShort = now; // its interval begins once the slots stop growing
      return false;
    }
    const age = headSince === undefined ? 0 : now - headSince;
    const interval = this.options.intervalMs ?? Math.max(LEAST_INTERVAL_MS, INTERVAL_TARGETS * target);
    if (this.#standing) {
      if (age >= target / 2) this.#lastLong = now;
      else if (now - this.#lastLong >= interval) {
        this.#standing = false;
        this.#lastShort = now;
      }
    } else if (age > target && now - this.#lastShort >= interval) {
      this.#standing = true;
      this.#lastLong = now;
      this.#stood++;
    }
    return this.#standing;
  }

  /** The state at `now`, the queue's oldest waiter having joined at `headSince` (undefined: empty). */
  state(now: number, headSince: number | undefined): StandingState {
    const target = this.target();
    this.#update(now, target, headSince);
    return {
      standing: this.#standing,
      targetMs: target > 0 ? target : NaN,
      stood: this.#stood,
      shed: this.#shed,
    };
  }
}

import type { StandingFigures, StandingState } from '../contracts/index.js';
import { DrainRate } from './drain-rate.js';
import { StandingQueue } from './standing-queue.js';
import type { ResolvedWaiting } from './waiting-options.js';

/**
 * What a queue of waiters knows of itself, fed its events: how fast it is served (always) and,
 * with controlled waiting, whether it stands and whom to refuse while it does. The pool's queue
 * and the limiters' share it; each makes its own error of a refusal.
 */
export class QueueWatch {
  readonly #clock: { now(): number };
  readonly #drain: DrainRate;
  readonly #standing: StandingQueue | undefined;

  /**
   * `slots`: the slots the waiters wait for, now (with controlled waiting, the target is the mean
   * hold of one); `starting`: whether they are still growing (see StandingQueue).
   */
  constructor(
    clock: { now(): number },
    waiting: ResolvedWaiting | undefined,
    slots: () => number,
    starting?: () => boolean,
  ) {
    this.#clock = clock;
    this.#drain = new DrainRate(clock);
    const controlled = waiting?.mode === 'controlled';
    this.#standing = controlled ? new StandingQueue(this.#drain, slots, waiting, starting) : undefined;
  }

  /** Slots handed over per second while the queue has stood; 0 until it has stood a whole measure. */
  get servedPerSec(): number {
    return this.#drain.perMs * 1_000;
  }

  /** Slots handed over per millisecond, as {@link servedPerSec}. */
  get perMs(): number {
    return this.#drain.perMs;
  }

  /** The date a waiter joins at, for {@link served}: now under controlled waiting, else 0 (no clock read). */
  joinedAt(): number {
    return this.#standing === undefined ? 0 : this.#clock.now();
  }

  /** A waiter joined an empty queue. */
  formed(): void {
    this.#drain.formed();
    this.#standing?.formed(this.#clock.now());
  }

  /** A waiter that joined at `joinedAt` was handed a slot (undefined: not dated yet, it waited no time). */
  served(joinedAt: number | undefined): void {
    this.#drain.granted();
    if (this.#standing === undefined) return;
    const now = this.#clock.now();
    this.#standing.served(now, joinedAt === undefined ? 0 : now - joinedAt);
  }

  /** The last waiter left. */
  emptied(): void {
    this.#drain.emptied();
  }

  /**
   * With controlled waiting, the figures that refuse a newcomer the queue of `waiting` callers
   * (its oldest joined at `headSince`) would not serve within its target, counted as shed;
   * undefined when it may wait, and always without.
   */
  refusal(waiting: number, headSince: number | undefined): StandingFigures | undefined {
    const standing = this.#standing;
    if (standing === undefined || standing.admits(this.#clock.now(), waiting, headSince)) return undefined;
    return { waiting, servedPerSec: this.servedPerSec, targetMs: standing.target() };
  }

  /** With controlled waiting, the queue's state, its oldest waiter having joined at `headSince`; undefined without. */
  state(headSince: number | undefined): StandingState | undefined {
    return this.#standing?.state(this.#clock.now(), headSince);
  }
}

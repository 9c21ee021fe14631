import type { TimerHandle, Timers } from './clock.js';

/**
 * Things to date, dated in batches. A clock read costs about as much as the rest of an acquire
 * or a release, so whatever is added in one turn of the event loop shares one read, taken
 * when the turn is done (the clock's `defer`). What reads a date may see it late by what remained
 * of the turn (which delays every timer anyway), never early. The pool dates its connections left
 * idle with it. (Its queued callers are dated the same way by WaiterDeadlines, which also dates
 * every 256 of them, and keeps its own code: routed through this class, the deep queue ran
 * markedly slower, for reasons not found.)
 */
export class TurnStamps<I> {
  readonly #waiting: I[] = [];
  /** A stamp is scheduled for the end of this turn. */
  #scheduled = false;
  /** Its timer, on a clock without `defer`. */
  #deferred: TimerHandle | undefined;

  constructor(
    readonly timers: Timers,
    /** Dates `items` (in the order they were added) at `now`. */
    readonly stamp: (items: readonly I[], now: number) => void,
  ) {}

  /** `item` is dated with the rest of its turn. */
  add(item: I): void {
    this.#waiting.push(item);
    if (this.#scheduled) return;
    this.#scheduled = true;
    this.#deferred = this.timers.defer(this.#endOfTurn);
  }

  /** Nothing more is dated (the pool is closing): what waits is dropped. */
  stop(): void {
    this.timers.clear(this.#deferred);
    this.#deferred = undefined;
    this.#scheduled = false;
    this.#waiting.length = 0;
  }

  readonly #endOfTurn = (): void => {
    this.#scheduled = false;
    this.#deferred = undefined;
    if (this.#waiting.length === 0) return;
    this.stamp(this.#waiting, this.timers.now());
    this.#waiting.length = 0;
  };
}

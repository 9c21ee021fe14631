/** How long a queue must stand, served, before its rate is known: and the span of each measure after. */
export const DRAIN_WINDOW_MS = 100;

/**
 * How fast a standing queue of waiters is served: slots handed over per millisecond, measured over
 * windows of {@link DRAIN_WINDOW_MS} while waiters stood throughout, each window's rate averaged
 * with the last. It is unknown (0) until the queue has stood, served, for a whole window, and
 * again from the moment the queue empties: a queue that forms later may meet another limit. A
 * window is closed by the first grant after its span, so the rate costs no timer; its dates are
 * the turn's (`turnDates`), so the grants of one release, or of one turn, share a clock read.
 */
export class DrainRate {
  #perMs = 0;
  /** When the window under way began; NaN while the queue is empty. */
  #since = NaN;
  #granted = 0;

  constructor(private readonly clock: { now(): number }) {}

  /** Slots handed over per millisecond; 0 while unknown. */
  get perMs(): number {
    return this.#perMs;
  }

  /** A waiter joined an empty queue: the first window begins. */
  formed(): void {
    this.#since = this.clock.now();
    this.#granted = 0;
  }

  /** A waiter was handed a slot. */
  granted(): void {
    if (Number.isNaN(this.#since)) return;
    this.#granted++;
    const now = this.clock.now();
    const span = now - this.#since;
    if (!(span >= DRAIN_WINDOW_MS)) return; // also a clock that went back
    const rate = this.#granted / span;
    this.#perMs = this.#perMs === 0 ? rate : (this.#perMs + rate) / 2;
    this.#since = now;
    this.#granted = 0;
  }

  /** The queue emptied: its rate is not the next one's. */
  emptied(): void {
    this.#perMs = 0;
    this.#since = NaN;
    this.#granted = 0;
  }
}

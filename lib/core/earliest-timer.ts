import type { TimerHandle, Timers } from './clock.js';

/**
 * One timer for many deadlines: set for the earliest, moved only when an earlier one comes, so
 * neither a queue of callers nor a set of leases costs a timer each.
 */
export class EarliestTimer {
  #timer: TimerHandle | undefined;
  #at = Infinity;
  #stopped = false;

  constructor(
    readonly timers: Timers,
    /** Called when the timer fires; set it again from there for what is left. */
    readonly fire: () => void,
  ) {}

  /** Makes sure the timer fires by `at`. */
  atLatest(at: number): void {
    if (at < this.#at) this.set(at);
  }

  /** Sets the timer for `at`; `Infinity`: no timer. */
  set(at: number): void {
    this.timers.clear(this.#timer);
    this.#timer = undefined;
    this.#at = at;
    if (at === Infinity || this.#stopped) return;
    this.#timer = this.timers.set(() => {
      this.#timer = undefined;
      this.#at = Infinity;
      this.fire();
    }, at - this.timers.now());
  }

  /** No timer from now on. */
  stop(): void {
    this.#stopped = true;
    this.set(Infinity);
  }
}

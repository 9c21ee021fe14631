import type { Timers } from './clock.js';

/**
 * Reads of the clock shared within a turn at most this many times before the next read: a long
 * chain of promises (a tight loop of `await pool.use(...)`) runs in one turn, and its leases are
 * dated within a few of them, not at the turn's start.
 */
export const TURN_READS = 64;

/**
 * The time of the event-loop turn: the first date asked for in a turn reads the clock, the rest
 * of the turn (up to {@link TURN_READS} dates) share that read, and the turn's end (the clock's
 * `defer`) lets the next date read again. A clock read costs as much as the rest of a lease, and
 * leases begin and end by the thousand in a turn under load. A date is never late: it is when the
 * turn (or its last read) began, early by what of the turn ran before it — which a timing of
 * milliseconds does not see, and a lease begun and ended in one turn, held for no I/O, reads as
 * held for no time. Dates only move forward.
 */
export class TurnClock implements EventDates {
  /** The clock's last read, while its turn lasts; NaN once the turn has ended (and before the first read). */
  #date = NaN;
  /** Dates the last read may still give; -1: none until the next read, which is the turn's first. */
  #left = -1;

  constructor(readonly timers: Timers) {}

  /**
   * The time from `date`, one of its dates, to now. From the date of its last read, while the turn
   * lasts, that is no time at the turn's resolution, and it takes no date (nor one of the
   * {@link TURN_READS} that the read may give).
   */
  elapsed(date: number): number {
    return date === this.#date ? 0 : this.now() - date;
  }

  now(): number {
    const left = this.#left;
    if (left > 0) {
      this.#left = left - 1;
      return this.#date;
    }
    if (left < 0) this.timers.defer(this.#turnEnded);
    this.#left = TURN_READS - 1;
    return (this.#date = this.timers.now());
  }

  readonly #turnEnded = (): void => {
    this.#left = -1;
    this.#date = NaN;
  };
}

/** What dates events: {@link TurnClock}, or every read of a clock. */
export interface EventDates {
  now(): number;
  /** The time from `date`, one of its dates, to now. */
  elapsed(date: number): number;
}

/** Each date a read of the clock. */
class EveryRead implements EventDates {
  constructor(readonly timers: Timers) {}
  now(): number {
    return this.timers.now();
  }
  elapsed(date: number): number {
    return this.timers.now() - date;
  }
}

/**
 * What dates events of `timers`: the turn's time on a clock with turns (the real one), so that the
 * events of a turn share one clock read; every read of the clock on one without (a virtual clock).
 */
export function turnDates(timers: Timers): EventDates {
  return timers.clock.defer !== undefined ? new TurnClock(timers) : new EveryRead(timers);
}

/** A handle returned by {@link Clock.setTimeout}. */
export type TimerHandle = unknown;

/**
 * Where the pool gets time from. Every deadline, idle check and backoff reads this, so tests
 * and simulations can run on virtual time instead of sleeping.
 */
export interface Clock {
  /** Monotonic milliseconds; only differences matter. */
  now(): number;
  /** Calls `fn` once after `ms`. Timers must not keep the process alive (`unref`). */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/** The real clock: `performance.now()` and unref'd Node timers. */
export const systemClock: Clock = {
  now: () => performance.now(),
  setTimeout(fn, ms) {
    const timer = setTimeout(fn, ms);
    timer.unref();
    return timer;
  },
  clearTimeout(handle) {
    clearTimeout(handle as NodeJS.Timeout);
  },
};

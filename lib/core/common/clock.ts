/** A handle returned by {@link Clock.setTimeout}. */
export type TimerHandle = unknown;

/**
 * Where the pool gets time from. Every deadline, idle check and backoff reads this, so tests
 * and simulations can run on virtual time instead of sleeping.
 */
export interface Clock {
  /** Monotonic milliseconds; only differences matter. */
  now(): number;
  /**
   * Calls `fn` once after `ms`. Timers must not keep the process alive (`unref`). The pool never
   * passes more than {@link MAX_TIMER_MS} nor `Infinity`: longer waits are chained.
   */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
  /**
   * Keeps the process alive until the returned function is called. The pool holds it while an
   * acquire is pending or a close is in progress, so a bare script does not exit with a promise
   * never settled; an idle pool holds nothing. Optional: a virtual clock has no process to keep.
   */
  keepAlive?(): () => void;
  /**
   * Calls `fn` once the current turn of the event loop is done (`setImmediate` for the real
   * clock). Optional: without it the pool uses `setTimeout(fn, 0)` of this clock.
   */
  defer?(fn: () => void): void;
}

/** Node fires a timer of more than 2^31 − 1 ms after 1 ms; the pool never asks for more. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

const noop = (): void => {};

/** One timer for every hold of the process, ref'd while any hold is on: holding costs no new timer. */
let holder: NodeJS.Timeout | undefined;
let holds = 0;

/**
 * @internal Defers callbacks to the end of the turn with one `schedule`d run for all that were
 * deferred before it ran, in order. A callback that throws fails that run like a throwing
 * immediate; the ones after it still run, in the next, ahead of any deferred since.
 */
export function turnQueue(schedule: (run: () => void) => void): (fn: () => void) => void {
  let deferred: (() => void)[] = [];
  const run = (): void => {
    const due = deferred;
    deferred = [];
    let i = 0;
    try {
      for (; i < due.length; i++) due[i]!();
    } finally {
      if (i < due.length - 1) {
        if (deferred.length === 0) schedule(run);
        deferred = due.slice(i + 1).concat(deferred);
      }
    }
  };
  return (fn) => {
    if (deferred.push(fn) === 1) schedule(run);
  };
}

/**
 * One immediate per turn, however many callbacks: a long turn of a deep queue defers thousands
 * (each batch of waiters' dating), and an immediate apiece is a cost on the hot path.
 */
const deferToImmediate = turnQueue((run) => setImmediate(run));

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
  defer: deferToImmediate,
  keepAlive() {
    holder ??= setInterval(noop, MAX_TIMER_MS).unref();
    if (holds++ === 0) holder.ref();
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      if (--holds === 0) holder!.unref();
    };
  },
};

/** A wait longer than one timer can hold: re-armed until its end, on the same clock. */
class LongTimer {
  inner: TimerHandle | undefined;
  constructor(readonly end: number) {}
}

/** No timer at all: what a wait of `Infinity` ("never") gets. */
const NEVER = Symbol('never');

/**
 * @internal The pool's and the limiters' view of a {@link Clock}: any duration from 0 to
 * `Infinity` works, whatever the clock underneath can hold. `Infinity` arms nothing; durations
 * past {@link MAX_TIMER_MS} are chained.
 */
export class Timers {
  constructor(readonly clock: Clock) {}

  now(): number {
    return this.clock.now();
  }

  set(fn: () => void, ms: number): TimerHandle {
    if (ms <= MAX_TIMER_MS) return this.clock.setTimeout(fn, ms > 0 ? ms : 0);
    if (ms === Infinity) return NEVER;
    const long = new LongTimer(this.clock.now() + ms);
    const arm = (): void => {
      const left = long.end - this.clock.now();
      if (left <= MAX_TIMER_MS) long.inner = this.clock.setTimeout(fn, Math.max(0, left));
      else long.inner = this.clock.setTimeout(arm, MAX_TIMER_MS);
    };
    arm();
    return long;
  }

  clear(handle: TimerHandle | undefined): void {
    if (handle === undefined || handle === NEVER) return;
    if (handle instanceof LongTimer) {
      if (handle.inner !== undefined) this.clock.clearTimeout(handle.inner);
      handle.inner = undefined;
    } else this.clock.clearTimeout(handle);
  }

  /** See {@link Clock.defer}. Returns a handle to clear when the clock has no `defer` of its own. */
  defer(fn: () => void): TimerHandle | undefined {
    if (this.clock.defer === undefined) return this.clock.setTimeout(fn, 0);
    this.clock.defer(fn);
    return undefined;
  }

  /** See {@link Clock.keepAlive}; a no-op for clocks without it. */
  keepAlive(): () => void {
    return this.clock.keepAlive?.() ?? noop;
  }
}

/**
 * @internal Counted holds on the process: while one is on (a pending acquire, a close under way),
 * the clock's `keepAlive` keeps the process running; an idle pool holds nothing.
 */
export class ProcessHold {
  #count = 0;
  #letGo: (() => void) | undefined;

  constructor(readonly timers: Timers) {}

  hold(): void {
    if (this.#count++ === 0) this.#letGo = this.timers.keepAlive();
  }

  unhold(): void {
    if (--this.#count > 0) return;
    const letGo = this.#letGo;
    this.#letGo = undefined;
    letGo?.();
  }
}

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

  /** When it fires (`Infinity`: not set); never later than what it was asked to fire by. */
  get at(): number {
    return this.#at;
  }

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

/**
 * The project's one backoff: `firstMs` after the first failure, doubled per failure after it, at
 * most `maxMs`. Pool creates, `use()` retries and the Redis limiter's reconnects all use it.
 */
export function backoffMs(failures: number, firstMs: number, maxMs: number): number {
  return Math.min(firstMs * 2 ** Math.max(0, failures - 1), maxMs);
}

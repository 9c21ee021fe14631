import { ScopeTurnTimeoutError, type TimerHandle, type Timers } from '../common/index.js';

/** What the turn needs of a scope frame: its place in the chain of enclosing frames. */
export interface TurnFrame {
  readonly parent: TurnFrame | undefined;
}

/**
 * One unit of work holding a scope's connection: a nested `use()` (with a frame, so calls made
 * inside it are known to be its own) or a checkout of a driver face (no frame: the face cannot
 * tell a call its holder makes from a sibling's, so nobody is inside it).
 */
export class TurnUnit {
  /** The unit that held the turn when this one was let in: it holds it again when this one ends. */
  within: TurnUnit | undefined = undefined;
  ended = false;

  constructor(
    /** Calls made under this frame are the unit's own: they go in at once. */
    readonly frame: TurnFrame | undefined,
  ) {}
}

/** A unit waiting for its turn. */
interface TurnWaiter {
  readonly chain: TurnFrame | undefined;
  readonly unit: TurnUnit;
  /** Let in (true), or the scope ended first (false): the caller is outside any scope now. */
  readonly settle: (entered: boolean) => void;
  readonly fail: (err: unknown) => void;
  timer: TimerHandle | undefined;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

/** How long a unit may wait for its turn, and what it is called in the error past that. */
export interface TurnWait {
  readonly timeoutMs: number;
  readonly signal: AbortSignal | undefined;
  /** What waits: "@UsePooled on Ledger.transfer", "a connect() of the pg.Pool face". */
  readonly waiter: string;
  /** The scope it waits in. */
  readonly scope: string;
}

/** Whether `frame` is `chain` or one of the frames that enclose it. */
function encloses(frame: TurnFrame, chain: TurnFrame | undefined): boolean {
  for (let f = chain; f !== undefined; f = f.parent) if (f === frame) return true;
  return false;
}

/**
 * The turn of one scope's exclusive connection: one unit of work at a time. A unit asked for
 * from inside the holder (its own nested call) goes in at once, on top of it; any other waits,
 * first come first served among those that may go, until the holder ends. Concurrent branches of
 * a scope therefore never interleave their transactions or statements on its connection.
 */
export class ScopeTurn {
  #holder: TurnUnit | undefined = undefined;
  readonly #waiting: TurnWaiter[] = [];
  #closed = false;

  constructor(
    readonly pool: string,
    readonly timers: Timers,
  ) {}

  /** Whether a unit asked for under `chain` may go in now. */
  #mayEnter(chain: TurnFrame | undefined): boolean {
    const holder = this.#holder;
    return holder === undefined || (holder.frame !== undefined && encloses(holder.frame, chain));
  }

  /**
   * Lets `unit` in at once when it may go, and returns true; else false, and `wait()` queues it.
   * A closed turn (the scope ended) lets nothing in.
   */
  tryEnter(unit: TurnUnit, chain: TurnFrame | undefined): boolean {
    // No waiter may go now (each change of holder lets the first that may in), so none is passed over.
    if (this.#closed || !this.#mayEnter(chain)) return false;
    this.#enter(unit);
    return true;
  }

  #enter(unit: TurnUnit): void {
    unit.within = this.#holder;
    this.#holder = unit;
  }

  /**
   * Waits until `unit` may go in and lets it in: resolves true; false if the scope ended first.
   * Rejects past the deadline with ScopeTurnTimeoutError, or with the signal's reason.
   */
  wait(unit: TurnUnit, chain: TurnFrame | undefined, how: TurnWait): Promise<boolean> {
    if (this.#closed) return Promise.resolve(false);
    return new Promise<boolean>((resolve, reject) => {
      const since = this.timers.now();
      const waiter: TurnWaiter = {
        chain,
        unit,
        settle: (entered) => {
          this.#forget(waiter);
          resolve(entered);
        },
        fail: (err) => {
          this.#forget(waiter);
          const at = this.#waiting.indexOf(waiter);
          if (at >= 0) this.#waiting.splice(at, 1);
          reject(err);
        },
        timer: undefined,
        signal: how.signal,
        onAbort: undefined,
      };
      if (how.signal?.aborted) return reject(how.signal.reason);
      if (how.timeoutMs !== Infinity) {
        waiter.timer = this.timers.set(() => {
          waiter.timer = undefined;
          waiter.fail(new ScopeTurnTimeoutError(this.pool, how.waiter, how.scope, this.timers.now() - since));
        }, how.timeoutMs);
      }
      if (how.signal !== undefined) {
        const signal = how.signal;
        waiter.onAbort = () => waiter.fail(signal.reason);
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      this.#waiting.push(waiter);
    });
  }

  #forget(waiter: TurnWaiter): void {
    this.timers.clear(waiter.timer);
    waiter.timer = undefined;
    if (waiter.onAbort !== undefined) waiter.signal?.removeEventListener('abort', waiter.onAbort);
    waiter.onAbort = undefined;
  }

  /**
   * `unit` ended. The turn goes back to the unit it was let in over (skipping those that ended
   * while it held), and on to the first waiter that may go.
   */
  leave(unit: TurnUnit): void {
    if (unit.ended) return;
    unit.ended = true;
    while (this.#holder?.ended === true) this.#holder = this.#holder.within;
    this.#pass();
  }

  /** Lets in the first waiter that may go now, if any. */
  #pass(): void {
    const at = this.#waiting.findIndex((w) => this.#mayEnter(w.chain));
    if (at < 0) return;
    const [next] = this.#waiting.splice(at, 1);
    this.#enter(next!.unit);
    next!.settle(true);
  }

  /** The scope ended: waiters go on outside it (each takes its own connection), nothing more gets in. */
  close(): void {
    this.#closed = true;
    for (const w of this.#waiting.splice(0)) w.settle(false);
  }
}

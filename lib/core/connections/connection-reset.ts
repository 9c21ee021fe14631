import { messageOf, type Timers } from '../common/index.js';
import type { Connector, PoolCounters, ResetContext } from '../contracts/index.js';
import type { SharedConnection } from './shared-connection.js';

/** What a reset needs of its pool. */
export interface ResetHost<T> {
  readonly timers: Timers;
  readonly counters: PoolCounters;
  readonly resetTimeoutMs: number;
  /** The reset left `conn` unclean: it must never be handed out again. */
  retire(conn: SharedConnection<T>, detail: string, cause: unknown): void;
  /** The reset is over: the caller's slot on `conn` is given back (to the next caller, or to its close). */
  done(conn: SharedConnection<T>): void;
}

const CLEAN: ResetContext = Object.freeze({ failed: false });
const FAILED: ResetContext = Object.freeze({ failed: true });

/**
 * The connector's `reset()` on an exclusive connection its caller gave back, before anyone else
 * gets it. An answer given at once costs the call and nothing more: the connection goes straight
 * to the next caller. A promise keeps the caller's slot taken until it settles (so nobody gets the
 * connection half clean), bounded by `resetTimeoutMs` so that a reset that hangs holds one
 * connection for that long, never the pool.
 */
export class ConnectionReset<T> {
  constructor(
    /** The connector's reset(), bound to it. */
    readonly reset: NonNullable<Connector<T>['reset']>,
    readonly host: ResetHost<T>,
  ) {}

  /** Resets `conn`, then gives its slot back; `failed`: the caller's code threw. */
  run(conn: SharedConnection<T>, failed: boolean): void {
    let answer: boolean | void | Promise<boolean | void>;
    try {
      answer = this.reset(conn.value as T, failed ? FAILED : CLEAN);
    } catch (err) {
      this.#unclean(conn, err ?? new Error('reset() threw'));
      this.host.done(conn);
      return;
    }
    if (typeof (answer as Promise<unknown> | undefined)?.then !== 'function') {
      if (answer === false) this.#unclean(conn, new Error('reset() returned false'));
      this.host.done(conn);
      return;
    }
    this.host.counters.resets++;
    this.#settle(conn, answer as Promise<boolean | void>);
  }

  /** Waits for a reset's promise within resetTimeoutMs; close() may end the wait at once. */
  #settle(conn: SharedConnection<T>, answer: Promise<boolean | void>): void {
    const { timers, resetTimeoutMs } = this.host;
    let over = false;
    const end = (failure: unknown): void => {
      if (over) return;
      over = true;
      timers.clear(timer);
      conn.endReset = null;
      if (failure !== undefined) this.#unclean(conn, failure);
      this.host.done(conn);
    };
    const timer = timers.set(
      () => end(new Error(`reset() did not settle within resetTimeoutMs (${resetTimeoutMs} ms)`)),
      resetTimeoutMs,
    );
    // The pool is closing: the connection closes anyway, whatever the reset would have said.
    conn.endReset = () => end(undefined);
    Promise.resolve(answer).then(
      (clean) => end(clean === false ? new Error('reset() returned false') : undefined),
      (err: unknown) => end(err ?? new Error('reset() rejected')),
    );
  }

  #unclean(conn: SharedConnection<T>, failure: unknown): void {
    this.host.counters.resetFailures++;
    this.host.retire(conn, `not reset: ${messageOf(failure)}`, failure);
  }
}

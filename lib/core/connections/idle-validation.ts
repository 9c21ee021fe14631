import { validateWithin } from './bounded-calls.js';
import type { Timers } from '../common/index.js';
import type { ConnectionSet } from './connection-set.js';
import type { Connector } from '../contracts/index.js';
import type { ResolvedOptions } from '../options/index.js';
import type { SharedConnection } from './shared-connection.js';

/**
 * The connector's `validate()` on connections that sat idle, run out of band: the connection
 * leaves the index while the check runs (bounded by `validateTimeoutMs`), so no caller waits on
 * it, and `done` reports the outcome once, whatever the waiters did meanwhile.
 */
export class IdleValidation<T> {
  /** The connector validates connections at all (else no connection ever needs it). */
  readonly enabled: boolean;

  constructor(
    readonly connector: Connector<T>,
    readonly options: ResolvedOptions,
    readonly timers: Timers,
    readonly set: ConnectionSet<T>,
    /** The check ended: `failure` is undefined when the connection is alive. */
    readonly done: (conn: SharedConnection<T>, failure: unknown) => void,
    /** A check the pool's close cut short found the connection dead after all. */
    readonly lateFailure: () => void,
  ) {
    this.enabled = connector.validate !== undefined;
  }

  /**
   * An idle connection that has sat idle past validateAfterIdleMs. With 0, only one that served a
   * caller since it was opened or validated: a fresh check is never repeated in a loop.
   */
  needed(conn: SharedConnection<T>): boolean {
    if (!this.enabled) return false;
    const after = this.options.validateAfterIdleMs;
    if (after === 0) return !conn.checked;
    // Idled in this turn of the event loop (not dated yet): idle for no time at all.
    return conn.idleSince !== Infinity && this.timers.now() - conn.idleSince >= after;
  }

  /** Starts the check of `conn` (taken out of the index until it ends). */
  start(conn: SharedConnection<T>): void {
    this.set.startValidation(conn);
    const validate = this.connector.validate!.bind(this.connector);
    conn.endValidation = validateWithin(validate, conn.value as T, this.timers, this.options.validateTimeoutMs, {
      done: (failure) => {
        conn.endValidation = null;
        this.done(conn, failure);
      },
      lateFailure: this.lateFailure,
    });
  }
}

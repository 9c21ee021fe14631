import { closeWithin } from './bounded-calls.js';
import type { Timers } from '../common/index.js';
import type { Connector, PoolCounters } from '../contracts/index.js';
import type { ResolvedOptions } from '../options/index.js';
import type { SharedConnection } from './shared-connection.js';

/** What the closer tells its pool, and needs of it. */
export interface CloserHost<T> {
  readonly timers: Timers;
  readonly counters: PoolCounters;
  /** A value was closed (the opener may see it again if it is not an object). */
  valueClosed(value: T): void;
  /** A connection finished closing and left the pool. */
  connectionClosed(conn: SharedConnection<T>): void;
}

/**
 * Closes connections with the connector's `close()`, each bounded by `closeTimeoutMs`; failures
 * are logged, never thrown. Keeps the closes in flight, so the pool's shutdown can wait for them.
 */
export class ConnectionCloser<T> {
  readonly #pending = new Set<Promise<void>>();

  constructor(
    readonly connector: Connector<T>,
    readonly options: ResolvedOptions,
    readonly host: CloserHost<T>,
  ) {}

  /** Closes a connection that has no client left; it leaves the pool once closed. */
  close(conn: SharedConnection<T>): void {
    conn.state = 'closing';
    const done = this.closeValue(conn.value as T).then(() => {
      conn.state = 'closed';
      this.host.connectionClosed(conn);
    });
    this.#pending.add(done);
    void done.then(() => this.#pending.delete(done));
  }

  /** Calls the connector's close on a value (a connection's, or one that arrived too late). */
  closeValue(value: T): Promise<void> {
    this.host.counters.closed++;
    this.host.valueClosed(value);
    const close = this.connector.close;
    if (close === undefined) return Promise.resolve();
    const { logger, closeTimeoutMs, name } = this.options;
    return closeWithin(close.bind(this.connector), value, this.host.timers, closeTimeoutMs, logger, name);
  }

  /** Settles when every close started so far has. */
  async settled(): Promise<void> {
    await Promise.all([...this.#pending]);
  }
}

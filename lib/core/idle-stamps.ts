import type { TimerHandle, Timers } from './clock.js';
import type { SharedConnection } from './shared-connection.js';

/**
 * Dates connections whose last client left. A clock read costs about as much as the rest of a
 * release, so the connections idled in one turn of the event loop share one read, taken when the
 * turn is done (the clock's `defer`). Until then a connection's `idleSince` is `Infinity`: it
 * reads as idle for no time at all, so idle expiry and validation may come late by what remained
 * of that turn, never early.
 */
export class IdleStamps<T> {
  /** Connections idled since the last stamp (each once). */
  readonly #idled: SharedConnection<T>[] = [];
  /** The pending stamp's timer, on a clock without `defer`. */
  #deferred: TimerHandle | undefined;
  #pending = false;

  constructor(readonly timers: Timers) {}

  /** `conn`'s last client just left. */
  idled(conn: SharedConnection<T>): void {
    conn.idleSince = Infinity;
    if (conn.stampDue) return;
    conn.stampDue = true;
    this.#idled.push(conn);
    if (this.#pending) return;
    this.#pending = true;
    this.#deferred = this.timers.defer(this.#stamp);
  }

  /** No more stamps (the pool is closing): what is left is dated now. */
  stop(): void {
    this.timers.clear(this.#deferred);
    this.#stamp();
  }

  readonly #stamp = (): void => {
    this.#pending = false;
    this.#deferred = undefined;
    const idled = this.#idled;
    if (idled.length === 0) return;
    const now = this.timers.now();
    for (const conn of idled) {
      conn.stampDue = false;
      // One taken again since is dated anyway: its idleSince is read only while it has no client.
      if (conn.idleSince === Infinity) conn.idleSince = now;
    }
    idled.length = 0;
  };
}

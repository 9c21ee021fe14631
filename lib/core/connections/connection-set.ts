import { type Timers, TurnStamps } from '../common/index.js';
import { ConnectionIndex } from './connection-index.js';
import type { SelectionStrategy } from '../options/index.js';
import { SharedConnection } from './shared-connection.js';
import type { ConnectionStats } from '../contracts/index.js';

/**
 * Every connection of a pool from its create until it is closed, the index of those with room,
 * and the counts kept in step with each change of state, so the hot path never scans. The pool
 * owns the object and decides; the set only keeps the books (HikariCP's ConcurrentBag plays this
 * part). Fields are plain so the checkout path reads and bumps them directly.
 */
export class ConnectionSet<T> {
  readonly all = new Set<SharedConnection<T>>();
  /** Ready connections with room, bucketed by client count. */
  readonly index: ConnectionIndex<T>;
  opening = 0;
  ready = 0;
  /** Ready connections whose replacement is opening: the replacement does not count against maxSize. */
  rotations = 0;
  /** Callers holding a lease. */
  clients = 0;
  /** Sum of the limits of ready connections. */
  capacity = 0;
  /** Ready connections out of the index while validate() runs. */
  validating = 0;
  /** Dates the connections whose last client left: one clock read for those of a turn of the event loop. */
  readonly idleStamps: TurnStamps<SharedConnection<T>>;
  #nextId = 1;

  constructor(
    readonly clientLimit: number,
    strategy: SelectionStrategy,
    timers: Timers,
  ) {
    this.index = new ConnectionIndex(clientLimit, strategy);
    this.idleStamps = new TurnStamps(timers, (conns, now) => {
      // One taken again since is dated too: its idleSince is read only while it has no client.
      for (const conn of conns) if (conn.idleSince === Infinity) conn.idleSince = now;
    });
  }

  /**
   * `conn`'s last client left. It is dated idle at the end of the turn; until then its
   * `idleSince` is `Infinity`, which reads as idle for no time at all, so idle expiry and
   * validation may come late by the rest of the turn, never early.
   */
  idled(conn: SharedConnection<T>): void {
    // Already waiting for this turn's stamp: nothing to add.
    if (conn.idleSince === Infinity) return;
    conn.idleSince = Infinity;
    this.idleStamps.add(conn);
  }

  /** Connections counting against maxSize: opening and ready, less ready ones being replaced. */
  get size(): number {
    return this.opening + this.ready - this.rotations;
  }

  /** A new connection, counted as opening; `replaces` is the connection it rotates out, if any. */
  begin(replaces: SharedConnection<T> | null): SharedConnection<T> {
    const conn = new SharedConnection<T>(this.#nextId++, this.clientLimit);
    conn.replaces = replaces;
    if (replaces !== null) {
      replaces.rotating = true;
      this.rotations++;
    }
    this.all.add(conn);
    this.opening++;
    return conn;
  }

  /** Opening → ready, in the index. Returns the connection it replaces (now to retire), if any. */
  opened(conn: SharedConnection<T>, now: number, expiresAt: number): SharedConnection<T> | null {
    this.opening--;
    conn.state = 'ready';
    conn.checked = true;
    conn.createdAt = conn.idleSince = now;
    conn.expiresAt = expiresAt;
    this.ready++;
    this.capacity += conn.limit;
    this.index.add(conn);
    const old = conn.replaces;
    conn.replaces = null;
    return old;
  }

  /** Opening → gone (failed or given up): the connection it was to replace keeps serving. */
  dropOpening(conn: SharedConnection<T>): void {
    this.opening--;
    this.all.delete(conn);
    conn.state = 'closed';
    const old = conn.replaces;
    conn.replaces = null;
    if (old !== null && old.rotating) {
      old.rotating = false;
      this.rotations--;
    }
  }

  /** Ready → draining, out of the index. False if `conn` was not ready (nothing changed). */
  retire(conn: SharedConnection<T>): boolean {
    if (conn.state !== 'ready') return false;
    conn.state = 'draining';
    this.ready--;
    this.capacity -= conn.limit;
    if (conn.rotating) {
      conn.rotating = false;
      this.rotations--;
    }
    this.index.remove(conn);
    return true;
  }

  /** The connector lowered (or raised back) a connection's limit. True if a ready connection changed. */
  setLimit(conn: SharedConnection<T>, limit: number): boolean {
    if (conn.state !== 'ready') {
      conn.limit = limit;
      return false;
    }
    this.capacity += limit - conn.limit;
    conn.limit = limit;
    // A connection being validated is out of the index until its validation ends.
    if (!conn.validating) this.index.update(conn);
    return true;
  }

  /** Takes an idle ready connection out of the index while validate() runs. */
  startValidation(conn: SharedConnection<T>): void {
    conn.validating = true;
    this.validating++;
    this.index.remove(conn);
  }

  /** Its validation ended: a connection still ready goes back into the index, as checked. */
  endValidation(conn: SharedConnection<T>, now: number): void {
    conn.validating = false;
    this.validating--;
    if (conn.state !== 'ready') return;
    conn.checked = true;
    conn.idleSince = now;
    this.index.add(conn);
  }

  /** One row per connection, for stats(). */
  rows(now: number): ConnectionStats[] {
    return [...this.all].map((c) => ({
      id: c.id,
      state: c.state,
      clients: c.clients,
      clientLimit: c.limit,
      uses: c.uses,
      ageMs: c.state === 'opening' || c.state === 'establishing' ? 0 : now - c.createdAt,
      idleMs: c.clients === 0 && c.state === 'ready' ? idleFor(c, now) : 0,
      validating: c.validating,
      resetting: c.endReset !== null,
      rotating: c.rotating,
    }));
  }
}

/** How long `conn` has sat idle at `now`, ms: 0 until its idle stamp (see ConnectionSet.idled). */
export function idleFor(conn: SharedConnection<unknown>, now: number): number {
  return conn.idleSince === Infinity ? 0 : now - conn.idleSince;
}

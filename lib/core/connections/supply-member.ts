import type { MemberLoadFigures, MemberSide } from '../contracts/index.js';
import type { ConnectionSupply } from './connection-supply.js';
import type { SharedConnection } from './shared-connection.js';

/**
 * A pool as its pool group sees it (`pool[kMember]()`): what the group's budget is told of and
 * asks, over the pool's supply. The group measures it at each tick, and takes places back from it.
 */
export class SupplyMember<T> implements MemberSide {
  readonly #supply: ConnectionSupply<T>;

  constructor(supply: ConnectionSupply<T>) {
    this.#supply = supply;
  }

  /** The pool's running counters (`released` measures its hold time). */
  get counters(): { readonly released: number } {
    return this.#supply.counters;
  }

  /** The last failure: of a create, or what retired a connection. */
  get lastError(): unknown {
    return this.#supply.lastError;
  }

  /** How long a create took to be ready, ms, smoothed over the last few; 0 before the first. */
  get connectMs(): number {
    return this.#supply.connectMs;
  }

  maxSizeNow(): number {
    return this.#supply.maxSizeNow;
  }

  /** Opens what the pool's queue needs, if the budget now lets it. */
  demand(): void {
    this.#supply.demand();
  }

  /**
   * retires the idle connection this pool has had longest, if it has
   * had it for at least `minHeldMs`, so that another member can open one. Whether it did.
   */
  retireOldestIdle(minHeldMs: number): boolean {
    const now = this.#supply.timers.now();
    let oldest: SharedConnection<T> | undefined;
    for (const conn of this.#supply.set.all) {
      if (
        conn.state !== 'ready' ||
        conn.clients > 0 ||
        conn.validating ||
        conn.rotating ||
        now - conn.createdAt < minHeldMs
      )
        continue;
      if (oldest === undefined || conn.createdAt < oldest.createdAt) oldest = conn;
    }
    if (oldest === undefined) return false;
    this.#supply.retire(oldest, 'group', 'taken by another pool or instance sharing its budget');
    return true;
  }

  /**
   * gives back a burst's connections. Retires idle connections that
   * have been idle for at least `idleMs`, longest idle first, until the pool has `keep` ready ones.
   * How many it retired.
   */
  shrinkTo(keep: number, idleMs: number, who: string): number {
    const now = this.#supply.timers.now();
    const idle = [...this.#supply.set.all].filter(
      (c) => c.state === 'ready' && c.clients === 0 && !c.validating && !c.rotating && now - c.idleSince >= idleMs,
    );
    const excess = Math.min(idle.length, this.#supply.set.ready - keep);
    if (excess <= 0) return 0;
    idle.sort((a, b) => a.idleSince - b.idleSince);
    for (const conn of idle.slice(0, excess))
      this.#supply.retire(conn, 'idle', `idle ${now - conn.idleSince} ms: ${who} gives it back`);
    return excess;
  }

  /** callers queued now. */
  waiting(): number {
    return this.#supply.host.waiting();
  }

  /** Callers holding a lease now. */
  clientCount(): number {
    return this.#supply.set.clients;
  }

  /** Connections ready to serve. */
  readyCount(): number {
    return this.#supply.set.ready;
  }

  /** Every connection, opening and closing ones included. */
  connectionCount(): number {
    return this.#supply.set.all.size;
  }

  /** how long the caller queued longest has waited, ms; 0 with none. */
  waitedMs(): number {
    const since = this.#supply.host.waitedSince();
    return since === undefined ? 0 : this.#supply.timers.now() - since;
  }

  /** what this pool holds, as its planner weighs it (`stealable`: idle, held at least `minHeldMs`). */
  load(minHeldMs: number): MemberLoadFigures {
    const now = this.#supply.timers.now();
    let inUse = 0;
    let stealable = 0;
    let oldestMs = 0;
    for (const conn of this.#supply.set.all) {
      if (conn.state !== 'ready') continue;
      const age = now - conn.createdAt;
      oldestMs = Math.max(oldestMs, age);
      if (conn.clients > 0) inUse++;
      else if (!conn.validating && !conn.rotating && age >= minHeldMs) stealable++;
    }
    return { connections: this.#supply.set.all.size, opening: this.#supply.set.opening, inUse, stealable, oldestMs };
  }
}

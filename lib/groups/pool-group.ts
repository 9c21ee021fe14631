import { ConnectionPool, PoolClosedError, PoolConfigError, type Lease, type PoolStats, type TimerHandle, type UseOptions } from '../core/index.js';
import { Timers } from '../core/clock.js';
import { kBudget, kMember, type BudgetMember, type ConnectionBudget, type MemberSide } from '../core/connection-budget.js';
import { planAcquire, planMembers, planRebalance, planRelease, type Hunger, type MemberLoad, type PlanSettings } from './group-planner.js';
import { resolveGroupOptions, type PoolGroupOptions, type ResolvedGroupOptions } from './group-options.js';

/** One member: a pool of one key (tenant, database), and what the group measures of it. */
interface Member<T> {
  readonly key: string;
  readonly pool: ConnectionPool<T>;
  readonly side: MemberSide;
  /** Mean hold time of its leases, ms (sampled: connection-busy time over releases). */
  holdMs: number;
  /** For the sampling: `released` and the time at the last sample. */
  lastReleased: number;
  busyMs: number;
  /** Slots freed for this member that it has not opened yet. */
  reserved: number;
  /** It reported a queue it could not serve. */
  starved: boolean;
  /** When it was last asked for a connection. */
  lastUsed: number;
}

/** A member in the group's stats. */
export interface PoolGroupMemberStats {
  readonly key: string;
  readonly quota: number;
  readonly hunger: Hunger;
  /** Mean hold time the planner weighs the member by, ms. */
  readonly holdMs: number;
  readonly pool: PoolStats;
}

/** What `group.stats()` returns. */
export interface PoolGroupStats {
  readonly name: string;
  readonly maxTotal: number;
  /** Connections of every member, from the start of their create to the end of their close. */
  readonly total: number;
  readonly members: PoolGroupMemberStats[];
}

/**
 * Many pools, one per key (a tenant, a database), sharing one budget of connections (seed 004):
 * `maxTotal` across all of them, as the database server or PgBouncer caps it. Members are made on
 * first use from `connector(key)` and forgotten once idle for `memberIdleMs`. While the budget has
 * room, members open connections as they need them; once it is spent, the planner shares it in
 * proportion to each member's demand: a hungry member takes an idle connection of an overfull
 * one, a connection an overfull member gives back goes to the hungriest member that waits, and a
 * timer rebalances the rest. No connection changes member before the minimum hold time.
 */
export class PoolGroup<T> implements ConnectionBudget {
  readonly options: ResolvedGroupOptions<T>;
  readonly #members = new Map<string, Member<T>>();
  /** Member by its pool's supply (what the engine hands the budget). */
  readonly #bySupply = new Map<BudgetMember, Member<T>>();
  readonly #timers: Timers;
  #timer: TimerHandle | undefined;
  #total = 0;
  #reservedTotal = 0;
  #closed = false;

  constructor(options: PoolGroupOptions<T>) {
    this.options = resolveGroupOptions(options);
    this.#timers = new Timers(this.options.clock);
    this.#schedule();
  }

  get name(): string {
    return this.options.name;
  }

  /** Runs `fn` with a connection of member `key` (see `ConnectionPool.use`). */
  use<R>(key: string, fn: (conn: T) => R | Promise<R>, options?: UseOptions): Promise<R> {
    const member = this.#member(key);
    if (member instanceof Error) return Promise.reject(member);
    return member.pool.use(fn, options);
  }

  /** Checks out a connection of member `key`. Release the lease when done. */
  acquire(key: string, options?: UseOptions): Promise<Lease<T>> {
    const member = this.#member(key);
    if (member instanceof Error) return Promise.reject(member);
    return member.pool.acquire(options);
  }

  /** The budget, and every member with its share and its pool's stats. */
  stats(): PoolGroupStats {
    this.#sample();
    const loads = this.#loads();
    const plans = new Map(planMembers(loads, this.#plan()).map((p) => [p.key, p]));
    const members = [...this.#members.values()].map((m) => {
      const plan = plans.get(m.key)!;
      return { key: m.key, quota: plan.quota, hunger: plan.hunger, holdMs: m.holdMs, pool: m.pool.stats() };
    });
    return { name: this.name, maxTotal: this.options.maxTotal, total: this.#total, members };
  }

  /** Closes every member (see `ConnectionPool.close`); the group takes no more calls. */
  async close(options?: { graceMs?: number }): Promise<void> {
    this.#closed = true;
    this.#timers.clear(this.#timer);
    await Promise.all([...this.#members.values()].map((m) => m.pool.close(options)));
  }

  // ---- the budget, as the member pools see it -------------------------------------------------

  /** @internal */
  mayOpen(supply: BudgetMember): boolean {
    const own = this.#bySupply.get(supply)?.reserved ?? 0;
    return this.#total + this.#reservedTotal - own < this.options.maxTotal;
  }

  /** @internal */
  began(supply: BudgetMember): void {
    this.#total++;
    const member = this.#bySupply.get(supply);
    if (member !== undefined && member.reserved > 0) {
      member.reserved--;
      this.#reservedTotal--;
    }
  }

  /** @internal */
  ended(): void {
    this.#total--;
    if (this.#closed) return;
    // A freed place goes to the member it was freed for, else to the hungriest that waits.
    const waiting = [...this.#members.values()].filter((m) => m.starved);
    if (waiting.length === 0) return;
    const plans = new Map(planMembers(this.#loads(), this.#plan()).map((p) => [p.key, p]));
    waiting.sort((a, b) => b.reserved - a.reserved || plans.get(b.key)!.score - plans.get(a.key)!.score);
    for (const m of waiting) {
      if (m.side.waiting() === 0) m.starved = false;
      else m.side.demand();
    }
  }

  /** @internal */
  starved(supply: BudgetMember): void {
    const member = this.#bySupply.get(supply);
    if (member === undefined || this.#closed) return;
    member.starved = true;
    if (member.reserved > 0) return; // a place is on its way
    const plan = planAcquire(member.key, this.#loads(), this.#plan());
    if (plan.kind === 'steal') this.#take(plan.from, member);
  }

  /** @internal */
  yields(supply: BudgetMember): boolean {
    const member = this.#bySupply.get(supply);
    // Unconstrained, or nobody waits for a place: the member keeps its connection.
    if (member === undefined || this.#closed || this.#total < this.options.maxTotal || !this.#anyStarvedBut(member)) return false;
    const plan = planRelease(member.key, Number.POSITIVE_INFINITY, this.#loads(), this.#plan());
    if (plan.kind !== 'transfer') return false;
    this.#reserve(this.#members.get(plan.to)!);
    return true;
  }

  // ---- members --------------------------------------------------------------------------------

  #member(key: string): Member<T> | Error {
    if (this.#closed) return new PoolClosedError(this.name);
    if (typeof key !== 'string' || key.length === 0) return new PoolConfigError(this.name, 'key', `must be a non-empty string naming the member (a tenant, a database), got ${typeof key === 'string' ? 'an empty string' : typeof key}`, 'group');
    let member = this.#members.get(key);
    if (member === undefined) {
      const o = this.options;
      const pool = new ConnectionPool(o.connector(key), { ...o.member, name: `${o.name}:${key}`, clock: o.clock, logger: o.logger, minSize: 0, growAt: 1, [kBudget]: this } as never);
      const side = pool[kMember]();
      member = { key, pool, side, holdMs: 0, lastReleased: 0, busyMs: 0, reserved: 0, starved: false, lastUsed: 0 };
      this.#members.set(key, member);
      this.#bySupply.set(side, member);
    }
    member.lastUsed = this.#timers.now();
    return member;
  }

  /** Frees a place for `taker`: the idle connection `from` has held longest goes, once past the minimum hold. */
  #take(from: string, taker: Member<T>): void {
    const victim = this.#members.get(from);
    if (victim !== undefined && victim.side.retireOldestIdle(this.options.minHoldMs)) this.#reserve(taker);
  }

  #reserve(member: Member<T>): void {
    member.reserved++;
    this.#reservedTotal++;
  }

  #anyStarvedBut(member: Member<T>): boolean {
    for (const m of this.#members.values()) if (m !== member && m.starved && m.side.waiting() > 0) return true;
    return false;
  }

  #plan(): PlanSettings {
    const o = this.options;
    return { maxTotal: o.maxTotal, clientLimit: o.member.clientLimit ?? 1, minHoldMs: o.minHoldMs };
  }

  #loads(): MemberLoad[] {
    return [...this.#members.values()].map((m) => ({ key: m.key, ...m.side.load(this.options.minHoldMs), waiting: m.side.waiting(), holdMs: m.holdMs }));
  }

  /**
   * Hold time by sampling, off the hot path: the connection-busy time since the last sample
   * (connections in use × the time between samples) over the leases released meanwhile.
   */
  #sample(): void {
    for (const m of this.#members.values()) {
      const released = m.side.counters.released - m.lastReleased;
      if (released > 0 && m.busyMs > 0) {
        const hold = m.busyMs / released;
        m.holdMs = m.holdMs === 0 ? hold : 0.7 * m.holdMs + 0.3 * hold;
        m.busyMs = 0;
        m.lastReleased = m.side.counters.released;
      }
    }
  }

  /** Every `rebalanceIntervalMs`: sample, rebalance when the budget is spent, forget idle members. */
  #schedule(): void {
    this.#timer = this.#timers.set(() => {
      if (this.#closed) return;
      this.#tick();
      this.#schedule();
    }, this.options.rebalanceIntervalMs);
  }

  #tick(): void {
    const o = this.options;
    const now = this.#timers.now();
    for (const m of this.#members.values()) m.busyMs += m.side.load(o.minHoldMs).inUse * o.rebalanceIntervalMs;
    this.#sample();
    if (this.#total >= o.maxTotal) {
      for (const t of planRebalance(this.#loads(), this.#plan())) this.#take(t.from, this.#members.get(t.to)!);
    }
    for (const m of [...this.#members.values()]) {
      if (now - m.lastUsed < o.memberIdleMs || m.side.waiting() > 0 || m.side.load(0).connections > 0 || m.reserved > 0) continue;
      this.#members.delete(m.key);
      this.#bySupply.delete(m.side);
      void m.pool.close();
    }
  }
}

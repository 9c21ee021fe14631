import {
  type AcquireOptions,
  type BudgetMember,
  type ConnectionBudget,
  ConnectionPool,
  DEFAULT_HEALTH_THRESHOLDS,
  kBudget,
  type Lease,
  PoolClosedError,
  type PoolHealth,
  type TimerHandle,
  Timers,
  type UseOptions,
  utilizationHealth,
} from '../core/index.js';
import { planMembers, type MemberLoad, type PlanSettings } from './group-planner.js';
import { PlaceTransfers } from './place-transfers.js';
import { resolveGroupOptions, type PoolGroupOptions, type ResolvedGroupOptions } from './group-options.js';
import { GroupMetrics } from './group-metrics.js';
import { GroupMembers } from './group-members.js';
import { measureMember, recurring, type Member } from './group-member.js';
import type { PoolGroupMemberStats, PoolGroupStats, PoolGroupSummary } from './group-stats.js';
import { summarizeMembers } from './group-summary.js';

/**
 * Many pools, one per key (a tenant, a database), sharing one budget of connections:
 * `maxTotal` across all of them, as the database server or PgBouncer caps it. Members are made on
 * first use from `connector(key)` and forgotten once idle for `memberIdleMs`. While the budget has
 * room, members open connections as they need them; once it is spent, the planner shares it in
 * proportion to each member's demand: a hungry member takes an idle connection of an overfull
 * one, a connection an overfull member gives back goes to the hungriest member that waits, and a
 * timer retries for members still waiting. No connection changes member before the minimum hold.
 */
export class PoolGroup<T> {
  readonly options: ResolvedGroupOptions<T>;
  /** The members, one pool per key. */
  readonly #members: GroupMembers<T>;
  readonly #timers: Timers;
  #timer: TimerHandle | undefined;
  /** Connections of every member, opening and closing ones included. */
  #total = 0;
  /** Connections members gave back after a burst. */
  #givenBack = 0;
  /** Places moving between members once the budget is spent. */
  readonly #transfers: PlaceTransfers<Member<T>>;
  #closed = false;
  #closing: Promise<void> | undefined;
  /** The budget the group shares beyond its own (a FleetBudget), as its members' pools would see it. */
  readonly #fleet: ConnectionBudget | undefined;
  /** The budget as the member pools see it (kept off the group's public face): the group's, then the fleet's. */
  readonly #budget: ConnectionBudget = {
    mayOpen: (supply) => this.#total < this.options.maxTotal && this.#fleet?.mayOpen(supply) !== false,
    began: (supply) => {
      this.#fleet?.began(supply);
      this.#began(supply);
    },
    ended: (supply) => {
      this.#fleet?.ended(supply);
      this.#ended(supply);
    },
    connected: (supply) => {
      this.#fleet?.connected(supply);
      this.#members.connected();
    },
    starved: (supply) => {
      this.#fleet?.starved(supply);
      this.#starved(supply);
    },
    yields: (supply, heldMs) => this.#yields(supply, heldMs) || this.#fleet?.yields(supply, heldMs) === true,
    quiet: (supply) => {
      this.#fleet?.quiet(supply);
      this.#members.quiet();
    },
    // Its members' stats name the fleet's budget, held back while the fleet's places are asked for.
    name: () => this.#fleet?.name?.(),
    asking: () => this.#fleet?.asking?.() === true,
  };

  readonly #metrics: GroupMetrics | undefined;

  constructor(options: PoolGroupOptions<T>) {
    this.options = resolveGroupOptions(options);
    this.#fleet = this.options.budget?.[kBudget];
    // The group counts as one pool on the fleet's budget for as long as it is open, whatever members come and go.
    this.#fleet?.attached?.(this.#asMember);
    this.#timers = new Timers(this.options.clock);
    this.#metrics = GroupMetrics.of(this.options.metrics, this, this.options.name);
    const o = this.options;
    this.#members = new GroupMembers(o, this.#timers, this.#budget, (m) => this.#transfers.forget(m));
    this.#transfers = new PlaceTransfers({
      maxTotal: o.maxTotal,
      clientLimit: o.member.clientLimit,
      // While members wait for a place in the fleet's budget, the group shares what it holds as
      // it shares a spent maxTotal: a hungrier member may take an overfull one's connection.
      total: () => (this.#fleet?.asking?.() === true ? Math.max(this.#total, o.maxTotal) : this.#total),
      members: () => this.#members.values(),
      loads: (members, minHoldMs) => this.#loads(members, minHoldMs),
      settings: () => this.#plan(),
      now: () => this.#timers.now(),
    });
    this.#schedule();
  }

  get name(): string {
    return this.options.name;
  }

  /**
   * Runs `fn` with a connection of member `key` (see `ConnectionPool.use`). A new key while the
   * group has its `maxMembers` members, each with callers, waits for a member place within the
   * call's deadline.
   */
  use<R>(key: string, fn: (conn: T) => R | Promise<R>, options?: UseOptions): Promise<R> {
    const member = this.#members.take(key);
    if (member instanceof Error) return Promise.reject(member);
    if (member !== undefined) return member.pool.use(fn, options);
    return this.#members.waitForPlace(key, options, (pool, timeoutMs) => pool.use(fn, { ...options, timeoutMs }));
  }

  /** Checks out a connection of member `key`; a new key may wait for a member place (see `use`). Release the lease when done. */
  acquire(key: string, options?: AcquireOptions): Promise<Lease<T>> {
    const member = this.#members.take(key);
    if (member instanceof Error) return Promise.reject(member);
    if (member !== undefined) return member.pool.acquire(options);
    return this.#members.waitForPlace(key, options, (pool, timeoutMs) => pool.acquire({ ...options, timeoutMs }));
  }

  /** The pool of member `key`, if the group has one now. */
  member(key: string): ConnectionPool<T> | undefined {
    return this.#members.get(key)?.pool;
  }

  /** The budget, and every member with its share and its pool's stats. */
  stats(): PoolGroupStats {
    const settings = this.#plan();
    const plans = new Map(
      planMembers(this.#loads([...this.#members.values()], settings.minHoldMs), settings).map((p) => [p.key, p]),
    );
    let clients = 0;
    let waiting = 0;
    const giveBackBase = this.#giveBackBase();
    const members = [...this.#members.values()].map((m) => {
      const plan = plans.get(m.key)!;
      const pool = m.pool.stats();
      clients += pool.clients;
      waiting += pool.waiting;
      return {
        key: m.key,
        quota: plan.quota,
        hunger: plan.hunger,
        holdMs: m.holdMs,
        giveBackMs: m.giveBack.delayMs(giveBackBase),
        givenBack: m.giveBack.given,
        pool,
      };
    });
    return { ...this.#figures(clients, waiting, allFailing(members), settings.minHoldMs), members };
  }

  /**
   * The group at a glance, cheap at any size (the dashboard's view): the figures of `stats()`, and
   * of the members only the `rows` most in trouble (waiting, hungry, busiest; then the most
   * recently used), read without a pool report each, with the quotas as planned within the last
   * second. With 10 000 members it costs a few ms where `stats()` costs a pool report per member.
   */
  summary(rows: number): PoolGroupSummary {
    // Planned within the last second: planning weighs every member, and a page needs no fresher quotas.
    const shares = this.#transfers.shares(1_000);
    // Most recently used first (the map keeps them by last use, oldest first).
    const {
      clients,
      waiting,
      ready,
      lastError,
      hungry,
      allFailing,
      rows: members,
    } = summarizeMembers([...this.#members.values()].reverse(), (m, w) => shares.hungerOf(m, w), rows);
    return {
      ...this.#figures(clients, waiting, allFailing, this.#minHold()),
      memberCount: this.#members.size,
      ready,
      clients,
      lastError,
      hungry,
      members,
    };
  }

  /** The group's health: `failing` when every member with callers fails to connect, else from its utilization (`exhausted` with the budget spent and callers waiting). */
  health(): PoolHealth {
    return this.stats().health;
  }

  /** Closes every member (see `ConnectionPool.close`); the group takes no more calls. Calling it again returns the same close. */
  close(options?: { graceMs?: number }): Promise<void> {
    this.#closing ??= this.#shutdown(options);
    return this.#closing;
  }

  async #shutdown(options: { graceMs?: number } | undefined): Promise<void> {
    this.#closed = true;
    this.#timers.clear(this.#timer);
    this.#metrics?.stop();
    await this.#members.close(() => new PoolClosedError(this.name), options);
    this.#fleet?.detached?.(this.#asMember);
  }

  /** The group as one pool on the fleet's budget, for its count of pools. */
  readonly #asMember: BudgetMember = { demand: () => {} };

  // ---- the budget, as the member pools see it -------------------------------------------------

  /** A member begins a connection: one place more; if it gave connections back lately, too early. */
  #began(supply: BudgetMember): void {
    this.#total++;
    // Only a member that gave connections back lately learns from it, so the base (a look at
    // every member's connect time) is read then, not on every create.
    const giveBack = this.#members.bySide(supply)?.giveBack;
    if (giveBack?.judging === true)
      giveBack.began(this.#timers.now(), this.#giveBackBase(), this.options.member.maxIdleMs);
  }

  /** A place is free: it goes to the hungriest member that waits for one. */
  #ended(supply: BudgetMember): void {
    this.#total--;
    const member = this.#members.bySide(supply);
    if (member !== undefined) this.#transfers.ended(member);
    if (!this.#closed) this.#transfers.handOut();
  }

  /** A member has callers it cannot serve and the budget is spent: take a place for it. */
  #starved(supply: BudgetMember): void {
    const member = this.#members.bySide(supply);
    if (member !== undefined && !this.#closed) this.#transfers.starved(member);
  }

  /** Whether the connection a member's last client leaves goes to a hungrier member. */
  #yields(supply: BudgetMember, heldMs: number): boolean {
    const member = this.#members.bySide(supply);
    return member !== undefined && !this.#closed && this.#transfers.yields(member, heldMs);
  }

  /** The minimum hold in force: the configured floor, or the slowest member's connect time if longer. */
  #minHold(): number {
    return Math.max(this.options.minHoldMs, this.#members.slowestConnectMs());
  }

  /** The shortest give-back delay: the option, or the minimum hold in force and three rebalance intervals. */
  #giveBackBase(): number {
    return this.options.giveBackAfterMs ?? Math.max(this.#minHold(), 3 * this.options.rebalanceIntervalMs);
  }

  #plan(): PlanSettings {
    const o = this.options;
    return { maxTotal: o.maxTotal, clientLimit: o.member.clientLimit, minHoldMs: this.#minHold() };
  }

  /** The planner's view of `members`: `stealable` counts idle connections held at least `minHoldMs`. */
  #loads(members: readonly Member<T>[], minHoldMs: number): MemberLoad[] {
    const now = this.#timers.now();
    return members.map((m) => {
      const load = m.side.load(minHoldMs);
      const waiting = m.side.waiting();
      return {
        key: m.key,
        ...load,
        waiting,
        holdMs: m.holdMs,
        recentNeed: m.recentNeed,
        waitedMs: m.side.waitedMs(),
        recurring: recurring(m, now, minHoldMs),
      };
    });
  }

  /** What stats() and summary() both say of the group, from the members' callers. */
  #figures(clients: number, waiting: number, allFailing: boolean, minHoldMs: number): Omit<PoolGroupStats, 'members'> {
    const utilization = clients / (this.options.maxTotal * this.options.member.clientLimit);
    return {
      name: this.name,
      maxTotal: this.options.maxTotal,
      clientLimit: this.options.member.clientLimit,
      total: this.#total,
      waiting,
      transfers: this.#transfers.transfers,
      givenBack: this.#givenBack,
      forgotten: this.#members.forgotten,
      utilization,
      health: this.#healthOf(utilization, waiting, allFailing),
      minHoldMs,
    };
  }

  #healthOf(utilization: number, waiting: number, allFailing: boolean): PoolHealth {
    if (allFailing) return 'failing';
    if (waiting > 0 && this.#total >= this.options.maxTotal) return 'exhausted';
    return utilizationHealth(utilization, { ...DEFAULT_HEALTH_THRESHOLDS, ...this.options.member.health });
  }

  /** Every `rebalanceIntervalMs`: sample, retry for members still waiting, forget idle members. */
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
    for (const m of this.#members.values()) measureMember(m, o.rebalanceIntervalMs, o.member.clientLimit);
    // Places go to members that wait, and members still waiting once the budget is spent take
    // what they could not take before (too young). Not ahead of demand: the simulation scores
    // closing idle places before anyone waits lower (members arriving and leaving: 72.8 → 65.9), as it adds churn.
    this.#transfers.tick();
    // A burst's connections go back to the server once its demand has fallen (see give-back.ts).
    // Not while members wait: then places change member by the planner's rules (minimum hold, quotas).
    const base = this.#giveBackBase();
    if (base !== Infinity && !this.#members.anyWaiting())
      for (const m of this.#members.values()) this.#givenBack += m.giveBack.tick(now, m.side, m.keptNeed, base);
    this.#members.forgetIdle(now);
    this.#members.quiet(); // a backstop: new keys that wait look again
  }
}

/** Whether every member with callers fails to connect (and there is one). */
function allFailing(members: readonly PoolGroupMemberStats[]): boolean {
  const calling = members.filter((m) => m.pool.clients + m.pool.waiting > 0);
  return calling.length > 0 && calling.every((m) => m.pool.health === 'failing');
}

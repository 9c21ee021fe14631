import {
  type AcquireOptions,
  type BudgetMember,
  type ConnectionBudget,
  ConnectionPool,
  kBudget,
  kMember,
  PoolClosedError,
  PoolConfigError,
  type Timers,
} from '../core/index.js';
import type { ResolvedGroupOptions } from './group-options.js';
import { GiveBack } from './give-back.js';
import type { Member } from './group-member.js';
import { MemberWaiters } from './member-waiters.js';

/**
 * A group's members, one pool per key: made on first use (a new key waits for a member place
 * while the group has `maxMembers` members, each with callers), kept in order of last use so that
 * the member used longest ago is the first to go, and forgotten once idle or evicted.
 */
export class GroupMembers<T> {
  /** By key, in order of last use (oldest first). */
  readonly #byKey = new Map<string, Member<T>>();
  /** By the side its pool hands the budget. */
  readonly #bySide = new Map<BudgetMember, Member<T>>();
  /** Calls for new keys waiting for a member place (maxMembers). */
  readonly #keyWaiters: MemberWaiters;
  #serveSoon = false;
  #closed = false;
  /** Members closed and forgotten since the start. */
  forgotten = 0;
  /** The slowest member's connect time, ms, until a member connects or is forgotten: every member would be read to know it. */
  #slowestConnectMs: number | undefined = 0;

  constructor(
    readonly options: ResolvedGroupOptions<T>,
    readonly timers: Timers,
    /** The budget every member pool shares. */
    readonly budget: ConnectionBudget,
    /** A member is forgotten: the group lets go of what it knew of it. */
    readonly forgetting: (member: Member<T>) => void,
  ) {
    const o = options;
    this.#keyWaiters = new MemberWaiters(timers, o.name, o.maxMembers, o.maxWaiting, o.rebalanceIntervalMs);
  }

  get size(): number {
    return this.#byKey.size;
  }

  /** Every member, the one used longest ago first. */
  values(): IterableIterator<Member<T>> {
    return this.#byKey.values();
  }

  /** The member of `key`, if there is one now. */
  get(key: string): Member<T> | undefined {
    return this.#byKey.get(key);
  }

  /** The member whose pool handed the budget `side`. */
  bySide(side: BudgetMember): Member<T> | undefined {
    return this.#bySide.get(side);
  }

  /** The member of `key`, made if there is room; undefined when a new key must wait for a member place (`waitForPlace`). */
  take(key: string): Member<T> | Error | undefined {
    if (this.#closed) return new PoolClosedError(this.options.name);
    if (typeof key !== 'string' || key.length === 0) {
      const got = typeof key === 'string' ? 'an empty string' : typeof key;
      return new PoolConfigError(
        this.options.name,
        'key',
        `must be a non-empty string naming the member (a tenant, a database), got ${got}`,
        'group',
      );
    }
    const member = this.#byKey.get(key);
    if (member !== undefined) return this.#touch(member);
    // Those that came first have the first places.
    if (this.#keyWaiters.length > 0) return undefined;
    return this.#admit(key);
  }

  /** A new key waits for a member place, then goes on in the same turn, within its deadline. */
  waitForPlace<R>(
    key: string,
    options: AcquireOptions | undefined,
    go: (pool: ConnectionPool<T>, timeoutMs: number) => Promise<R>,
  ): Promise<R> {
    const timeoutMs = options?.timeoutMs ?? this.options.member.acquireTimeoutMs;
    return this.#keyWaiters.wait(key, timeoutMs, options?.signal, (left) =>
      go(this.#touch(this.#byKey.get(key)!).pool, left),
    );
  }

  /** The members that freed a place may let new keys in: looked at once the current turn ends. */
  quiet(): void {
    if (this.#keyWaiters.length === 0 || this.#serveSoon) return;
    this.#serveSoon = true;
    queueMicrotask(() => {
      this.#serveSoon = false;
      if (!this.#closed)
        this.#keyWaiters.serve(
          (key) => this.#byKey.has(key),
          (key) => this.#admit(key) !== undefined,
        );
    });
  }

  /** Whether any member has callers queued. */
  anyWaiting(): boolean {
    for (const m of this.#byKey.values()) if (m.side.waiting() > 0) return true;
    return false;
  }

  /** The slowest member's connect time, ms (read anew once a member connects or is forgotten). */
  slowestConnectMs(): number {
    if (this.#slowestConnectMs === undefined) {
      let connect = 0;
      for (const m of this.#byKey.values()) connect = Math.max(connect, m.side.connectMs);
      this.#slowestConnectMs = connect;
    }
    return this.#slowestConnectMs;
  }

  /** A member connected: its connect time changed. */
  connected(): void {
    this.#slowestConnectMs = undefined;
  }

  /** Forgets the members unused for `memberIdleMs` that have no caller and no connection. */
  forgetIdle(now: number): void {
    for (const m of [...this.#byKey.values()]) {
      if (now - m.lastUsed < this.options.memberIdleMs || m.side.waiting() > 0 || m.side.load(0).connections > 0)
        continue;
      this.#forget(m);
    }
  }

  /** No new member from now on: waiting keys fail with `error()`, and every member closes. */
  close(error: () => unknown, options: { graceMs?: number } | undefined): Promise<unknown> {
    this.#closed = true;
    this.#keyWaiters.close(error);
    return Promise.all([...this.#byKey.values()].map((m) => m.pool.close(options)));
  }

  /** `member` is used now: it goes to the back of the map, which keeps members by last use (eviction takes from the front). */
  #touch(member: Member<T>): Member<T> {
    const now = this.timers.now();
    if (member.lastUsed === now) return member; // already in its place for this instant
    const gap = now - member.lastUsed;
    member.gapMs = member.gapMs === Infinity ? gap : member.gapMs + (gap - member.gapMs) * 0.1;
    member.lastUsed = now;
    this.#byKey.delete(member.key);
    this.#byKey.set(member.key, member);
    return member;
  }

  /** A new member for `key`, evicting the member used longest ago that has no caller if the group is full; undefined if none may go. */
  #admit(key: string): Member<T> | undefined {
    const o = this.options;
    if (this.#byKey.size >= o.maxMembers && !this.#evictOne()) return undefined;
    // Members record no metrics unless asked (member.metrics): a series per tenant would be unbounded.
    const member = {
      metrics: false,
      ...o.member,
      name: `${o.name}:${key}`,
      clock: o.clock,
      logger: o.logger,
      minSize: 0,
      growAt: 1,
      [kBudget]: this.budget,
    };
    const pool = new ConnectionPool(o.connector(key), member as never);
    const side = pool[kMember]();
    const made: Member<T> = {
      key,
      pool,
      side,
      quota: 0,
      demand: 0,
      keeps: 0,
      holdMs: 0,
      lastReleased: 0,
      busyMs: 0,
      recentNeed: 0,
      keptNeed: 0,
      giving: 0,
      lastUsed: this.timers.now(),
      gapMs: Infinity,
      giveBack: new GiveBack(),
    };
    this.#byKey.set(key, made);
    this.#bySide.set(side, made);
    return made;
  }

  /**
   * Makes room for a new member: the member used longest ago that has no caller is closed and
   * forgotten. Whether there was one. The members are in order of last use, so this is the first
   * without a caller: one look while the oldest are idle, however many members there are.
   */
  #evictOne(): boolean {
    for (const m of this.#byKey.values()) {
      if (m.side.waiting() > 0 || m.side.load(Infinity).inUse > 0) continue;
      this.#forget(m);
      return true;
    }
    return false;
  }

  #forget(m: Member<T>): void {
    if (m.side.connectMs === this.#slowestConnectMs) this.#slowestConnectMs = undefined;
    this.#byKey.delete(m.key);
    this.#bySide.delete(m.side);
    this.forgetting(m);
    this.forgotten++;
    void m.pool.close();
  }
}

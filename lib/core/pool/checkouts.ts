import type { AcquireOptions } from '../options/index.js';
import { type Admission, type Connector, type HandleLending, type PoolCounters } from '../contracts/index.js';
import { messageOf, PoolClosedError, QueueFullError, SelfDeadlockError, type Timers } from '../common/index.js';
import { ConnectionReset, type ConnectionSupply, type SharedConnection } from '../connections/index.js';
import { events, type PoolTracing } from '../observation/index.js';
import type { PoolQueue, Waiter } from '../waiting/index.js';
import { kAdmitted, kCheckin, kCheckinFailed, Lease, type LeaseOwner, type LeaseWatch } from './lease.js';
import type { PoolObservers } from './pool-observers.js';
import type { ReportedPool } from './pool-report.js';
import { scopeLeases } from './pool-use.js';

/** The pool as the queue's gate sees it: its reports, and itself, the key of its scopes. */
type QueuedPool = ReportedPool & {
  readonly pool: object;
  /** The application's tracing (a span for each wait), or null. */
  readonly tracing: PoolTracing | null;
};

/**
 * Checkout and checkin, the hot path. A caller takes the best ready connection with room; else it
 * queues, and the queue's demand opens connections. A client that leaves hands its slot straight
 * to the head of the queue, and a finished create serves the queue in order (`dispatch`): a caller
 * never waits for "its own" create, and nothing polls. Every lease of the pool is given back here.
 */
export class Checkouts<T> implements LeaseOwner<T> {
  /** Whether a lease is timed or tracked (else the hot path makes a bare Lease). */
  measures: boolean;
  /** use() scopes of the pool running now: only then can a caller deadlock on its own lease. */
  scopesLive = 0;
  /** Told when the last client leaves a pool that is closing. */
  onIdle: (() => void) | undefined;

  readonly #supply: ConnectionSupply<T>;
  /** The supply's connections and counts, read and bumped on every checkout and checkin. */
  readonly #set: ConnectionSupply<T>['set'];
  readonly #backoff: ConnectionSupply<T>['backoff'];
  /** Clients per capacity at which one more connection opens ahead of demand (Infinity: never). */
  readonly #growLoad: number;
  /** A bounded queue (maxWaiting) or controlled waiting makes #wait() look closer at every caller. */
  readonly #mayRefuse: boolean;
  /** Cleans a connection its caller gave back, when the connector resets connections. */
  readonly #reset: ConnectionReset<T> | undefined;
  /** No reset and no group budget: a release without a watch or a listener is a bare checkin. */
  readonly #plainCheckin: boolean;

  readonly name: string;
  readonly lending: HandleLending | undefined;
  /** The pool's running counters (the same object as `pool.counters`, read here without a hop). */
  readonly counters: PoolCounters;
  readonly #acquireTimeoutMs: number;

  constructor(
    connector: Connector<T>,
    /** The callers waiting, with their deadlines and abort listeners. */
    readonly waiters: PoolQueue<Lease<T>>,
    readonly timers: Timers,
    /** Health over time, metrics and the leases out. */
    readonly observers: PoolObservers,
    /** The pool as queueRefusal() sees it: its options, supply and counters. */
    readonly pool: QueuedPool,
  ) {
    const o = pool.options;
    const supply = pool.supply as ConnectionSupply<T>;
    this.name = o.name;
    const lends = connector.lendsHandles;
    this.lending = lends === true ? {} : typeof lends === 'object' ? lends : undefined;
    this.counters = pool.counters;
    this.#acquireTimeoutMs = o.acquireTimeoutMs;
    this.#supply = supply;
    this.#set = supply.set;
    this.#backoff = supply.backoff;
    this.measures = observers.measures;
    this.#growLoad = o.growAt < 1 ? o.growAt : Infinity;
    this.#mayRefuse = o.maxWaiting !== Infinity || o.waiting.mode === 'controlled';
    this.#reset =
      connector.reset === undefined
        ? undefined
        : new ConnectionReset(connector.reset.bind(connector), {
            timers,
            counters: this.counters,
            resetTimeoutMs: o.resetTimeoutMs,
            retire: (conn, detail, cause) => {
              o.logger.warn(`pool "${o.name}": connection ${conn.id} retired, ${detail}`);
              supply.retire(conn, 'reset', detail, cause);
            },
            done: (conn) => this.#checkin(conn),
          });
    this.#plainCheckin = this.#reset === undefined && supply.budget === undefined && o.maxUses === Infinity;
  }

  /**
   * The common case in one step (the pool calls it with no options, no limiter, not traced): a
   * ready connection with room that needs no validation first, or, when callers already wait, a
   * place at the back of the queue if nothing refuses one. Undefined: take the general path.
   */
  now(): Promise<Lease<T>> | undefined {
    const lease = this.leaseNow();
    if (lease !== undefined) return Promise.resolve(lease);
    if (this.waiters.length === 0 || this.#mayRefuseQueue()) return undefined;
    return this.#join(undefined, undefined);
  }

  /** The lease `now()` would give at once, without a promise; undefined when a caller waits or none is ready. */
  leaseNow(): Lease<T> | undefined {
    if (this.waiters.length !== 0) return undefined;
    const conn = this.#set.index.pick();
    // As #pick(): only an idle connection may need validating first (the general path starts it).
    if (conn === null || (conn.clients === 0 && this.#supply.validation.enabled)) return undefined;
    this.#checkedOut(conn);
    return this.#leaseOf(conn, undefined);
  }

  /** Takes a ready connection, else waits (the wait starts creates). `admission`: the limiter's, for the lease. */
  acquire(options: AcquireOptions | undefined, admission?: Admission): Promise<Lease<T>> {
    // A queued waiter means no connection has room: never barge past it.
    const lease = this.#checkoutNow();
    if (lease === undefined) return this.#wait(options, admission);
    if (admission !== undefined) lease[kAdmitted](admission);
    return Promise.resolve(lease);
  }

  /** Serves queued waiters from connections with room, in order; then opens what is missing. */
  dispatch(): void {
    while (this.waiters.length > 0) {
      const conn = this.#pick();
      if (conn === null) break;
      const w = this.waiters.next()!;
      w.resolve(this.#checkout(conn, w));
    }
    this.#supply.fill();
  }

  /** A lease of a ready connection with room, taken now, when no caller waits. */
  #checkoutNow(): Lease<T> | undefined {
    if (this.waiters.length !== 0) return undefined;
    const conn = this.#pick();
    return conn === null ? undefined : this.#checkout(conn, undefined);
  }

  /** The best connection with room, validating (out of band) any that sat idle too long. */
  #pick(): SharedConnection<T> | null {
    const index = this.#set.index;
    let conn = index.pick();
    // Each validation takes the connection out of the index, so this loop ends.
    const validation = this.#supply.validation;
    while (conn !== null && conn.clients === 0 && validation.needed(conn)) {
      validation.start(conn);
      conn = index.pick();
    }
    return conn;
  }

  /** `waiter`: the queued caller it serves, if any (its wait is measured from its stamp). */
  #checkout(conn: SharedConnection<T>, waiter: Waiter<Lease<T>> | undefined): Lease<T> {
    this.#checkedOut(conn);
    return this.#leaseOf(conn, waiter);
  }

  /** The books of a checkout of `conn`: its client, the counts, its place in the index. */
  #checkedOut(conn: SharedConnection<T>): void {
    const set = this.#set;
    conn.clients++;
    conn.uses++;
    conn.checked = false;
    set.clients++;
    this.counters.acquired++;
    set.index.update(conn);
    if (set.clients >= set.capacity * this.#growLoad) this.#supply.grow();
  }

  /** The lease of a checkout (published to listeners; timed or tracked when asked). */
  #leaseOf(conn: SharedConnection<T>, waiter: Waiter<Lease<T>> | undefined): Lease<T> {
    if (events.acquire.hasSubscribers)
      events.acquire.publish({ pool: this.name, connectionId: conn.id, clients: conn.clients });
    const lease = !this.measures
      ? new Lease(this, conn)
      : this.observers.timedOnly
        ? this.observers.timedLease(this, conn, waiter)
        : this.observers.lease(this, conn, waiter);
    const admission = waiter?.admission;
    if (admission !== undefined) {
      waiter!.admission = undefined;
      lease[kAdmitted](admission);
    }
    return lease;
  }

  /** @internal Called by {@link Lease.release}. */
  [kCheckin](conn: SharedConnection<T>, watch: LeaseWatch | undefined, since: number, thrown: boolean): void {
    // The common case in one step: nothing tracked, published, reset or shared with a group (timed or not).
    if (watch === undefined && this.#plainCheckin && !events.release.hasSubscribers) {
      this.counters.released++;
      if (!Number.isNaN(since)) this.observers.timedBack(since);
      this.#checkin(conn);
      return;
    }
    this.#givenBack(conn, watch, since, false);
    // A pool group's member may hand the connection's place to a hungrier member.
    const budget = this.#supply.budget;
    if (
      budget !== undefined &&
      conn.clients === 1 &&
      conn.state === 'ready' &&
      budget.yields(this.#supply.member, this.timers.now() - conn.createdAt)
    )
      this.#supply.retire(conn, 'group', 'its place went to another pool or instance sharing its budget');
    const maxUses = this.pool.options.maxUses;
    if (conn.uses >= maxUses && conn.state === 'ready') {
      this.#supply.retire(conn, 'lifetime', `it served its maxUses of ${maxUses} checkouts`);
    }
    // A connection that stays in service is cleaned before anyone else gets it; a retired one just closes.
    if (this.#reset !== undefined && conn.state === 'ready') this.#reset.run(conn, thrown);
    else this.#checkin(conn);
  }

  /** @internal Called by {@link Lease.fail}: the connection is retired, then given back. */
  [kCheckinFailed](conn: SharedConnection<T>, failure: unknown, watch: LeaseWatch | undefined, since: number): void {
    this.#givenBack(conn, watch, since, true);
    this.#supply.retire(conn, 'failed', failure === undefined ? 'failed by its user' : messageOf(failure), failure);
    this.#checkin(conn);
  }

  /** A lease is given back, failed or not: counted, its hold timed (`since` not NaN) or tracked, published. */
  #givenBack(conn: SharedConnection<T>, watch: LeaseWatch | undefined, since: number, failed: boolean): void {
    this.counters.released++;
    if (watch !== undefined || !Number.isNaN(since)) this.observers.returned(watch, since);
    if (events.release.hasSubscribers) events.release.publish({ pool: this.name, connectionId: conn.id, failed });
  }

  /** A client leaves `conn`: its slot goes straight to the head of the queue, or back to the index. */
  #checkin(conn: SharedConnection<T>): void {
    const set = this.#set;
    if (conn.state === 'ready') {
      // Hand the slot straight to the head of the queue (unless the connector lowered the limit).
      const w = this.waiters.length !== 0 && conn.clients <= conn.limit ? this.waiters.next() : null;
      if (w !== null) {
        conn.uses++;
        this.counters.acquired++;
        w.resolve(this.#leaseOf(conn, w));
        return;
      }
      conn.clients--;
      set.clients--;
      if (conn.clients === 0) set.idled(conn);
      set.index.update(conn);
      if (set.clients === 0) this.#supply.budget?.quiet(this.#supply.member);
      return;
    }
    conn.clients--;
    set.clients--;
    if (conn.clients === 0 && conn.state === 'draining') this.#supply.closer.close(conn);
    if (set.clients === 0) {
      this.onIdle?.();
      this.#supply.budget?.quiet(this.#supply.member);
    }
  }

  /**
   * Every way into the queue passes here, so each re-checks what refuses a caller. `admission`:
   * the limiter's, for the lease; given back if the caller gets no connection.
   */
  #wait(options: AcquireOptions | undefined, admission: Admission | undefined): Promise<Lease<T>> {
    const signal = options?.signal;
    if (this.pool.isClosed() || signal !== undefined || this.#mayRefuseQueue()) {
      const refusal = queueRefusal(this.pool, this.scopesLive, signal);
      if (refusal !== undefined) {
        admission?.release();
        return Promise.reject(refusal);
      }
    }
    return this.#join(options, admission);
  }

  /** Whether queueRefusal() could refuse a caller of an open pool without a signal: one cheap test keeps the common case short. */
  #mayRefuseQueue(): boolean {
    return this.#backoff.open || this.#mayRefuse || this.scopesLive > 0;
  }

  /** Queues a caller nothing refuses, and opens what the queue needs. */
  #join(options: AcquireOptions | undefined, admission: Admission | undefined): Promise<Lease<T>> {
    const timeoutMs = options?.timeoutMs ?? this.#acquireTimeoutMs;
    const promise = this.waiters.join(
      timeoutMs,
      options?.signal,
      this.measures ? this.observers.stackOfWaiter() : undefined,
      admission,
    );
    this.#supply.demand();
    const tracing = this.pool.tracing;
    return tracing === null ? promise : tracing.waited(this.name, 'connection', timeoutMs, promise);
  }
}

/**
 * Why a caller may not queue, if it may not: the pool closed, its signal aborted, the breaker of
 * failing creates is open (see `blockingPeriod`), the queue is full or stands, or the caller's own `use()`
 * scopes hold every slot it could ever get (it would wait for itself). `scopesLive`: use() scopes
 * of the pool running now; only then can a caller deadlock on its own lease.
 */
function queueRefusal(pool: QueuedPool, scopesLive: number, signal: AbortSignal | undefined): unknown {
  const o = pool.options;
  if (pool.isClosed()) return new PoolClosedError(o.name);
  if (signal?.aborted) {
    pool.counters.aborted++;
    return signal.reason;
  }
  const { set, backoff } = pool.supply;
  if (backoff.blocks(set.ready === 0, set.opening)) {
    pool.counters.failedFast++;
    return backoff.failFast(set.opening);
  }
  // Callers may also wait for the slots that connections opening or still to open will bring.
  const maxSize = pool.supply.maxSizeNow;
  const slotsToCome = (set.opening + Math.max(0, maxSize - set.size)) * pool.supply.perConnection;
  if (o.maxWaiting !== Infinity && pool.waiting() >= o.maxWaiting + slotsToCome)
    return new QueueFullError(o.name, o.maxWaiting);
  // A queue stands only for the connections there are: while more may open, callers wait for them.
  if (slotsToCome === 0 && o.waiting.mode === 'controlled') {
    const standing = pool.queue.shed();
    if (standing !== undefined) return new QueueFullError(o.name, o.maxWaiting, standing);
  }
  if (scopesLive > 0 && set.clients > 0 && set.opening === 0 && set.validating === 0 && set.size >= maxSize) {
    const own = scopeLeases(pool.pool);
    if (own > 0 && own >= set.clients) return new SelfDeadlockError(o.name, own, maxSize, o.clientLimit);
  }
  return undefined;
}

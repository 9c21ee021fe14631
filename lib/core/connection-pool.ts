import { setMaxListeners } from 'node:events';
import { checkAcquireOptions, checkCloseOptions, checkUseOptions, isCheckedOnce, type AcquireOptions, type CloseOptions, type UseOptions } from './call-options.js';
import { ProcessHold, Timers, type TimerHandle } from './clock.js';
import { kBudget, kMember, type ConnectionBudget, type MemberSide } from './connection-budget.js';
import { ConnectionReset } from './connection-reset.js';
import { ConnectionSupply } from './connection-supply.js';
import type { Connector } from './connector.js';
import { ConnectionsExhaustedError, PoolClosedError, PoolContextError } from './errors.js';
import { messageOf } from './scrub.js';
import { shown } from './option-rules.js';
import { events } from './pool-events.js';
import { PoolObservers } from './pool-observers.js';
import type { Admission, AdmissionLimiter } from './admission.js';
import { AdmissionGate, type GatedPool } from './admission-gate.js';
import { kAdmitted, kCheckin, kCheckinFailed, Lease, type LeaseOwner, type LeaseWatch } from './lease.js';
import { resolveOptions, type PoolOptions, type ResolvedOptions } from './options.js';
import { kUseOn, runUse, type MethodBody, type MethodPool, type UsingPool } from './pool-use.js';
import { findScope } from './pool-use.js';
import type { SharedConnection } from './shared-connection.js';
import type { PoolHealth } from './health.js';
import type { PoolStats } from './stats.js';
import { exhaustedReason, healthFigures, healthOf, newCounters, statsOf, type ReportedPool } from './pool-report.js';
import { PoolQueue } from './pool-queue.js';
import { queueRefusal } from './queue-refusal.js';
import type { TimingWatch } from './timing-watch.js';
import type { Waiter } from './waiter-queue.js';

/**
 * A pool of shared connections: each serves up to `clientLimit` callers at once.
 *
 * Acquire reads as three steps: take the best ready connection with room; else make sure enough
 * creates are under way; else wait in a FIFO queue that releases and creates serve in order.
 * This file keeps the public API and that state machine (the queue side); where connections come
 * from and go is the ConnectionSupply's, admission the AdmissionGate's, the waiting callers the
 * PoolQueue's (who may join it is queueRefusal's), and use() with its retries is pool-use's (see
 * the README's map).
 */
export class ConnectionPool<T> implements LeaseOwner<T>, MethodPool {
  /** The pool's options after defaults. */
  readonly options: ResolvedOptions;
  readonly #limiter: AdmissionLimiter | undefined;
  /** The limiter in front of the pool, when there is one. */
  readonly #gate: AdmissionGate<T> | undefined;
  readonly #timers: Timers;
  /** The callers waiting, with their deadlines and abort listeners. */
  readonly #waiters: PoolQueue<Lease<T>>;
  readonly #supply: ConnectionSupply<T>;
  /** The supply's connections and counts, read and bumped on the hot path. */
  readonly #set: ConnectionSupply<T>['set'];
  readonly #backoff: ConnectionSupply<T>['backoff'];
  /** The pool as its collaborators see it (admission, use(), the reports), each through its own interface. */
  readonly #inside: GatedPool<T> & UsingPool<T> & ReportedPool;
  /** use() scopes of this pool running now: only then can a caller deadlock on its own lease. */
  #scopesLive = 0;
  /** A bounded queue (maxWaiting) makes #wait() look closer at every caller. */
  readonly #mayRefuse: boolean;
  /** Clients per capacity at which one more connection opens ahead of demand (Infinity: never). */
  readonly #growLoad: number;
  /** Cleans a connection its caller gave back, when the connector resets connections. */
  readonly #reset: ConnectionReset<T> | undefined;
  /** No reset and no group budget: a release without a watch or a listener is a bare checkin. */
  readonly #plainCheckin: boolean;

  #closed = false;
  #closing: Promise<void> | undefined;
  /** Aborted by close(): admissions still waiting in the limiter and use() pauses give up at once. */
  readonly #closeSignal = new AbortController();
  /** Pending acquires and a close in progress keep the process alive; an idle pool does not. */
  readonly #holds: ProcessHold;
  #onIdle: (() => void) | undefined;

  readonly #counters = newCounters();
  /** Health over time, metrics and the leases out. */
  readonly #observers: PoolObservers;
  /** Whether a lease is timed or tracked (else the hot path makes a bare Lease). */
  #measures: boolean;

  constructor(connector: Connector<T>, options: PoolOptions = {}) {
    const o = (this.options = resolveOptions(options, connector));
    this.#limiter = o.limiter;
    const timers = (this.#timers = new Timers(o.clock));
    this.#holds = new ProcessHold(timers);
    const budget = (options as { [kBudget]?: ConnectionBudget })[kBudget];
    this.#waiters = new PoolQueue(timers, this.#holds, this.#counters, () => this.#timedOut(), budget && (() => budget.quiet(this.#supply)));
    this.#mayRefuse = o.maxWaiting !== Infinity;
    this.#growLoad = o.growAt < 1 ? o.growAt : Infinity;
    // Every admission waiting in the limiter listens here: as many as there are callers, not a leak.
    setMaxListeners(0, this.#closeSignal.signal);
    this.#supply = new ConnectionSupply(connector, o, timers, this.#counters, {
      isClosed: () => this.#closed,
      waiting: () => this.#waiters.length,
      waitedSince: () => this.#waiters.head?.since,
      dispatch: () => this.#dispatch(),
      swept: () => this.#observers.swept(healthFigures(this.#inside)),
      failQueue: (error) => {
        for (let w = this.#waiters.next(); w !== null; w = this.#waiters.next()) {
          this.#counters.failedFast++;
          w.fail(error());
        }
      },
    }, budget);
    this.#set = this.#supply.set;
    this.#backoff = this.#supply.backoff;
    this.#observers = new PoolObservers(o, this.#counters, this, timers, () => (this.#measures = this.#observers.measures));
    this.#measures = this.#observers.measures;
    this.#supply.metrics = this.#observers.timed;
    this.#inside = {
      pool: this,
      name: o.name,
      options: o,
      acquireTimeoutMs: o.acquireTimeoutMs,
      logger: o.logger,
      connector,
      timers,
      counters: this.#counters,
      supply: this.#supply as ConnectionSupply<unknown>,
      limiter: this.#limiter,
      closeSignal: this.#closeSignal.signal,
      isClosed: () => this.#closed,
      waiting: () => this.#waiters.length,
      oldestLeaseMs: () => this.#observers.oldestLeaseMs(),
      hold: () => this.#holds.hold(),
      unhold: () => this.#holds.unhold(),
      stats: () => this.stats(),
      acquire: (options) => this.#acquire(options),
      acquireConnection: (options, admission) => this.#acquireConnection(options, admission),
      scopes: (delta) => void (this.#scopesLive += delta),
    };
    this.#gate = this.#limiter === undefined ? undefined : new AdmissionGate(this.#inside, this.#limiter);
    this.#reset = connector.reset === undefined ? undefined : new ConnectionReset(connector.reset.bind(connector), {
      timers,
      counters: this.#counters,
      resetTimeoutMs: o.resetTimeoutMs,
      retire: (conn, detail, cause) => {
        o.logger.warn(`pool "${o.name}": connection ${conn.id} retired, ${detail}`);
        this.#supply.retire(conn, 'reset', detail, cause);
      },
      done: (conn) => this.#checkin(conn),
    });
    this.#plainCheckin = this.#reset === undefined && budget === undefined;
    this.#supply.keeper.start();
  }

  /** The pool's name. */
  get name(): string {
    return this.options.name;
  }

  /** Whether `close()` was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * The connection of the enclosing `use()` (or `@UsePooled` method) of this pool.
   * @throws PoolContextError outside such a scope.
   */
  get current(): T {
    const frame = findScope(this);
    if (frame === undefined) throw new PoolContextError(this.name);
    return frame.lease.connection as T;
  }

  /**
   * The lease of the enclosing `use()` (or `@UsePooled` method) of this pool: its `signal` (stop
   * the work when it aborts) and its `fence` (the fencing token, with the Redis limiter).
   * @throws PoolContextError outside such a scope.
   */
  get currentLease(): Lease<T> {
    const frame = findScope(this);
    if (frame === undefined) throw new PoolContextError(this.name, 'pool.currentLease');
    return frame.lease as Lease<T>;
  }

  /** @internal A pool group's view of this member pool. */
  [kMember](): MemberSide {
    return this.#supply;
  }

  /** Checks out a connection. Release the lease when done (or `await using` it). */
  acquire(options?: AcquireOptions): Promise<Lease<T>> {
    // The common cases in one step: no options, no limiter, nothing timed or traced; then a ready
    // connection with room that needs no validation first, or, when callers already wait, a place
    // at the back of the queue if nothing refuses one. Through the general path's five nested calls
    // the one-caller bench ran about 5 % slower (alternating one-shot processes), and the queue's
    // 2-4 % slower with 100 callers (variants alternating in one process).
    if (options === undefined && this.#gate === undefined && !this.#measures && !this.#closed && !events.acquireTrace.hasSubscribers && !events.acquire.hasSubscribers) {
      if (this.#waiters.length === 0) {
        const conn = this.#set.index.pick();
        // As #pick(): only an idle connection may need validating first (the general path starts it).
        if (conn !== null && (conn.clients !== 0 || !this.#supply.validation.enabled)) {
          this.#checkedOut(conn);
          return Promise.resolve(new Lease(this, conn));
        }
      } else if (!this.#mayRefuseQueue()) return this.#join(undefined, undefined);
    }
    if (options !== undefined) {
      const invalid = checkAcquireOptions(this.name, options);
      if (invalid !== undefined) return Promise.reject(invalid);
    }
    return this.#acquire(options);
  }

  /** `acquire()` with options already checked (`use()` checks them once for all its tries), traced while a tracer listens. */
  #acquire(options: AcquireOptions | undefined): Promise<Lease<T>> {
    if (!events.acquireTrace.hasSubscribers) return this.#acquireUntraced(options);
    const context = { pool: this.name, timeoutMs: options?.timeoutMs, key: options?.key };
    return events.acquireTrace.tracePromise(() => this.#acquireUntraced(options), context);
  }

  #acquireUntraced(options: AcquireOptions | undefined): Promise<Lease<T>> {
    if (this.#closed) return Promise.reject(new PoolClosedError(this.name));
    const signal = options?.signal;
    if (signal?.aborted) {
      this.#counters.aborted++;
      return Promise.reject(signal.reason);
    }
    if (this.#gate !== undefined) return this.#gate.acquire(options);
    return this.#acquireConnection(options);
  }

  /**
   * Runs `fn` with a connection and releases it whatever happens. Inside, `pool.current` is the
   * connection, and a nested `use()` of this pool reuses the lease unless `propagation: 'new'`
   * (or `'none'`: no scope at all, the connection is only `fn`'s argument).
   */
  use<R>(fn: (conn: T) => R | Promise<R>, options?: UseOptions): Promise<R> {
    if (typeof fn !== 'function') return Promise.reject(new TypeError(`pool "${this.name}": use() takes the function to run with a connection first, got ${shown(fn)}`));
    const invalid = this.#invalidUse(options);
    if (invalid !== undefined) return Promise.reject(invalid);
    // runUse's own promise, not another one around it (an async method returning it adds one, and two turns).
    return runUse(this.#inside, fn, options);
  }

  /** The error of use() options, if they are wrong; none for options checked once for many calls. */
  #invalidUse(options: UseOptions | undefined): Error | undefined {
    return options === undefined || isCheckedOnce(options) ? undefined : checkUseOptions(this.name, options);
  }

  /** @internal `use()` of a decorated method: see {@link kUseOn}. */
  [kUseOn]<R>(body: MethodBody<unknown, R>, self: unknown, args: unknown[], options: UseOptions | undefined): Promise<R> {
    const invalid = this.#invalidUse(options);
    if (invalid !== undefined) return Promise.reject(invalid);
    return runUse(this.#inside, body as MethodBody<T, R>, options, self, args);
  }

  /** Opens connections until `minSize` are ready; rejects with the first create failure. */
  async warmup(): Promise<void> {
    this.#holds.hold();
    try {
      await this.#supply.warmup();
    } finally {
      this.#holds.unhold();
    }
  }

  /**
   * Retires every connection: ready ones take no new clients and close once idle; ones still
   * opening (their create began before the refresh) are retired as soon as they are ready.
   */
  refresh(): void {
    this.#supply.refresh();
  }

  /**
   * Stops the pool: new acquires and queued waiters get `PoolClosedError`; leases get up to
   * `graceMs` to finish; then every connection closes, including creates still in flight.
   */
  close(options: CloseOptions = {}): Promise<void> {
    const invalid = checkCloseOptions(this.name, options);
    if (invalid !== undefined) return Promise.reject(invalid);
    if (this.#closing === undefined && events.poolClose.hasSubscribers) events.poolClose.publish({ pool: this.name });
    this.#closing ??= this.#shutdown(options.graceMs ?? 10_000);
    return this.#closing;
  }

  /** Health from utilization: see the README's table. */
  health(): PoolHealth {
    return healthOf(this.#inside);
  }

  /** A snapshot of counts, counters and one row per connection. */
  stats(): PoolStats {
    return statsOf(this.#inside);
  }

  /**
   * Starts timing every wait and hold of this pool for a watcher (the dashboard), until the
   * watch is stopped. While no watch is open the pool times nothing for it.
   */
  watchTimings(): TimingWatch {
    return this.#observers.watches.open();
  }

  // ---- checkout / checkin: the hot path -------------------------------------------------------

  /** Step 1 of 3 is to take a ready connection; else wait (the wait starts creates). */
  #acquireConnection(options: AcquireOptions | undefined, admission?: Admission): Promise<Lease<T>> {
    // A queued waiter means no connection has room: never barge past it.
    const lease = this.#checkoutNow();
    if (lease === undefined) return this.#wait(options, admission);
    if (admission !== undefined) lease[kAdmitted](admission);
    return Promise.resolve(lease);
  }

  /** A lease of a ready connection with room, taken now, when no caller waits. */
  #checkoutNow(): Lease<T> | undefined {
    if (this.#waiters.length !== 0) return undefined;
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
    this.#counters.acquired++;
    set.index.update(conn);
    if (set.clients >= set.capacity * this.#growLoad) this.#supply.grow();
  }

  /** The lease of a checkout (published to listeners; timed or tracked when asked). */
  #leaseOf(conn: SharedConnection<T>, waiter: Waiter<Lease<T>> | undefined): Lease<T> {
    if (events.acquire.hasSubscribers) events.acquire.publish({ pool: this.name, connectionId: conn.id, clients: conn.clients });
    const lease = this.#measures ? this.#observers.lease(this, conn, waiter) : new Lease(this, conn);
    const admission = waiter?.admission;
    if (admission !== undefined) {
      waiter!.admission = undefined;
      lease[kAdmitted](admission);
    }
    return lease;
  }

  /** @internal Called by {@link Lease.release}. */
  [kCheckin](conn: SharedConnection<T>, watch: LeaseWatch | undefined, thrown: boolean): void {
    // The common case in one step: nothing timed, published, reset or shared with a group.
    if (watch === undefined && this.#plainCheckin && !events.release.hasSubscribers) {
      this.#counters.released++;
      this.#checkin(conn);
      return;
    }
    this.#givenBack(conn, watch, false);
    // A pool group's member may hand the connection's place to a hungrier member.
    const budget = this.#supply.budget;
    if (budget !== undefined && conn.clients === 1 && conn.state === 'ready' && budget.yields(this.#supply, this.#timers.now() - conn.createdAt)) this.#supply.retire(conn, 'group', 'its place went to another member of the group');
    // A connection that stays in service is cleaned before anyone else gets it; a retired one just closes.
    if (this.#reset !== undefined && conn.state === 'ready') this.#reset.run(conn, thrown);
    else this.#checkin(conn);
  }

  /** @internal Called by {@link Lease.fail}: the connection is retired, then given back. */
  [kCheckinFailed](conn: SharedConnection<T>, failure: unknown, watch: LeaseWatch | undefined): void {
    this.#givenBack(conn, watch, true);
    this.#supply.retire(conn, 'failed', failure === undefined ? 'failed by its user' : messageOf(failure), failure);
    this.#checkin(conn);
  }

  /** A lease is given back, failed or not: counted, its hold timed or tracked, published. */
  #givenBack(conn: SharedConnection<T>, watch: LeaseWatch | undefined, failed: boolean): void {
    this.#counters.released++;
    if (watch !== undefined) this.#observers.returned(watch);
    if (events.release.hasSubscribers) events.release.publish({ pool: this.name, connectionId: conn.id, failed });
  }

  /** A client leaves `conn`: its slot goes straight to the head of the queue, or back to the index. */
  #checkin(conn: SharedConnection<T>): void {
    const set = this.#set;
    if (conn.state === 'ready') {
      // Hand the slot straight to the head of the queue (unless the connector lowered the limit).
      const w = this.#waiters.length !== 0 && conn.clients <= conn.limit ? this.#waiters.next() : null;
      if (w !== null) {
        conn.uses++;
        this.#counters.acquired++;
        w.resolve(this.#leaseOf(conn, w));
        return;
      }
      conn.clients--;
      set.clients--;
      if (conn.clients === 0) set.idled(conn);
      set.index.update(conn);
      if (set.clients === 0) this.#supply.budget?.quiet(this.#supply);
      return;
    }
    conn.clients--;
    set.clients--;
    if (conn.clients === 0 && conn.state === 'draining') this.#supply.closer.close(conn);
    if (set.clients === 0) {
      this.#onIdle?.();
      this.#supply.budget?.quiet(this.#supply);
    }
  }

  /**
   * Every way into the queue passes here, so each re-checks what refuses a caller. `admission`:
   * the limiter's, for the lease; given back if the caller gets no connection.
   */
  #wait(options: AcquireOptions | undefined, admission: Admission | undefined): Promise<Lease<T>> {
    const signal = options?.signal;
    if (this.#closed || signal !== undefined || this.#mayRefuseQueue()) {
      const refusal = queueRefusal(this.#inside, this.#scopesLive, signal);
      if (refusal !== undefined) {
        admission?.release();
        return Promise.reject(refusal);
      }
    }
    return this.#join(options, admission);
  }

  /** Whether queueRefusal() could refuse a caller of an open pool without a signal: one cheap test keeps the common case short. */
  #mayRefuseQueue(): boolean {
    return this.#backoff.open || this.#mayRefuse || this.#scopesLive > 0;
  }

  /** Queues a caller nothing refuses, and opens what the queue needs. */
  #join(options: AcquireOptions | undefined, admission: Admission | undefined): Promise<Lease<T>> {
    const promise = this.#waiters.join(options?.timeoutMs ?? this.options.acquireTimeoutMs, options?.signal, this.#measures ? this.#observers.stackOfWaiter() : undefined, admission);
    this.#supply.demand();
    return promise;
  }

  /** Serves queued waiters from connections with room, in order; then opens what is missing. */
  #dispatch(): void {
    while (this.#waiters.length > 0) {
      const conn = this.#pick();
      if (conn === null) break;
      const w = this.#waiters.next()!;
      w.resolve(this.#checkout(conn, w));
    }
    this.#supply.fill();
  }

  // ---- deadlines ------------------------------------------------------------------------------

  /** The errors of callers whose deadline passed, each told how the pool looked then. */
  #timedOut(): (w: Waiter<Lease<T>>) => ConnectionsExhaustedError {
    const snapshot = this.stats(); // one per sweep: a snapshot costs O(connections)
    const reason = exhaustedReason(this.#inside);
    const cause = reason === 'creates-failing' ? this.#backoff.lastFailure : undefined;
    return (w) => new ConnectionsExhaustedError(this.name, reason, w.timeoutMs, snapshot, cause);
  }

  // ---- shutdown -------------------------------------------------------------------------------

  async #shutdown(graceMs: number): Promise<void> {
    const timers = this.#timers;
    this.#closed = true;
    this.#holds.hold();
    this.#supply.debug(`closing: ${this.#set.clients} clients get up to ${graceMs} ms`);
    this.#waiters.close(() => new PoolClosedError(this.name));
    this.#closeSignal.abort(new PoolClosedError(this.name));
    // No caller is left to serve: creates in flight are given up now, and arrive to be closed.
    this.#supply.stop();

    let graceTimer: TimerHandle | undefined;
    await new Promise<void>((resolve) => {
      if (this.#set.clients === 0) return resolve();
      this.#onIdle = resolve;
      graceTimer = timers.set(resolve, graceMs);
    });
    timers.clear(graceTimer);
    this.#onIdle = undefined;
    await this.#supply.closeAll();
    this.#observers.stop();
    this.#supply.debug('closed');
    this.#holds.unhold();
  }
}

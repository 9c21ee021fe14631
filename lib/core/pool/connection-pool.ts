import { setMaxListeners } from 'node:events';
import {
  type AcquireOptions,
  checkAcquireOptions,
  checkCloseOptions,
  checkUseOptions,
  type CloseOptions,
  isCheckedOnce,
  type PoolOptions,
  type ResolvedOptions,
  resolveOptions,
  type UseOptions,
} from '../options/index.js';
import {
  ConnectionsExhaustedError,
  PoolClosedError,
  PoolContextError,
  ProcessHold,
  shown,
  type TimerHandle,
  Timers,
} from '../common/index.js';
import {
  type AdmissionLimiter,
  type ConnectionBudget,
  type Connector,
  kBudget,
  kMember,
  type MemberSide,
  type PoolHealth,
  type PoolStats,
} from '../contracts/index.js';
import { ConnectionSupply, SupplyMember } from '../connections/index.js';
import { detachedConnector, events, globalTracing, type TimingWatch } from '../observation/index.js';
import { PoolObservers } from './pool-observers.js';
import { AdmissionGate, type GatedPool } from './admission-gate.js';
import type { Lease } from './lease.js';
import {
  enterUnit,
  findScope,
  kConnector,
  kEnterUnit,
  kLeaseNow,
  kUseOn,
  type MethodBody,
  type MethodPool,
  runUse,
  type ScopeUnit,
  type UsingPool,
} from './pool-use.js';
import { exhaustedReason, healthFigures, healthOf, newCounters, statsOf, type ReportedPool } from './pool-report.js';
import { PoolQueue, type Waiter } from '../waiting/index.js';
import { Checkouts } from './checkouts.js';

/**
 * A pool of shared connections: each serves up to `clientLimit` callers at once.
 *
 * Acquire reads as three steps: take the best ready connection with room; else make sure enough
 * creates are under way; else wait in a FIFO queue that releases and creates serve in order.
 * This file keeps the public API and wires the parts: checkout and checkin (the hot path, who may
 * queue) are the Checkouts', where connections come from and go the ConnectionSupply's,
 * admission the AdmissionGate's, the waiting callers the PoolQueue's, and use() with its retries
 * pool-use's (see the map in docs/internals.md).
 */
export class ConnectionPool<T> implements MethodPool {
  /** The pool's options after defaults. */
  readonly options: ResolvedOptions;
  readonly #limiter: AdmissionLimiter | undefined;
  /** The limiter in front of the pool, when there is one. */
  readonly #gate: AdmissionGate<T> | undefined;
  readonly #timers: Timers;
  /** The callers waiting, with their deadlines and abort listeners. */
  readonly #waiters: PoolQueue<Lease<T>>;
  readonly #supply: ConnectionSupply<T>;
  readonly #connector: Connector<T>;
  /** Checkout and checkin: the hot path, and the owner of every lease. */
  readonly #checkouts: Checkouts<T>;
  /** The pool as its collaborators see it (admission, use(), the reports), each through its own interface. */
  readonly #inside: GatedPool<T> & UsingPool<T> & ReportedPool;

  #closed = false;
  #closing: Promise<void> | undefined;
  /** Aborted by close(): admissions still waiting in the limiter and use() pauses give up at once. */
  readonly #closeSignal = new AbortController();
  /** Pending acquires and a close in progress keep the process alive; an idle pool does not. */
  readonly #holds: ProcessHold;

  readonly #counters = newCounters();
  /** Health over time, metrics and the leases out. */
  readonly #observers: PoolObservers;

  constructor(connector: Connector<T>, options: PoolOptions = {}) {
    const o = (this.options = resolveOptions(options, connector));
    this.#connector = connector;
    const tracing = o.tracing ? globalTracing() : null;
    // Traced, the pool's own work with its connections runs in no caller's trace.
    const work = tracing === null ? connector : detachedConnector(connector, tracing);
    this.#limiter = o.limiter;
    const timers = (this.#timers = new Timers(o.clock));
    this.#holds = new ProcessHold(timers);
    const budget = o.budget?.[kBudget] ?? (options as { [kBudget]?: ConnectionBudget })[kBudget];
    this.#waiters = new PoolQueue(
      timers,
      this.#holds,
      this.#counters,
      () => this.#timedOut(),
      budget && (() => budget.quiet(this.#supply.member)),
      { options: o.waiting, slots: () => this.#supply.set.capacity },
    );
    // Every admission waiting in the limiter listens here: as many as there are callers, not a leak.
    setMaxListeners(0, this.#closeSignal.signal);
    this.#supply = new ConnectionSupply(
      work,
      o,
      timers,
      this.#counters,
      {
        isClosed: () => this.#closed,
        waiting: () => this.#waiters.length,
        waitedSince: () => this.#waiters.head?.since,
        dispatch: () => this.#checkouts.dispatch(),
        swept: () => this.#observers.swept(healthFigures(this.#inside)),
        failQueue: (error) => {
          for (let w = this.#waiters.evict(); w !== null; w = this.#waiters.evict()) {
            this.#counters.failedFast++;
            w.fail(error());
          }
        },
      },
      budget,
    );
    this.#supply.member = new SupplyMember(this.#supply);
    budget?.attached?.(this.#supply.member);
    this.#observers = new PoolObservers(
      o,
      this.#counters,
      this,
      timers,
      () => (this.#checkouts.measures = this.#observers.measures),
    );
    this.#supply.metrics = this.#observers.timed;
    this.#inside = {
      pool: this,
      name: o.name,
      options: o,
      acquireTimeoutMs: o.acquireTimeoutMs,
      tracing,
      exclusive: o.clientLimit === 1,
      logger: o.logger,
      connector: work,
      timers,
      counters: this.#counters,
      supply: this.#supply as ConnectionSupply<unknown>,
      limiter: this.#limiter,
      closeSignal: this.#closeSignal.signal,
      isClosed: () => this.#closed,
      waiting: () => this.#waiters.length,
      queue: this.#waiters,
      oldestLeaseMs: () => this.#observers.oldestLeaseMs(),
      hold: () => this.#holds.hold(),
      unhold: () => this.#holds.unhold(),
      stats: () => this.stats(),
      acquire: (options) => this.#acquire(options),
      acquireConnection: (options, admission) => this.#checkouts.acquire(options, admission),
      scopes: (delta) => void (this.#checkouts.scopesLive += delta),
    };
    this.#checkouts = new Checkouts(work, this.#waiters, timers, this.#observers, this.#inside);
    this.#gate = this.#limiter === undefined ? undefined : new AdmissionGate(this.#inside, this.#limiter);
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

  /** @internal The connector the pool was made with (a driver face reads its settings). */
  get [kConnector](): Connector<T> {
    return this.#connector;
  }

  /** @internal A driver face's unit of work in the caller's scope of this pool (see `enterUnit`). */
  [kEnterUnit](
    waiter: string,
    options?: { timeoutMs?: number; signal?: AbortSignal },
  ): ScopeUnit | undefined | Promise<ScopeUnit | undefined> {
    return enterUnit(this.#inside as UsingPool<unknown>, waiter, options);
  }

  /** @internal A lease taken at once without a promise, where `acquire()` would take one at once (see `kLeaseNow`). */
  [kLeaseNow](): Lease<T> | undefined {
    if (this.#gate !== undefined || this.#closed || events.acquireTrace.hasSubscribers) return undefined;
    return this.#checkouts.leaseNow();
  }

  /** @internal A pool group's view of this member pool. */
  [kMember](): MemberSide {
    return this.#supply.member;
  }

  /** Checks out a connection. Release the lease when done (or `await using` it). */
  acquire(options?: AcquireOptions): Promise<Lease<T>> {
    // The common case in one step: no options, no limiter, not traced (see Checkouts.now).
    if (options === undefined && this.#gate === undefined && !this.#closed && !events.acquireTrace.hasSubscribers) {
      const now = this.#checkouts.now();
      if (now !== undefined) return now;
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
    return this.#checkouts.acquire(options);
  }

  /**
   * Runs `fn` with a connection and releases it whatever happens. Inside, `pool.current` is the
   * connection, and a nested `use()` of this pool reuses the lease unless `propagation: 'new'`
   * (or `'none'`: no scope at all, the connection is only `fn`'s argument).
   */
  use<R>(fn: (conn: T) => R | Promise<R>, options?: UseOptions): Promise<R> {
    if (typeof fn !== 'function')
      return Promise.reject(
        new TypeError(`pool "${this.name}": use() takes the function to run with a connection first, got ${shown(fn)}`),
      );
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
  [kUseOn]<R>(
    body: MethodBody<unknown, R>,
    self: unknown,
    args: unknown[],
    options: UseOptions | undefined,
  ): Promise<R> {
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

  // ---- deadlines ------------------------------------------------------------------------------

  /** The errors of callers whose deadline passed, each told how the pool looked then. */
  #timedOut(): (w: Waiter<Lease<T>>) => ConnectionsExhaustedError {
    const snapshot = this.stats(); // one per sweep: a snapshot costs O(connections)
    const reason = exhaustedReason(this.#inside);
    const cause = reason === 'creates-failing' ? this.#supply.backoff.lastFailure : undefined;
    return (w) => new ConnectionsExhaustedError(this.name, reason, w.timeoutMs, snapshot, cause);
  }

  // ---- shutdown -------------------------------------------------------------------------------

  async #shutdown(graceMs: number): Promise<void> {
    const timers = this.#timers;
    this.#closed = true;
    this.#holds.hold();
    this.#supply.debug(`closing: ${this.#supply.set.clients} clients get up to ${graceMs} ms`);
    this.#waiters.close(() => new PoolClosedError(this.name));
    this.#closeSignal.abort(new PoolClosedError(this.name));
    // No caller is left to serve: creates in flight are given up now, and arrive to be closed.
    this.#supply.stop();

    let graceTimer: TimerHandle | undefined;
    await new Promise<void>((resolve) => {
      if (this.#supply.set.clients === 0) return resolve();
      this.#checkouts.onIdle = resolve;
      graceTimer = timers.set(resolve, graceMs);
    });
    timers.clear(graceTimer);
    this.#checkouts.onIdle = undefined;
    await this.#supply.closeAll();
    this.#supply.budget?.detached?.(this.#supply.member);
    this.#observers.stop();
    this.#supply.debug('closed');
    this.#holds.unhold();
  }
}

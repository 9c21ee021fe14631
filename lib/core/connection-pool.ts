import { setMaxListeners } from 'node:events';
import {
  checkAcquireOptions,
  checkCloseOptions,
  checkUseOptions,
  type AcquireOptions,
  type CloseOptions,
  type RetryOptions,
  type UseOptions,
} from './call-options.js';
import { backoffMs } from './backoff.js';
import { closeWithin, validateWithin } from './bounded-calls.js';
import { Timers, type TimerHandle } from './clock.js';
import { HouseKeeper } from './house-keeper.js';
import { ConnectionIndex } from './connection-index.js';
import { ConnectionOpener } from './connection-opener.js';
import type { Connector } from './connector.js';
import {
  ConnectionFailedError,
  ConnectionsExhaustedError,
  PoolClosedError,
  PoolContextError,
  QueueFullError,
  SelfDeadlockError,
  type ExhaustedReason,
} from './errors.js';
import { messageOf } from './message-of.js';
import { ConnectionContext, kFromConnector, type ContextOwner } from './connection-context.js';
import type { AdmissionLimiter } from './admission.js';
import { AdmissionGate, type GatedPool } from './admission-gate.js';
import { kCheckin, kCheckinFailed, Lease, type LeaseOwner } from './lease.js';
import { resolveOptions, type PoolOptions, type ResolvedOptions } from './options.js';
import { findScope, scopeLeases, scopes } from './scope.js';
import { SharedConnection } from './shared-connection.js';
import { utilizationHealth, type PoolHealth } from './health.js';
import type { PoolCounters, PoolStats } from './stats.js';
import { WaiterDeadlines } from './waiter-deadlines.js';
import { Waiter, WaiterQueue } from './waiter-queue.js';

const noop = () => {};

/**
 * A pool of shared connections: each serves up to `clientLimit` callers at once.
 *
 * Acquire reads as three steps: take the best ready connection with room; else make sure enough
 * creates are under way; else wait in a FIFO queue that releases and creates serve in order.
 */
export class ConnectionPool<T> implements LeaseOwner<T>, ContextOwner<T> {
  /** The pool's options after defaults. */
  readonly options: ResolvedOptions;
  readonly #connector: Connector<T>;
  readonly #limiter: AdmissionLimiter | undefined;
  /** The limiter in front of the pool, when there is one. */
  readonly #gate: AdmissionGate<T> | undefined;
  readonly #index: ConnectionIndex<T>;
  readonly #timers: Timers;
  /** Every connection from its create until it is closed. */
  readonly #all = new Set<SharedConnection<T>>();
  readonly #opener: ConnectionOpener<T>;
  readonly #waiters = new WaiterQueue<Lease<T>>();
  #nextId = 1;

  // Counts kept in step with state changes, so the hot path never scans.
  #opening = 0;
  #ready = 0;
  /** Ready connections whose replacement is opening: the replacement does not count against maxSize. */
  #rotations = 0;
  #clients = 0;
  /** Sum of the limits of ready connections. */
  #capacity = 0;
  /** Ready connections out of the index while validate() runs. */
  #validating = 0;
  /** use() scopes of this pool running now: only then can a caller deadlock on its own lease. */
  #scopesLive = 0;
  /** A bounded queue (maxWaiting) makes #wait() look closer at every caller. */
  readonly #mayRefuse: boolean;
  #growLoad: number;

  #failureStreak = 0;
  #lastError: unknown = undefined;
  #lastCreateError: ConnectionFailedError | undefined;
  #backoffUntil = 0;
  #backoffTimer: TimerHandle | undefined;
  readonly #deadlines: WaiterDeadlines<Lease<T>>;
  readonly #keeper: HouseKeeper<T>;

  #closed = false;
  #closing: Promise<void> | undefined;
  /** Aborted by close(): admissions still waiting in the limiter give up at once. */
  readonly #closeSignal = new AbortController();
  /** Pending acquires and a close in progress keep the process alive; an idle pool does not. */
  #holds = 0;
  #letGo: (() => void) | undefined;
  #onIdle: (() => void) | undefined;
  readonly #pendingCloses = new Set<Promise<void>>();

  readonly #counters: PoolCounters = {
    createsStarted: 0,
    opened: 0,
    createFailures: 0,
    closed: 0,
    retired: 0,
    acquired: 0,
    released: 0,
    timeouts: 0,
    aborted: 0,
    failedFast: 0,
    validationFailures: 0,
  };

  constructor(connector: Connector<T>, options: PoolOptions = {}) {
    this.options = resolveOptions(options, connector);
    this.#connector = connector;
    this.#limiter = this.options.limiter;
    this.#timers = new Timers(this.options.clock);
    this.#mayRefuse = this.options.maxWaiting !== Infinity;
    // Every admission waiting in the limiter listens here: as many as there are callers, not a leak.
    setMaxListeners(0, this.#closeSignal.signal);
    this.#index = new ConnectionIndex(this.options.clientLimit, this.options.strategy);
    this.#opener = new ConnectionOpener(connector, this.options, {
      timers: this.#timers,
      opened: (conn) => this.#opened(conn),
      failed: (conn, err) => this.#openFailed(conn, err),
      abandoned: (conn) => this.#abandoned(conn),
      closeValue: (value) => this.#closeValue(value),
    });
    this.#deadlines = new WaiterDeadlines(this.#timers, this.#waiters, (due) => this.#expired(due));
    this.#growLoad = this.options.growAt < 1 ? this.options.growAt : Infinity;
    this.#gate = this.#limiter === undefined ? undefined : new AdmissionGate(this.#gated(), this.#limiter);
    this.#keeper = new HouseKeeper<T>({
      options: this.options,
      timers: this.#timers,
      isClosed: () => this.#closed,
      connections: () => this.#all,
      readyCount: () => this.#ready,
      mayOpen: () => this.#opening < this.options.maxConcurrentCreates && !this.#backingOff(),
      retire: (conn, reason) => this.#retire(conn, reason),
      rotate: (conn) => this.#rotate(conn),
      fill: () => this.#fill(),
    });
    this.#keeper.start();
  }

  /** What the admission gate sees of this pool. */
  #gated(): GatedPool<T> {
    return {
      name: this.name,
      isClosed: () => this.#closed,
      acquireTimeoutMs: this.options.acquireTimeoutMs,
      timers: this.#timers,
      counters: this.#counters,
      closeSignal: this.#closeSignal.signal,
      hold: () => this.#hold(),
      unhold: () => this.#unhold(),
      stats: () => this.stats(),
      acquireConnection: (options) => this.#acquireConnection(options),
    };
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

  /** Checks out a connection. Release the lease when done (or `await using` it). */
  acquire(options?: AcquireOptions): Promise<Lease<T>> {
    if (options !== undefined) {
      const invalid = checkAcquireOptions(this.name, options);
      if (invalid !== undefined) return Promise.reject(invalid);
    }
    return this.#acquire(options);
  }

  /** `acquire()` with options already checked (`use()` checks them once for all its tries). */
  #acquire(options: AcquireOptions | undefined): Promise<Lease<T>> {
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
   * connection, and a nested `use()` of this pool reuses the lease unless `propagation: 'new'`.
   */
  async use<R>(fn: (conn: T) => R | Promise<R>, options?: UseOptions): Promise<R> {
    if (options !== undefined) {
      const invalid = checkUseOptions(this.name, options);
      if (invalid !== undefined) throw invalid;
    }
    const outer = options?.propagation === 'new' ? undefined : findScope(this);
    if (outer !== undefined) return fn(outer.lease.connection as T);
    const retry = options?.retry;
    const attempts = retry?.attempts ?? 1;
    for (let attempt = 1; ; attempt++) {
      const lease = await this.#acquire(options);
      this.#scopesLive++;
      try {
        // The scope ends with this use(): a task that outlives it finds the lease no longer live.
        const result = await scopes.run({ pool: this, lease, parent: scopes.getStore() }, fn, lease.connection);
        this.#scopesLive--;
        lease.release();
        return result;
      } catch (err) {
        this.#scopesLive--;
        const fatal = this.#isFatal(err);
        const retryable = attempt < attempts && (fatal || this.#retryOn(retry, err));
        if (retryable || fatal) lease.fail(err);
        else lease.release();
        if (!retryable) throw err;
        await this.#pause(backoffMs(attempt, retry?.baseDelayMs ?? 10, retry?.maxDelayMs ?? 1_000));
      }
    }
  }

  /** Opens connections until `minSize` are ready; rejects with the first create failure. */
  async warmup(): Promise<void> {
    this.#hold();
    try {
      // #fill() opens what minSize lacks within maxConcurrentCreates, creates in flight included.
      for (;;) {
        if (this.#closed) throw new PoolClosedError(this.name);
        if (this.#ready >= this.options.minSize) return;
        this.#fill();
        if (this.#opener.pending.size === 0) {
          // Only a backoff stops #fill() here: the last create failed.
          throw this.#lastCreateError ?? new ConnectionFailedError(this.name, 'warmup could not start a create');
        }
        await Promise.race(this.#opener.pending);
      }
    } finally {
      this.#unhold();
    }
  }

  /**
   * Retires every connection: ready ones take no new clients and close once idle; ones still
   * opening (their create began before the refresh) are retired as soon as they are ready.
   */
  refresh(): void {
    for (const conn of this.#all) {
      if (conn.state === 'opening' || conn.state === 'establishing') conn.retireOnReady = 'refresh';
      else this.#retire(conn, 'refresh');
    }
  }

  /**
   * Stops the pool: new acquires and queued waiters get `PoolClosedError`; leases get up to
   * `graceMs` to finish; then every connection closes, including creates still in flight.
   */
  close(options: CloseOptions = {}): Promise<void> {
    const invalid = checkCloseOptions(this.name, options);
    if (invalid !== undefined) return Promise.reject(invalid);
    this.#closing ??= this.#shutdown(options.graceMs ?? 10_000);
    return this.#closing;
  }

  /** Health from utilization: see the README's table. */
  health(): PoolHealth {
    if (this.#ready === 0 && this.#failureStreak > 0) return 'failing';
    if (this.#waiters.length > 0) return 'exhausted';
    return utilizationHealth(this.#utilization(), this.options.health);
  }

  /** A snapshot of counts, counters and one row per connection. */
  stats(): PoolStats {
    const now = this.#timers.now();
    const connections = [...this.#all].map((c) => ({
      id: c.id,
      state: c.state,
      clients: c.clients,
      clientLimit: c.limit,
      uses: c.uses,
      ageMs: c.state === 'opening' || c.state === 'establishing' ? 0 : now - c.createdAt,
      idleMs: c.clients === 0 && c.state === 'ready' ? now - c.idleSince : 0,
      validating: c.validating,
      rotating: c.rotating,
    }));
    const o = this.options;
    return {
      name: o.name,
      health: this.health(),
      utilization: this.#utilization(),
      maxSize: o.maxSize,
      minSize: o.minSize,
      clientLimit: o.clientLimit,
      size: this.#size(),
      opening: this.#opening,
      ready: this.#ready,
      idle: connections.filter((c) => c.state === 'ready' && c.clients === 0).length,
      draining: connections.filter((c) => c.state === 'draining').length,
      clients: this.#clients,
      waiting: this.#waiters.length,
      failureStreak: this.#failureStreak,
      lastError: this.#lastError === undefined ? undefined : messageOf(this.#lastError),
      closed: this.#closed,
      counters: { ...this.#counters },
      connections,
      ...(this.#limiter === undefined ? {} : { admission: this.#limiter.stats() }),
    };
  }

  // ---- checkout / checkin -------------------------------------------------------------------

  /** Step 1 of 3 is to take a ready connection; else wait (the wait starts creates). */
  #acquireConnection(options: AcquireOptions | undefined): Promise<Lease<T>> {
    // A queued waiter means no connection has room: never barge past it.
    if (this.#waiters.length === 0) {
      const conn = this.#pick();
      if (conn !== null) return Promise.resolve(this.#checkout(conn));
    }
    return this.#wait(options);
  }

  /** A pause between tries of use(): it keeps the process alive, and close() ends it with PoolClosedError. */
  #pause(ms: number): Promise<void> {
    if (this.#closed) return Promise.reject(new PoolClosedError(this.name));
    this.#hold();
    return new Promise<void>((resolve, reject) => {
      const timer = this.#timers.set(() => {
        unlisten();
        resolve();
      }, ms);
      const unlisten = this.#whenClosed(() => {
        this.#timers.clear(timer);
        reject(new PoolClosedError(this.name));
      });
    }).finally(() => this.#unhold());
  }

  /** Calls `fn` when close() begins (callers check `#closed` first); returns the way to stop listening. */
  #whenClosed(fn: () => void): () => void {
    const signal = this.#closeSignal.signal;
    signal.addEventListener('abort', fn, { once: true });
    return () => signal.removeEventListener('abort', fn);
  }

  /** The best connection with room, validating (out of band) any that sat idle too long. */
  #pick(): SharedConnection<T> | null {
    let conn = this.#index.pick();
    // Each validation takes the connection out of the index, so this loop ends.
    while (conn !== null && conn.clients === 0 && this.#needsValidation(conn)) {
      this.#validate(conn);
      conn = this.#index.pick();
    }
    return conn;
  }

  #checkout(conn: SharedConnection<T>): Lease<T> {
    conn.clients++;
    conn.uses++;
    conn.checked = false;
    this.#clients++;
    this.#counters.acquired++;
    this.#index.update(conn);
    if (this.#clients >= this.#capacity * this.#growLoad) this.#grow();
    return new Lease(this, conn);
  }

  /** @internal Called by {@link Lease.release}. */
  [kCheckin](conn: SharedConnection<T>): void {
    this.#counters.released++;
    this.#checkin(conn);
  }

  /** @internal Called by {@link Lease.fail}: the connection is retired, then given back. */
  [kCheckinFailed](conn: SharedConnection<T>, failure: unknown): void {
    this.#counters.released++;
    this.#retire(conn, failure === undefined ? 'failed by its user' : messageOf(failure), failure);
    this.#checkin(conn);
  }

  /** A client leaves `conn`: its slot goes straight to the head of the queue, or back to the index. */
  #checkin(conn: SharedConnection<T>): void {
    if (conn.state === 'ready') {
      // Hand the slot straight to the head of the queue (unless the connector lowered the limit).
      const w = conn.clients <= conn.limit ? this.#next() : null;
      if (w !== null) {
        conn.uses++;
        this.#counters.acquired++;
        w.resolve(new Lease(this, conn));
        return;
      }
      conn.clients--;
      this.#clients--;
      if (conn.clients === 0) conn.idleSince = this.#timers.now();
      this.#index.update(conn);
      return;
    }
    conn.clients--;
    this.#clients--;
    if (conn.clients === 0 && conn.state === 'draining') this.#closeConnection(conn);
    if (this.#clients === 0) this.#onIdle?.();
  }

  /** Every way into the queue passes here, so each re-checks what refuses a caller. */
  #wait(options: AcquireOptions | undefined): Promise<Lease<T>> {
    const signal = options?.signal;
    // One cheap test keeps the common case short; #refusal() looks closer.
    if (this.#closed || signal !== undefined || this.#failureStreak > 0 || this.#mayRefuse || this.#scopesLive > 0) {
      const refusal = this.#refusal(signal);
      if (refusal !== undefined) return Promise.reject(refusal);
    }
    const timeoutMs = options?.timeoutMs ?? this.options.acquireTimeoutMs;
    const w = new Waiter<Lease<T>>(timeoutMs);
    const promise = w.promise();
    this.#waiters.push(w);
    if (this.#waiters.length === 1) this.#hold();
    this.#deadlines.queued(w);
    if (signal !== undefined) {
      const listener = () => {
        w.abort = null;
        this.#leave(w);
        this.#counters.aborted++;
        w.reject(signal.reason);
      };
      w.abort = { signal, listener };
      signal.addEventListener('abort', listener, { once: true });
    }
    if (this.#canCreate()) this.#fill();
    return promise;
  }

  /** Why a caller may not queue (closed, aborted, the blocking period, a full queue, a self-deadlock), if it may not. */
  #refusal(signal: AbortSignal | undefined): unknown {
    if (this.#closed) return new PoolClosedError(this.name);
    if (signal?.aborted) {
      this.#counters.aborted++;
      return signal.reason;
    }
    if (this.#blocked()) {
      this.#counters.failedFast++;
      return this.#failFast();
    }
    const o = this.options;
    if (o.maxWaiting !== Infinity && this.#waiters.length >= o.maxWaiting + this.#slotsToCome()) {
      return new QueueFullError(this.name, o.maxWaiting);
    }
    if (this.#scopesLive > 0 && this.#clients > 0 && this.#opening === 0 && this.#validating === 0 && this.#size() >= o.maxSize) {
      const own = scopeLeases(this);
      if (own > 0 && own >= this.#clients) return new SelfDeadlockError(this.name, own, o.maxSize, o.clientLimit);
    }
    return undefined;
  }

  /** Slots that connections opening or still to open will bring: callers may wait for those. */
  #slotsToCome(): number {
    return (this.#opening + Math.max(0, this.options.maxSize - this.#size())) * this.options.clientLimit;
  }

  /** The head of the queue, out of it. */
  #next(): Waiter<Lease<T>> | null {
    const w = this.#waiters.head;
    if (w !== null) this.#leave(w);
    return w;
  }

  /** Takes `w` out of the queue, wherever it is. */
  #leave(w: Waiter<Lease<T>>): void {
    if (!w.queued) return;
    this.#waiters.remove(w);
    this.#unhook(w);
    if (this.#waiters.length === 0) this.#unhold();
  }

  /** Removes a waiter's abort listener. */
  #unhook(w: Waiter<Lease<T>>): void {
    if (w.abort !== null) {
      w.abort.signal.removeEventListener('abort', w.abort.listener);
      w.abort = null;
    }
  }

  /** Serves queued waiters from connections with room, in order; then opens what is missing. */
  #dispatch(): void {
    while (this.#waiters.length > 0) {
      const conn = this.#pick();
      if (conn === null) break;
      this.#next()!.resolve(this.#checkout(conn));
    }
    this.#fill();
  }

  // ---- keeping the process alive ---------------------------------------------------------------

  #hold(): void {
    if (this.#holds++ === 0) this.#letGo = this.#timers.keepAlive();
  }

  #unhold(): void {
    if (--this.#holds > 0) return;
    const letGo = this.#letGo;
    this.#letGo = undefined;
    letGo?.();
  }

  // ---- the blocking period ---------------------------------------------------------------------

  /** No connection can serve a caller until the backoff's next attempt: fail at once instead of queueing. */
  #blocked(): boolean {
    return (
      this.#failureStreak > 0 &&
      this.#ready === 0 &&
      this.#opening === 0 &&
      this.options.blockingPeriod &&
      this.#timers.now() < this.#backoffUntil
    );
  }

  #failFast(): ConnectionFailedError {
    const last = this.#lastCreateError;
    const retryIn = Math.max(0, Math.ceil(this.#backoffUntil - this.#timers.now()));
    return new ConnectionFailedError(
      this.name,
      `no connection can be opened (${last?.detail ?? 'creates are failing'}); ` +
        `failing fast until the next attempt in ${retryIn} ms (blockingPeriod)`,
      last,
    );
  }

  // ---- deadlines (see WaiterDeadlines) -------------------------------------------------------

  /** Callers whose deadline passed, out of the queue, each told how the pool looked then. */
  #expired(waiters: Waiter<Lease<T>>[]): void {
    const snapshot = this.stats(); // one per sweep: a snapshot costs O(connections)
    for (const w of waiters) {
      this.#leave(w);
      this.#counters.timeouts++;
      w.reject(this.#exhausted(w.timeoutMs, snapshot));
    }
  }

  #exhausted(timeoutMs: number, snapshot: PoolStats): ConnectionsExhaustedError {
    let reason: ExhaustedReason = 'all-busy';
    if (this.#failureStreak > 0) reason = 'creates-failing';
    else if (this.#opening > 0 && this.#index.size === 0 && this.#clients === 0) reason = 'opening';
    const cause = reason === 'creates-failing' ? this.#lastCreateError : undefined;
    return new ConnectionsExhaustedError(this.name, reason, timeoutMs, snapshot, cause);
  }

  // ---- growth and creates ---------------------------------------------------------------------

  #size(): number {
    return this.#opening + this.#ready - this.#rotations;
  }

  #canCreate(): boolean {
    return !this.#closed && this.#size() < this.options.maxSize && this.#opening < this.options.maxConcurrentCreates;
  }

  /** Starts the creates that queued waiters and `minSize` need, unless backing off. */
  #fill(): void {
    const o = this.options;
    while (this.#canCreate() && (this.#waiters.length > this.#opening * o.clientLimit || this.#size() < o.minSize)) {
      if (this.#backingOff()) return;
      void this.#create(null).catch(noop);
    }
  }

  /** Opens one more connection ahead of demand, so callers do not queue behind a cold connect. */
  #grow(): void {
    if (this.#opening === 0 && this.#canCreate() && !this.#backingOff()) void this.#create(null).catch(noop);
  }

  /** True while a failed create's backoff runs; a timer then calls `#fill()`. */
  #backingOff(): boolean {
    if (this.#failureStreak === 0) return false;
    const timers = this.#timers;
    const wait = this.#backoffUntil - timers.now();
    if (wait <= 0) return false;
    this.#backoffTimer ??= timers.set(() => {
      this.#backoffTimer = undefined;
      this.#fill();
    }, wait);
    return true;
  }

  /**
   * Opens one connection. The slot is counted before any await, so concurrent callers never
   * open the same one twice. Settles when the connection is ready (or failed).
   */
  #create(replaces: SharedConnection<T> | null): Promise<void> {
    const o = this.options;
    const conn = new SharedConnection<T>(this.#nextId++, o.clientLimit);
    conn.replaces = replaces;
    conn.ctx = new ConnectionContext(this, conn);
    this.#all.add(conn);
    this.#opening++;
    this.#counters.createsStarted++;
    this.#debug(replaces === null ? `opening connection ${conn.id}` : `opening connection ${conn.id} to replace ${replaces.id}`);
    return this.#opener.open(conn);
  }

  /** Opens a replacement for `conn`, which keeps serving until it is ready (it does not count against maxSize meanwhile). */
  #rotate(conn: SharedConnection<T>): void {
    conn.rotating = true;
    this.#rotations++;
    void this.#create(conn).catch(noop);
  }

  /** @internal Called by a connection's {@link ConnectionContext}. */
  [kFromConnector](conn: SharedConnection<T>, change: { retire: unknown } | { limit: number }): void {
    if ('retire' in change) {
      const reason = change.retire === undefined ? 'retired by its connector' : messageOf(change.retire);
      if (conn.state === 'opening' || conn.state === 'establishing') conn.retireOnReady = reason;
      else this.#retire(conn, reason, change.retire);
      return;
    }
    const limit = Math.max(1, Math.min(this.options.clientLimit, Math.floor(change.limit) || 1));
    if (conn.state !== 'ready') {
      conn.limit = limit;
      return;
    }
    this.#capacity += limit - conn.limit;
    conn.limit = limit;
    // A connection being validated is out of the index until its validation ends.
    if (!conn.validating) this.#index.update(conn);
    this.#dispatch();
  }

  #opened(conn: SharedConnection<T>): void {
    const o = this.options;
    this.#opening--;
    this.#counters.opened++;
    this.#failureStreak = 0;
    const now = this.#timers.now();
    conn.state = 'ready';
    conn.checked = true;
    conn.createdAt = conn.idleSince = now;
    const jitter = 1 + o.lifetimeJitter * (2 * Math.random() - 1);
    conn.expiresAt = now + o.maxLifetimeMs * jitter;
    this.#ready++;
    this.#capacity += conn.limit;
    this.#index.add(conn);
    this.#debug(`connection ${conn.id} ready`);
    const old = conn.replaces;
    conn.replaces = null;
    if (old !== null) this.#retire(old, 'rotated: past its lifetime');
    if (this.#closed) this.#retire(conn, 'pool closed');
    else if (conn.retireOnReady !== undefined) this.#retire(conn, conn.retireOnReady);
    this.#dispatch();
  }

  #openFailed(conn: SharedConnection<T>, err: ConnectionFailedError): void {
    const o = this.options;
    this.#opening--;
    this.#all.delete(conn);
    this.#counters.createFailures++;
    this.#lastError = this.#lastCreateError = err;
    this.#failureStreak++;
    const delay = backoffMs(this.#failureStreak, o.createBackoffMs, o.maxCreateBackoffMs);
    this.#backoffUntil = this.#timers.now() + delay;
    if (!this.#closed) o.logger.warn(`${err.message} (retry in ${delay} ms)`);
    conn.state = 'closed';
    if (conn.value !== undefined) this.#closeValue(conn.value);
    this.#unrotate(conn);
    // Nothing else can serve the queue until the next attempt: route the connect error to it.
    if (o.blockingPeriod && this.#ready === 0 && this.#opening === 0 && this.#waiters.length > 0) {
      for (let w = this.#next(); w !== null; w = this.#next()) {
        this.#counters.failedFast++;
        w.reject(this.#failFast());
      }
    }
    this.#fill();
  }

  /** A create given up because the pool closed: not a failure, nothing to retry. */
  #abandoned(conn: SharedConnection<T>): void {
    this.#opening--;
    this.#all.delete(conn);
    conn.state = 'closed';
    if (conn.value !== undefined) this.#closeValue(conn.value);
    this.#unrotate(conn);
  }

  /** A replacement that did not open: the old connection keeps serving; the reaper retries after the backoff. */
  #unrotate(conn: SharedConnection<T>): void {
    const old = conn.replaces;
    conn.replaces = null;
    if (old !== null && old.rotating) {
      old.rotating = false;
      this.#rotations--;
    }
  }

  // ---- retirement and closing -----------------------------------------------------------------

  /** Takes a ready connection out of service; it closes once its last client leaves. */
  #retire(conn: SharedConnection<T>, reason: string, cause?: unknown): void {
    if (conn.state !== 'ready') return;
    conn.state = 'draining';
    this.#ready--;
    this.#capacity -= conn.limit;
    if (conn.rotating) {
      conn.rotating = false;
      this.#rotations--;
    }
    this.#index.remove(conn);
    this.#counters.retired++;
    if (cause !== undefined) this.#lastError = cause;
    this.#debug(`connection ${conn.id} retired: ${reason}`);
    // A connection being validated closes when its validation ends.
    if (conn.clients === 0 && !conn.validating) this.#closeConnection(conn);
    if (!this.#closed) this.#fill();
  }

  #closeConnection(conn: SharedConnection<T>): void {
    conn.state = 'closing';
    const done = this.#closeValue(conn.value as T).then(() => {
      conn.state = 'closed';
      this.#all.delete(conn);
      this.#debug(`connection ${conn.id} closed`);
      this.#fill();
    });
    this.#pendingCloses.add(done);
    void done.then(() => this.#pendingCloses.delete(done));
  }

  /** Calls the connector's close, bounded by closeTimeoutMs; errors are logged, never thrown. */
  #closeValue(value: T): Promise<void> {
    this.#counters.closed++;
    this.#opener.closed(value);
    const close = this.#connector.close;
    if (close === undefined) return Promise.resolve();
    const { logger, closeTimeoutMs } = this.options;
    return closeWithin(close.bind(this.#connector), value, this.#timers, closeTimeoutMs, logger, this.name);
  }

  // ---- validation -----------------------------------------------------------------------------

  /**
   * An idle connection that has sat idle past validateAfterIdleMs. With 0, only one that served a
   * caller since it was opened or validated: a fresh check is never repeated in a loop.
   */
  #needsValidation(conn: SharedConnection<T>): boolean {
    const after = this.options.validateAfterIdleMs;
    if (this.#connector.validate === undefined || (conn.checked && after === 0)) return false;
    return this.#timers.now() - conn.idleSince >= after;
  }

  /** Checks an idle connection out of band; the result goes back to the pool whatever the waiters did. */
  #validate(conn: SharedConnection<T>): void {
    conn.validating = true;
    this.#validating++;
    this.#index.remove(conn);
    const validate = this.#connector.validate!.bind(this.#connector);
    conn.endValidation = validateWithin(validate, conn.value as T, this.#timers, this.options.validateTimeoutMs, (failure) => {
      conn.endValidation = null;
      this.#validated(conn, failure);
    });
  }

  #validated(conn: SharedConnection<T>, failure: unknown): void {
    conn.validating = false;
    this.#validating--;
    if (failure !== undefined && !this.#closed) {
      this.#counters.validationFailures++;
      this.#retire(conn, `validation failed: ${messageOf(failure)}`, failure);
    }
    if (conn.state === 'ready') {
      conn.checked = true;
      conn.idleSince = this.#timers.now();
      this.#index.add(conn);
    } else if (conn.state === 'draining' && conn.clients === 0) this.#closeConnection(conn);
    if (!this.#closed) this.#dispatch();
  }

  // ---- shutdown -------------------------------------------------------------------------------

  async #shutdown(graceMs: number): Promise<void> {
    const timers = this.#timers;
    this.#closed = true;
    this.#hold();
    this.#debug(`closing: ${this.#clients} clients get up to ${graceMs} ms`);
    this.#keeper.stop();
    timers.clear(this.#backoffTimer);
    this.#backoffTimer = undefined;
    this.#deadlines.stop();
    for (let w = this.#next(); w !== null; w = this.#next()) w.reject(new PoolClosedError(this.name));
    this.#closeSignal.abort(new PoolClosedError(this.name));
    // No caller is left to serve: creates in flight are given up now, and arrive to be closed.
    for (const conn of [...this.#all]) conn.abandon?.();
    this.refresh();
    for (const conn of [...this.#all]) conn.endValidation?.();

    let graceTimer: TimerHandle | undefined;
    const idle = new Promise<void>((resolve) => {
      if (this.#clients === 0) return resolve();
      this.#onIdle = resolve;
      graceTimer = timers.set(resolve, graceMs);
    });
    await idle;
    timers.clear(graceTimer);
    this.#onIdle = undefined;
    for (const conn of this.#all) if (conn.state === 'draining') this.#closeConnection(conn);
    await Promise.all([...this.#pendingCloses]);
    this.#debug('closed');
    this.#unhold();
  }

  // ---- helpers --------------------------------------------------------------------------------

  /** Clients per slot, or the limiter's utilization if higher. */
  #utilization(): number {
    const o = this.options;
    const own = this.#clients / (o.maxSize * o.clientLimit);
    return this.#limiter === undefined ? own : Math.max(own, this.#limiter.stats().utilization);
  }

  #isFatal(err: unknown): boolean {
    try {
      return this.#connector.isFatal?.(err) === true;
    } catch (thrown) {
      this.options.logger.error(`pool "${this.name}": connector.isFatal() threw (${messageOf(thrown)}); the error counts as not fatal`, thrown);
      return false;
    }
  }

  /** The caller's retryOn predicate; one that throws is logged and means "do not retry". */
  #retryOn(retry: RetryOptions | undefined, err: unknown): boolean {
    if (retry?.retryOn === undefined) return false;
    try {
      return retry.retryOn(err) === true;
    } catch (thrown) {
      this.options.logger.error(`pool "${this.name}": retry.retryOn threw (${messageOf(thrown)}); not retrying`, thrown);
      return false;
    }
  }

  #debug(msg: string): void {
    this.options.logger.debug?.(`pool "${this.name}": ${msg}`);
  }
}

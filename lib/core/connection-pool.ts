import {
  checkAcquireOptions,
  checkUseOptions,
  type AcquireOptions,
  type CloseOptions,
  type UseOptions,
} from './call-options.js';
import type { TimerHandle } from './clock.js';
import { ConnectionIndex } from './connection-index.js';
import type { Connector } from './connector.js';
import {
  ConnectionFailedError,
  ConnectionsExhaustedError,
  PoolClosedError,
  PoolContextError,
  QueueFullError,
  type ExhaustedReason,
} from './errors.js';
import { ConnectionContext, fromConnector, type ContextOwner } from './connection-context.js';
import type { AdmissionLimiter } from './admission.js';
import { admitted, checkin, Lease, type LeaseOwner } from './lease.js';
import { resolveOptions, type PoolOptions, type ResolvedOptions } from './options.js';
import { findScope, scopes } from './scope.js';
import { SharedConnection } from './shared-connection.js';
import { utilizationHealth, type PoolCounters, type PoolHealth, type PoolStats } from './stats.js';
import { Waiter, WaiterQueue } from './waiter-queue.js';

const noop = () => {};
/** Most waiters dated by one clock read. */
const STAMP_BATCH = 256;

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

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
  readonly #index: ConnectionIndex<T>;
  /** Every connection from its create until it is closed. */
  readonly #all = new Set<SharedConnection<T>>();
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
  #growLoad: number;

  #failureStreak = 0;
  #lastError: unknown = undefined;
  #lastCreateError: ConnectionFailedError | undefined;
  #backoffUntil = 0;
  #backoffTimer: TimerHandle | undefined;
  #deadlineTimer: TimerHandle | undefined;
  #deadlineAt = Infinity;
  /** Waiters queued since the last stamp: one clock read dates a whole batch. */
  readonly #unstamped: Waiter<Lease<T>>[] = [];
  #reapTimer: TimerHandle | undefined;

  #closed = false;
  #closing: Promise<void> | undefined;
  #onIdle: (() => void) | undefined;
  readonly #pendingCloses = new Set<Promise<void>>();
  readonly #pendingCreates = new Set<Promise<void>>();

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
    validationFailures: 0,
  };

  constructor(connector: Connector<T>, options: PoolOptions = {}) {
    this.options = resolveOptions(options, connector);
    this.#connector = connector;
    this.#limiter = this.options.limiter;
    this.#index = new ConnectionIndex(this.options.clientLimit, this.options.strategy);
    this.#growLoad = this.options.growAt < 1 ? this.options.growAt : Infinity;
    this.#scheduleReap();
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
    if (this.#limiter !== undefined) return this.#admitThenAcquire(this.#limiter, options);
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
      try {
        const result = await scopes.run({ pool: this, lease, parent: scopes.getStore() }, fn, lease.connection);
        lease.release();
        return result;
      } catch (err) {
        const fatal = this.#isFatal(err);
        const retryable = attempt < attempts && (fatal || retry?.retryOn?.(err) === true);
        if (retryable || fatal) lease.fail(err);
        else lease.release();
        if (!retryable) throw err;
        const base = retry?.baseDelayMs ?? 10;
        await this.#sleep(Math.min(base * 2 ** (attempt - 1), retry?.maxDelayMs ?? 1_000));
      }
    }
  }

  /** Opens connections until `minSize` are ready; rejects with the first create failure. */
  async warmup(): Promise<void> {
    if (this.#closed) throw new PoolClosedError(this.name);
    const { minSize, maxConcurrentCreates } = this.options;
    // Parallel lanes, each opening one connection after another, bounded by maxConcurrentCreates.
    const lane = async (): Promise<void> => {
      while (!this.#closed && this.#size() < minSize) await this.#create(null);
    };
    const lanes = Math.min(maxConcurrentCreates, minSize - this.#size());
    const results = await Promise.allSettled(Array.from({ length: Math.max(0, lanes) }, lane));
    const failure = results.find((r) => r.status === 'rejected');
    if (failure) throw failure.reason;
    // Top-ups started in the background as connections opened count as warm-up too.
    await Promise.allSettled([...this.#pendingCreates]);
    if (!this.#closed && this.#ready < minSize && this.#failureStreak > 0 && this.#lastCreateError !== undefined) {
      throw this.#lastCreateError;
    }
  }

  /** Retires every ready connection: they take no new clients and close once idle. */
  refresh(): void {
    for (const conn of this.#all) this.#retire(conn, 'refresh');
  }

  /**
   * Stops the pool: new acquires and queued waiters get `PoolClosedError`; leases get up to
   * `graceMs` to finish; then every connection closes, including creates still in flight.
   */
  close(options: CloseOptions = {}): Promise<void> {
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
    const now = this.options.clock.now();
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
      lastError: this.#lastError === undefined ? undefined : message(this.#lastError),
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

  /** The limiter admits first; the connection's wait gets what is left of the same deadline. */
  async #admitThenAcquire(limiter: AdmissionLimiter, options: AcquireOptions | undefined): Promise<Lease<T>> {
    const clock = this.options.clock;
    const started = clock.now();
    const timeoutMs = options?.timeoutMs ?? this.options.acquireTimeoutMs;
    const admission = await limiter.admit({ pool: this.name, key: options?.key, timeoutMs, signal: options?.signal });
    try {
      const left = Math.max(1, timeoutMs - (clock.now() - started));
      const lease = await this.#acquireConnection({ signal: options?.signal, timeoutMs: left });
      lease[admitted](admission);
      return lease;
    } catch (err) {
      admission.release();
      throw err;
    }
  }

  /** The best connection with room, validating (out of band) any that sat idle too long. */
  #pick(): SharedConnection<T> | null {
    let conn = this.#index.pick();
    while (conn !== null && conn.clients === 0 && this.#needsValidation(conn)) {
      this.#validate(conn);
      conn = this.#index.pick();
    }
    return conn;
  }

  #checkout(conn: SharedConnection<T>): Lease<T> {
    conn.clients++;
    conn.uses++;
    this.#clients++;
    this.#counters.acquired++;
    this.#index.update(conn);
    if (this.#clients >= this.#capacity * this.#growLoad) this.#grow();
    return new Lease(this, conn);
  }

  /** @internal Called by {@link Lease.release} and {@link Lease.fail}. */
  [checkin](conn: SharedConnection<T>, failure: unknown, failed: boolean): void {
    this.#counters.released++;
    if (failed) this.#retire(conn, failure === undefined ? 'failed by its user' : message(failure), failure);
    if (conn.state === 'ready') {
      // Hand the slot straight to the head of the queue (unless the connector lowered the limit).
      const w = conn.clients <= conn.limit ? this.#waiters.shift() : null;
      if (w !== null) {
        conn.uses++;
        this.#counters.acquired++;
        this.#settle(w);
        w.resolve(new Lease(this, conn));
        return;
      }
      conn.clients--;
      this.#clients--;
      if (conn.clients === 0) conn.idleSince = this.options.clock.now();
      this.#index.update(conn);
      return;
    }
    conn.clients--;
    this.#clients--;
    if (conn.clients === 0 && conn.state === 'draining') this.#closeConnection(conn);
    if (this.#clients === 0) this.#onIdle?.();
  }

  #wait(options: AcquireOptions | undefined): Promise<Lease<T>> {
    const timeoutMs = options?.timeoutMs ?? this.options.acquireTimeoutMs;
    const signal = options?.signal;
    if (signal?.aborted) {
      this.#counters.aborted++;
      return Promise.reject(signal.reason);
    }
    if (this.#waiters.length >= this.options.maxWaiting) {
      return Promise.reject(new QueueFullError(this.name, this.options.maxWaiting));
    }
    return new Promise<Lease<T>>((resolve, reject) => {
      const w = new Waiter<Lease<T>>(resolve, reject, timeoutMs);
      this.#waiters.push(w);
      const unstamped = this.#unstamped.push(w);
      if (unstamped === 1) setImmediate(this.#stamp);
      else if (unstamped >= STAMP_BATCH) this.#stamp();
      if (signal !== undefined) {
        const listener = () => {
          this.#waiters.remove(w);
          this.#counters.aborted++;
          w.abort = null;
          reject(signal.reason);
        };
        w.abort = { signal, listener };
        signal.addEventListener('abort', listener, { once: true });
      }
      if (this.#canCreate()) this.#fill();
    });
  }

  /** Unhooks a waiter leaving the queue. */
  #settle(w: Waiter<Lease<T>>): void {
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
      const w = this.#waiters.shift()!;
      this.#settle(w);
      w.resolve(this.#checkout(conn));
    }
    this.#fill();
  }

  // ---- deadlines ------------------------------------------------------------------------------

  /**
   * Dates the waiters queued since the last stamp. Reading the clock costs as much as the rest of
   * an acquire, so it is read once per batch: at the end of the current event-loop turn, or
   * after STAMP_BATCH waiters. A deadline may fire late by what remains of that turn (which
   * delays every timer anyway), never early.
   */
  readonly #stamp = (): void => {
    if (this.#unstamped.length === 0) return;
    const now = this.options.clock.now();
    let earliest = Infinity;
    for (const w of this.#unstamped) {
      if (!w.queued) continue;
      w.deadline = now + w.timeoutMs;
      if (w.deadline < earliest) earliest = w.deadline;
    }
    this.#unstamped.length = 0;
    if (earliest < this.#deadlineAt) this.#armDeadline(earliest);
  };

  /** One timer for the whole queue, set for the earliest deadline. */
  #armDeadline(at: number): void {
    const clock = this.options.clock;
    if (this.#deadlineTimer !== undefined) clock.clearTimeout(this.#deadlineTimer);
    this.#deadlineAt = at;
    this.#deadlineTimer = clock.setTimeout(() => this.#expireWaiters(), Math.max(0, at - clock.now()));
  }

  #expireWaiters(): void {
    this.#deadlineTimer = undefined;
    this.#deadlineAt = Infinity;
    const now = this.options.clock.now();
    let next = Infinity;
    let snapshot: PoolStats | undefined; // one per sweep: a snapshot costs O(connections)
    for (let w = this.#waiters.head; w !== null; ) {
      const following = w.next;
      if (w.deadline <= now) {
        snapshot ??= this.stats(); // the pool as the deadline found it
        this.#waiters.remove(w);
        this.#settle(w);
        this.#counters.timeouts++;
        w.reject(this.#exhausted(w.timeoutMs, snapshot));
      } else if (w.deadline < next) next = w.deadline;
      w = following;
    }
    if (next !== Infinity) this.#armDeadline(next);
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
    const clock = this.options.clock;
    const wait = this.#backoffUntil - clock.now();
    if (wait <= 0) return false;
    this.#backoffTimer ??= clock.setTimeout(() => {
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

    let settled = false;
    let finish!: (err?: unknown) => void;
    const outcome = new Promise<void>((resolve, reject) => {
      finish = (err?: unknown) => {
        if (settled) return;
        settled = true;
        conn.abort = null;
        o.clock.clearTimeout(timer);
        this.#pendingCreates.delete(outcome);
        if (err === undefined) {
          this.#opened(conn);
          resolve();
        } else {
          const failure =
            err instanceof ConnectionFailedError ? err : new ConnectionFailedError(o.name, `create failed: ${message(err)}`, err);
          this.#openFailed(conn, failure);
          reject(failure);
        }
      };
    });
    this.#pendingCreates.add(outcome);
    const timer = o.clock.setTimeout(() => {
      const err = new ConnectionFailedError(o.name, `create + ready took longer than createTimeoutMs (${o.createTimeoutMs} ms)`);
      conn.abort?.abort(err);
      finish(err);
    }, o.createTimeoutMs);

    const establish = async (): Promise<void> => {
      const value = await this.#connector.create(conn.ctx);
      if (settled) {
        // Timed out or the pool closed meanwhile: a late connection is closed, never leaked.
        if (value !== undefined && value !== null) this.#closeValue(value);
        return;
      }
      if (value === undefined || value === null) {
        throw new ConnectionFailedError(o.name, `create() resolved to ${String(value)}; it must resolve to the connection`);
      }
      conn.value = value;
      conn.state = 'establishing';
      let ready: boolean | void = true;
      try {
        if (this.#connector.ready) ready = await this.#connector.ready(value, conn.ctx);
      } catch (err) {
        throw new ConnectionFailedError(o.name, `ready() failed: ${message(err)}; the connection was closed`, err);
      }
      if (ready === false) throw new ConnectionFailedError(o.name, 'ready() returned false; the connection was closed');
      finish();
    };
    establish().catch((err: unknown) => finish(err));
    return outcome;
  }

  /** @internal Called by a connection's {@link ConnectionContext}. */
  [fromConnector](conn: SharedConnection<T>, change: { retire: unknown } | { limit: number }): void {
    if ('retire' in change) {
      const reason = change.retire === undefined ? 'retired by its connector' : message(change.retire);
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
    this.#index.update(conn);
    this.#dispatch();
  }

  #opened(conn: SharedConnection<T>): void {
    const o = this.options;
    this.#opening--;
    this.#counters.opened++;
    this.#failureStreak = 0;
    const now = o.clock.now();
    conn.state = 'ready';
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
    const delay = Math.min(o.createBackoffMs * 2 ** (this.#failureStreak - 1), o.maxCreateBackoffMs);
    this.#backoffUntil = o.clock.now() + delay;
    if (!this.#closed) o.logger.warn(`${err.message} (retry in ${delay} ms)`);
    conn.state = 'closed';
    if (conn.value !== undefined) this.#closeValue(conn.value);
    const old = conn.replaces;
    conn.replaces = null;
    if (old !== null) this.#retire(old, 'past its lifetime; its replacement failed to open');
    this.#fill();
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

  /** Calls the connector's close; errors are logged, never thrown. */
  #closeValue(value: T): Promise<void> {
    this.#counters.closed++;
    const close = this.#connector.close;
    if (close === undefined) return Promise.resolve();
    return (async () => {
      try {
        await close.call(this.#connector, value);
      } catch (err) {
        this.options.logger.error(`pool "${this.name}": closing a connection failed: ${message(err)}`, err);
      }
    })();
  }

  // ---- validation -----------------------------------------------------------------------------

  #needsValidation(conn: SharedConnection<T>): boolean {
    return (
      this.#connector.validate !== undefined &&
      this.options.clock.now() - conn.idleSince >= this.options.validateAfterIdleMs
    );
  }

  /** Checks an idle connection out of band; the result goes back to the pool whatever the waiters did. */
  #validate(conn: SharedConnection<T>): void {
    conn.validating = true;
    this.#index.remove(conn);
    const check = async () => (await this.#connector.validate!(conn.value as T)) !== false;
    check().then(
      (alive) => this.#validated(conn, alive ? undefined : new Error('validate() returned false')),
      (err: unknown) => this.#validated(conn, err ?? new Error('validate() threw')),
    );
  }

  #validated(conn: SharedConnection<T>, failure: unknown): void {
    conn.validating = false;
    if (failure !== undefined) {
      this.#counters.validationFailures++;
      this.#retire(conn, `validation failed: ${message(failure)}`, failure);
    }
    if (conn.state === 'ready') {
      conn.idleSince = this.options.clock.now();
      this.#index.add(conn);
    } else if (conn.state === 'draining' && conn.clients === 0) this.#closeConnection(conn);
    this.#dispatch();
  }

  // ---- background reaper ----------------------------------------------------------------------

  #scheduleReap(): void {
    this.#reapTimer = this.options.clock.setTimeout(() => this.#reap(), this.options.reapIntervalMs);
  }

  /** Retires idle-expired connections, rotates old ones (replacement first), tops up minSize. */
  #reap(): void {
    if (this.#closed) return;
    const o = this.options;
    const now = o.clock.now();
    for (const conn of this.#all) {
      if (conn.state !== 'ready' || conn.validating) continue;
      if (conn.clients === 0 && now - conn.idleSince >= o.maxIdleMs && this.#ready > o.minSize) {
        this.#retire(conn, 'idle');
      } else if (now >= conn.expiresAt && !conn.rotating && this.#opening < o.maxConcurrentCreates && !this.#backingOff()) {
        conn.rotating = true;
        this.#rotations++;
        void this.#create(conn).catch(noop);
      }
    }
    this.#fill();
    this.#scheduleReap();
  }

  // ---- shutdown -------------------------------------------------------------------------------

  async #shutdown(graceMs: number): Promise<void> {
    const clock = this.options.clock;
    this.#closed = true;
    this.#debug(`closing: ${this.#clients} clients get up to ${graceMs} ms`);
    for (const t of [this.#reapTimer, this.#backoffTimer, this.#deadlineTimer]) if (t !== undefined) clock.clearTimeout(t);
    this.#deadlineAt = Infinity;
    for (let w = this.#waiters.shift(); w !== null; w = this.#waiters.shift()) {
      this.#settle(w);
      w.reject(new PoolClosedError(this.name));
    }
    this.refresh();

    let graceTimer: TimerHandle | undefined;
    const graceOver = new Promise<void>((resolve) => (graceTimer = clock.setTimeout(resolve, graceMs)));
    const idle = new Promise<void>((resolve) => {
      if (this.#clients === 0) resolve();
      else this.#onIdle = resolve;
    });
    await Promise.race([idle, graceOver]);
    this.#onIdle = undefined;
    for (const conn of this.#all) if (conn.state === 'draining' && !conn.validating) this.#closeConnection(conn);
    for (const conn of this.#all) if (conn.state === 'opening' || conn.state === 'establishing') conn.abort?.abort(new PoolClosedError(this.name));
    await Promise.race([Promise.allSettled([...this.#pendingCreates]), graceOver]);
    clock.clearTimeout(graceTimer);
    await Promise.all([...this.#pendingCloses]);
    this.#debug('closed');
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
    } catch {
      return false;
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.options.clock.setTimeout(resolve, ms));
  }

  #debug(msg: string): void {
    this.options.logger.debug?.(`pool "${this.name}": ${msg}`);
  }
}

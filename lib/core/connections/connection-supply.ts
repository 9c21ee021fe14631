import { ConnectionFailedError, messageOf, PoolClosedError, type Timers } from '../common/index.js';
import type { ConnectionBudget, Connector, MemberSide, PoolCounters, RetireReason } from '../contracts/index.js';
import { ConnectionCloser } from './connection-closer.js';
import { ConnectionContext, kFromConnector, type ContextOwner } from './connection-context.js';
import { ConnectionOpener } from './connection-opener.js';
import { ConnectionSet } from './connection-set.js';
import { CreateBackoff } from './create-backoff.js';
import { HouseKeeper } from './house-keeper.js';
import { IdleValidation } from './idle-validation.js';
import { events, type PoolMetrics } from '../observation/index.js';
import type { ResolvedOptions } from '../options/index.js';
import type { SharedConnection } from './shared-connection.js';

const noop = () => {};

/** What the supply asks of the pool's queue side. */
export interface SupplyHost {
  isClosed(): boolean;
  /** Callers queued now. */
  waiting(): number;
  /** When the caller queued longest was dated (undefined: none, or not dated yet). */
  waitedSince(): number | undefined;
  /** Connections gained room (opened, validated, a limit raised): serve the queue. */
  dispatch(): void;
  /** Nothing can serve the queue until the next attempt: fail every queued caller with `error()`. */
  failQueue(error: () => unknown): void;
  /** The house-keeper's sweep ended. */
  swept(): void;
}

/**
 * Where a pool's connections come from and where they go: creates as demand and `minSize` need
 * them (with backoff after failures), readiness, validation of idle connections, retirement,
 * rotation, and closing. It keeps the pool's {@link ConnectionSet}; the pool's queue side reads
 * it on the hot path and tells the supply when a connection drains.
 */
export class ConnectionSupply<T> implements ContextOwner<T> {
  readonly set: ConnectionSet<T>;
  readonly opener: ConnectionOpener<T>;
  readonly closer: ConnectionCloser<T>;
  readonly backoff: CreateBackoff;
  readonly validation: IdleValidation<T>;
  readonly keeper: HouseKeeper<T>;
  /** The last failure: of a create, or what retired a connection. */
  lastError: unknown = undefined;
  /** How long a create took to be ready, ms, smoothed over the last few; 0 before the first. */
  connectMs = 0;
  /** The pool's metrics, when it records them. */
  metrics: PoolMetrics | undefined;
  /** The pool as its group sees it, what the budget is told of (a {@link SupplyMember}, set by the pool). */
  member!: MemberSide;

  constructor(
    readonly connector: Connector<T>,
    readonly options: ResolvedOptions,
    readonly timers: Timers,
    readonly counters: PoolCounters,
    readonly host: SupplyHost,
    /** The budget this pool shares with others (a pool group's member), if any. */
    readonly budget?: ConnectionBudget,
  ) {
    const o = options;
    this.set = new ConnectionSet(o.clientLimit, o.strategy, timers);
    this.closer = new ConnectionCloser(connector, o, {
      timers,
      counters,
      valueClosed: (value) => this.opener.closed(value),
      connectionClosed: (conn) => {
        this.set.all.delete(conn);
        this.debug(`connection ${conn.id} closed`);
        if (events.close.hasSubscribers) events.close.publish({ pool: this.name, connectionId: conn.id });
        this.budget?.ended(this.member);
        this.fill();
      },
    });
    this.opener = new ConnectionOpener(connector, o, {
      timers,
      opened: (conn) => this.#opened(conn),
      failed: (conn, err) => this.#openFailed(conn, err),
      abandoned: (conn) => {
        this.counters.createsAbandoned++;
        this.#dropOpening(conn);
      },
      closeValue: (value) => this.closer.closeValue(value),
    });
    this.backoff = new CreateBackoff(timers, o, () => this.fill());
    this.validation = new IdleValidation(
      connector,
      o,
      timers,
      this.set,
      (conn, failure) => this.#validated(conn, failure),
      () => {
        // A check close() cut short found the connection dead after all: it still counts.
        this.counters.validationFailures++;
      },
    );
    this.keeper = new HouseKeeper<T>({
      options: o,
      timers,
      isClosed: () => host.isClosed(),
      connections: () => this.set.all,
      readyCount: () => this.set.ready,
      mayOpen: () =>
        this.set.opening < o.maxConcurrentCreates &&
        this.backoff.mayStart(this.set.opening) &&
        this.budget?.mayOpen(this.member) !== false,
      retire: (conn, reason) => this.retire(conn, reason),
      rotate: (conn) => void this.#create(conn).catch(noop),
      fill: () => this.fill(),
      swept: () => host.swept(),
    });
  }

  get name(): string {
    return this.options.name;
  }

  /**
   * Most connections now: `maxSize`, or more (up to `growMaxSizeTo`) while the ready ones take
   * fewer callers than `clientLimit`, enough to carry `maxSize × clientLimit` callers.
   */
  get maxSizeNow(): number {
    const o = this.options;
    if (o.growMaxSizeTo === o.maxSize) return o.maxSize;
    const perConnection = this.perConnection;
    if (perConnection >= o.clientLimit) return o.maxSize;
    return Math.min(o.growMaxSizeTo, Math.max(o.maxSize, Math.ceil((o.maxSize * o.clientLimit) / perConnection)));
  }

  /** Callers a connection takes: `clientLimit`, or, for a pool that may grow, what its ready connections take on average. */
  get perConnection(): number {
    const o = this.options;
    const set = this.set;
    if (o.growMaxSizeTo === o.maxSize || set.ready === 0) return o.clientLimit;
    return Math.max(1, set.capacity / set.ready);
  }

  #canCreate(): boolean {
    const set = this.set;
    // The counts first: a saturated pool answers without a call.
    return set.size < this.maxSizeNow && set.opening < this.options.maxConcurrentCreates && !this.host.isClosed();
  }

  /**
   * Starts the creates that queued callers and `minSize` need, unless backing off. With a shared
   * budget that has no room, a queue the pool cannot serve is reported to the budget instead.
   */
  fill(): void {
    const o = this.options;
    const set = this.set;
    const perConnection = this.perConnection;
    while (this.#canCreate() && (this.host.waiting() > set.opening * perConnection || set.size < o.minSize)) {
      if (!this.backoff.mayStart(set.opening)) return;
      if (this.budget !== undefined && !this.budget.mayOpen(this.member)) {
        if (this.host.waiting() > set.opening * perConnection) this.budget.starved(this.member);
        return;
      }
      void this.#create(null).catch(noop);
    }
  }

  /** A caller queued: open what the queue needs, if a create may start. */
  demand(): void {
    if (this.#canCreate()) this.fill();
  }

  /** Opens one more connection ahead of demand, so callers do not queue behind a cold connect. */
  grow(): void {
    if (
      this.set.opening === 0 &&
      this.#canCreate() &&
      this.backoff.mayStart(0) &&
      this.budget?.mayOpen(this.member) !== false
    )
      void this.#create(null).catch(noop);
  }

  /** Opens connections until `minSize` are ready; rejects with the first create failure. */
  async warmup(): Promise<void> {
    // fill() opens what minSize lacks within maxConcurrentCreates, creates in flight included.
    for (;;) {
      if (this.host.isClosed()) throw new PoolClosedError(this.name);
      if (this.set.ready >= this.options.minSize) return;
      this.fill();
      if (this.opener.pending.size === 0) {
        // Only a backoff stops fill() here: the last create failed.
        throw this.backoff.lastFailure ?? new ConnectionFailedError(this.name, 'warmup could not start a create');
      }
      await Promise.race(this.opener.pending);
    }
  }

  /**
   * Opens one connection, or a replacement for `replaces` (rotation: the old one keeps serving
   * until the new one is ready). The slot is counted before any await, so concurrent callers
   * never open the same one twice. Settles when the connection is ready (or failed).
   */
  #create(replaces: SharedConnection<T> | null): Promise<void> {
    const conn = this.set.begin(replaces);
    conn.createdAt = this.timers.now();
    this.budget?.began(this.member);
    if (events.createStart.hasSubscribers) events.createStart.publish({ pool: this.name, connectionId: conn.id });
    conn.ctx = new ConnectionContext(this, conn);
    this.counters.createsStarted++;
    this.debug(
      replaces === null ? `opening connection ${conn.id}` : `opening connection ${conn.id} to replace ${replaces.id}`,
    );
    return this.opener.open(conn);
  }

  #opened(conn: SharedConnection<T>): void {
    const o = this.options;
    this.counters.opened++;
    if (this.backoff.succeeded())
      o.logger.info?.(`pool "${this.name}": a create succeeded; the breaker closed and callers are served again`);
    const now = this.timers.now();
    const took = now - conn.createdAt;
    this.connectMs = this.connectMs === 0 ? took : 0.8 * this.connectMs + 0.2 * took;
    this.budget?.connected(this.member);
    if (events.createEnd.hasSubscribers)
      events.createEnd.publish({ pool: this.name, connectionId: conn.id, durationMs: took });
    this.metrics?.created(took);
    const old = this.set.opened(conn, now, now + o.maxLifetimeMs * (1 + o.lifetimeJitter * (2 * Math.random() - 1)));
    this.debug(`connection ${conn.id} ready`);
    if (old !== null) this.retire(old, 'lifetime', 'rotated: past its lifetime');
    if (this.host.isClosed()) this.retire(conn, 'closed', 'pool closed');
    else if (conn.retireOnReady !== undefined) this.retire(conn, conn.retireOnReady.reason, conn.retireOnReady.detail);
    this.host.dispatch();
  }

  #openFailed(conn: SharedConnection<T>, err: ConnectionFailedError): void {
    this.counters.createFailures++;
    this.lastError = err;
    if (events.createFailure.hasSubscribers) {
      events.createFailure.publish({
        pool: this.name,
        connectionId: conn.id,
        error: err,
        durationMs: this.timers.now() - conn.createdAt,
      });
    }
    const backoff = this.backoff;
    const { delay, opened } = backoff.failed(err, conn.createdAt, this.#isPermanent(err.cause));
    if (!this.host.isClosed()) {
      this.options.logger.warn(`${err.message} (retry in ${delay} ms)`);
      if (opened)
        this.options.logger.warn(
          `pool "${this.name}": ${backoff.streak} creates failed in a row: the breaker opened; callers fail fast until a probe succeeds`,
        );
    }
    this.#dropOpening(conn);
    // With the breaker open, nothing can serve the queue until a probe succeeds: route the connect error to it.
    const set = this.set;
    if (backoff.open && set.ready === 0 && set.opening === 0 && this.host.waiting() > 0) {
      this.host.failQueue(() => backoff.failFast(0));
    }
    this.fill();
  }

  /** The connector's isPermanent() of a create's failure; one that throws is logged and means "not permanent". */
  #isPermanent(cause: unknown): boolean {
    const isPermanent = this.connector.isPermanent;
    if (isPermanent === undefined || cause === undefined) return false;
    try {
      return isPermanent.call(this.connector, cause) === true;
    } catch (thrown) {
      this.options.logger.error(
        `pool "${this.name}": connector.isPermanent() threw (${messageOf(thrown)}); the failure counts as transient`,
        thrown,
      );
      return false;
    }
  }

  /**
   * A create that failed or was given up (timed out, the pool closed): its value, if any, is
   * closed. A shared budget counts its place until the connector's create has ended too, and
   * whatever that made late is closed: the server may see it until then.
   */
  #dropOpening(conn: SharedConnection<T>): void {
    this.set.dropOpening(conn);
    const closed = conn.value === undefined ? undefined : this.closer.closeValue(conn.value);
    const budget = this.budget;
    if (budget === undefined) return;
    const end = () => budget.ended(this.member);
    void Promise.all([conn.createEnded, closed]).then(end, end);
  }

  /** @internal Called by a connection's {@link ConnectionContext}. */
  [kFromConnector](
    conn: SharedConnection<T>,
    change: { retire: unknown; graceful: boolean } | { limit: number },
  ): void {
    if ('retire' in change) {
      const detail = change.retire === undefined ? 'retired by its connector' : messageOf(change.retire);
      if (conn.state === 'opening' || conn.state === 'establishing')
        conn.retireOnReady = { reason: 'connector', detail };
      // A graceful close is no error: the pool's lastError stays as it was.
      else this.retire(conn, 'connector', detail, change.graceful ? undefined : change.retire);
      return;
    }
    const limit = Math.max(1, Math.min(this.options.clientLimit, Math.floor(change.limit) || 1));
    if (this.set.setLimit(conn, limit)) this.host.dispatch();
  }

  /** Takes a ready connection out of service; it closes once its last client leaves. `detail` says more than `reason`, for the log. */
  retire(conn: SharedConnection<T>, reason: RetireReason, detail: string = reason, cause?: unknown): void {
    if (!this.set.retire(conn)) return;
    this.counters.retired++;
    this.counters.retiredBy[reason]++;
    if (cause !== undefined) this.lastError = cause;
    this.debug(`connection ${conn.id} retired: ${detail}`);
    if (events.retire.hasSubscribers) events.retire.publish({ pool: this.name, connectionId: conn.id, reason, detail });
    // A connection being validated closes when its validation ends.
    if (conn.clients === 0 && !conn.validating) this.closer.close(conn);
    if (!this.host.isClosed()) this.fill();
  }

  /**
   * Retires every connection: ready ones take no new clients and close once idle; ones still
   * opening (their create began before the refresh) are retired as soon as they are ready.
   */
  refresh(reason: 'refresh' | 'closed' = 'refresh'): void {
    const detail = reason === 'closed' ? 'pool closed' : 'refresh';
    for (const conn of this.set.all) {
      if (conn.state === 'opening' || conn.state === 'establishing') conn.retireOnReady = { reason, detail };
      else this.retire(conn, reason, detail);
    }
  }

  /** A validation ended: a dead connection retires; a live one is back in service. */
  #validated(conn: SharedConnection<T>, failure: unknown): void {
    const closed = this.host.isClosed();
    if (failure !== undefined) {
      this.counters.validationFailures++;
      this.retire(conn, 'validation', `validation failed: ${messageOf(failure)}`, failure);
    }
    this.set.endValidation(conn, this.timers.now());
    if (conn.state === 'draining' && conn.clients === 0) this.closer.close(conn);
    if (!closed) this.host.dispatch();
  }

  /**
   * The pool is closing: background work stops, creates in flight are given up (a late arrival is
   * closed), every connection retires, and running validations and resets end.
   */
  stop(): void {
    this.keeper.stop();
    this.backoff.stop();
    this.set.idleStamps.stop();
    for (const conn of [...this.set.all]) conn.abandon?.();
    this.refresh('closed');
    for (const conn of [...this.set.all]) {
      conn.endValidation?.();
      conn.endReset?.();
    }
  }

  /** After the grace period: closes what still drains, and settles when every close has. */
  async closeAll(): Promise<void> {
    for (const conn of this.set.all) if (conn.state === 'draining') this.closer.close(conn);
    await this.closer.settled();
  }

  /** A debug line of the pool's logger, naming the pool. */
  debug(msg: string): void {
    this.options.logger.debug?.(`pool "${this.name}": ${msg}`);
  }
}

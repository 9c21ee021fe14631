import { type EventDates, LeaseHeldTooLongError, type PoolLogger, type Timers, turnDates } from '../common/index.js';
import type { PoolCounters, PoolHealth } from '../contracts/index.js';
import { events, HeldLeases, type MeasuredPool, PoolMetrics, PoolTimingWatches } from '../observation/index.js';
import { Lease, LeaseWatch, type LeaseOwner } from './lease.js';
import type { ResolvedOptions } from '../options/index.js';
import type { HealthFigures } from './pool-report.js';
import type { SharedConnection } from '../connections/index.js';
import type { Waiter } from '../waiting/index.js';

/** Worse states rank higher. */
const RANK: Record<PoolHealth, number> = { healthy: 0, degraded: 1, critical: 2, exhausted: 3, failing: 4 };

const percent = (u: number) => `${Math.round(u * 100)} %`;
const count = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;

/**
 * A pool's health over time, as its house-keeper samples it: each change is logged once (warn
 * when worse, info when better) with the figures that caused it, and published on the health
 * channel. Never once per acquire: the sample is taken every `reapIntervalMs`.
 */
export class HealthWatch {
  #last: PoolHealth = 'healthy';

  constructor(
    readonly pool: string,
    readonly logger: PoolLogger,
  ) {}

  get last(): PoolHealth {
    return this.#last;
  }

  /** Takes the pool's health now; logs and publishes it if it changed. */
  sample(stats: HealthFigures): void {
    const from = this.#last;
    const to = stats.health;
    if (to === from) return;
    this.#last = to;
    const figures =
      to === 'failing'
        ? `no connection is ready and creates fail: ${stats.lastError ?? 'no error recorded'}`
        : `utilization ${percent(stats.utilization)}, ${count(stats.clients, 'caller')} on ${stats.ready} of ${count(stats.maxSize, 'connection')}, ${stats.waiting} waiting` +
          (stats.budget?.holdsBack === true ? ` for a place in the budget "${stats.budget.name}"` : '');
    const line = `pool "${this.pool}": health ${from} → ${to} (${figures})`;
    if (RANK[to] > RANK[from]) this.logger.warn(line);
    else (this.logger.info ?? this.logger.warn).call(this.logger, line);
    if (events.health.hasSubscribers)
      events.health.publish({ pool: this.pool, from, to, utilization: stats.utilization, waiting: stats.waiting });
  }
}

/**
 * What watches a pool for the people running it: its health over time, its OpenTelemetry
 * metrics, and the leases it has out (leak detection, maxHoldMs). The pool's hot path asks only
 * `measures` (is there anything to time or track?), so a pool with none of it pays one test.
 */
export class PoolObservers {
  readonly health: HealthWatch;
  readonly metrics: PoolMetrics | undefined;
  /** The metrics, when they time waits, holds and creates. */
  readonly timed: PoolMetrics | undefined;
  readonly held: HeldLeases | undefined;
  /** Timings watched by someone (a dashboard), while someone watches. */
  readonly watches: PoolTimingWatches;
  /** Whether a lease needs more than `new Lease()`: it is timed, watched or tracked. */
  measures = false;
  /**
   * What dates leases: the turn's time on a clock with turns (the real one), so that the leases of
   * a turn share one clock read; every read of the clock on one without (a virtual clock).
   */
  readonly #dates: EventDates;

  constructor(
    options: ResolvedOptions,
    counters: PoolCounters,
    pool: MeasuredPool,
    readonly timers: Timers,
    /** `measures` changed (a first watch began, or the last ended). */
    changed: () => void = () => {},
  ) {
    const o = options;
    this.#dates = turnDates(timers);
    this.health = new HealthWatch(o.name, o.logger);
    // Every lease is timed while the metrics time (`timed` is for good): its zeros are the pool's counts of leases less the rest.
    this.metrics = PoolMetrics.of(o.metrics, o.metricTimings, o.name, pool, o.logger, counters);
    this.timed = this.metrics?.timings === true ? this.metrics : undefined;
    if (o.leakDetectionMs !== Infinity || o.maxHoldMs !== Infinity) {
      this.held = new HeldLeases(
        o.name,
        counters,
        o.leakDetectionMs,
        o.maxHoldMs,
        o.logger,
        (heldMs) => new LeaseHeldTooLongError(o.name, heldMs, o.maxHoldMs),
      );
    }
    this.watches = new PoolTimingWatches(() => {
      this.#settle();
      changed();
    });
    this.#settle();
  }

  /** Whether leases are timed for the metrics and nothing more (not watched, not tracked): see {@link timedLease}. */
  timedOnly = false;

  /** `measures` and `timedOnly` from what watches leases now (read on every checkout, so kept, not derived each time). */
  #settle(): void {
    const watched = this.watches.counts !== undefined;
    this.measures = this.timed !== undefined || this.held !== undefined || watched;
    this.timedOnly = this.timed !== undefined && this.held === undefined && !watched;
  }

  /**
   * A lease when only the metrics time it: {@link lease}'s common case in a few steps, small
   * enough for the checkout to take in. `waiter`: the queued caller it serves, if any.
   */
  timedLease<T>(owner: LeaseOwner<T>, conn: SharedConnection<T>, waiter: Waiter<Lease<T>> | undefined): Lease<T> {
    const now = this.#dates.now();
    const timed = this.timed!;
    const queued = waiter?.since;
    // A wait of 0, counted from the pool's leases once the metrics aggregate: no call at all.
    if (queued === undefined) {
      if (!timed.zerosCounted) timed.waitedNone();
    } else if (now > queued) timed.waited(now - queued);
    else if (!timed.zerosCounted) timed.waited(0);
    return new Lease(owner, conn, undefined, now);
  }

  /** A lease timed and tracked as asked, dated once for all. `waiter`: the queued caller it serves, if any. */
  lease<T>(owner: LeaseOwner<T>, conn: SharedConnection<T>, waiter: Waiter<Lease<T>> | undefined): Lease<T> {
    const now = this.#dates.now();
    const timed = this.timed;
    const watched = this.watches.counts;
    const timing = timed !== undefined || watched !== undefined;
    if (timing) {
      // A queued caller waited since its batch was stamped (a caller served before the stamp waited less than a turn).
      const queued = waiter?.since;
      if (queued === undefined) {
        if (timed?.zerosCounted === false) timed.waitedNone();
        watched?.wait.record(0);
      } else {
        // A batch dated mid-turn (every 256 callers) may be dated after the turn's time: a wait of 0.
        const waited = now > queued ? now - queued : 0;
        if (waited !== 0 || timed?.zerosCounted === false) timed?.waited(waited);
        watched?.wait.record(waited);
      }
    }
    const since = timing ? now : NaN;
    const held = this.held;
    if (held === undefined) return new Lease(owner, conn, undefined, since);
    const watch = new LeaseWatch();
    const lease = new Lease(owner, conn, watch, since);
    watch.hold = held.add(lease, conn.id, now, waiter?.extras?.stack);
    if (held.maxHoldMs !== Infinity) watch.expiry = new AbortController();
    return lease;
  }

  /** A lease is back: its hold timed (`since`: when it began; NaN: not timed), its place among the held leases given up. */
  returned(watch: LeaseWatch | undefined, since: number): void {
    const now = this.#dates.now();
    if (!Number.isNaN(since)) this.#held(now - since);
    if (watch?.hold !== undefined) this.held!.remove(watch.hold, now);
  }

  /** A timed lease that is not tracked is back, begun at `since`: the checkin's one step. */
  timedBack(since: number): void {
    // A lease begun since the turn's clock last read, the commonest, was held for no time and takes no date.
    this.#held(this.#dates.elapsed(since));
  }

  #held(ms: number): void {
    const timed = this.timed;
    // A hold of 0 (begun and ended in one turn), counted from the pool's leases once the metrics aggregate: no call at all.
    if (timed !== undefined && (ms !== 0 || !timed.zerosCounted)) timed.used(ms);
    this.watches.counts?.hold.record(ms);
  }

  /** Where a caller that is about to wait asked, while leak detection is on. */
  stackOfWaiter(): string | undefined {
    return this.held?.capturesStacks === true ? this.held.here() : undefined;
  }

  /** The house-keeper's sweep: health sampled, held leases checked. */
  swept(health: HealthFigures): void {
    this.health.sample(health);
    this.held?.sweep(this.timers.now());
  }

  /** Age of the lease held longest; null when leases are not kept. */
  oldestLeaseMs(): number | null {
    return this.held === undefined ? null : (this.held.oldestMs(this.timers.now()) ?? 0);
  }

  /** The pool closed. */
  stop(): void {
    this.metrics?.stop();
  }
}

import { LeaseHeldTooLongError, type PoolLogger, type Timers } from '../common/index.js';
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
        : `utilization ${percent(stats.utilization)}, ${count(stats.clients, 'caller')} on ${stats.ready} of ${count(stats.maxSize, 'connection')}, ${stats.waiting} waiting`;
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
  measures: boolean;

  constructor(
    options: ResolvedOptions,
    counters: PoolCounters,
    pool: MeasuredPool,
    readonly timers: Timers,
    /** `measures` changed (a first watch began, or the last ended). */
    changed: () => void = () => {},
  ) {
    const o = options;
    this.health = new HealthWatch(o.name, o.logger);
    this.metrics = PoolMetrics.of(o.metrics, o.metricTimings, o.name, pool);
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
      this.measures = this.#measuresAlways || this.watches.counts !== undefined;
      changed();
    });
    this.#measuresAlways = this.timed !== undefined || this.held !== undefined;
    this.measures = this.#measuresAlways;
  }

  /** Timed or tracked, whether watched or not. */
  readonly #measuresAlways: boolean;

  /** A lease timed and tracked as asked: one read of the clock for all. `waiter`: the queued caller it serves, if any. */
  lease<T>(owner: LeaseOwner<T>, conn: SharedConnection<T>, waiter: Waiter<Lease<T>> | undefined): Lease<T> {
    const now = this.timers.now();
    const timed = this.timed;
    const watched = this.watches.counts;
    if (timed !== undefined || watched !== undefined) {
      // A queued caller waited since its batch was stamped (a caller served before the stamp waited less than a turn).
      const since = waiter?.since;
      if (since === undefined) {
        timed?.waitedNone();
        watched?.wait.record(0);
      } else {
        const waited = now - since;
        timed?.waited(waited);
        watched?.wait.record(waited);
      }
    }
    const watch = new LeaseWatch(timed === undefined && watched === undefined ? undefined : now);
    const lease = new Lease(owner, conn, watch);
    const held = this.held;
    if (held !== undefined) {
      watch.hold = held.add(lease, conn.id, now, waiter?.extras?.stack);
      if (held.maxHoldMs !== Infinity) watch.expiry = new AbortController();
    }
    return lease;
  }

  /** A lease is back: its hold timed, its place among the held leases given up. */
  returned(watch: LeaseWatch): void {
    const now = this.timers.now();
    if (watch.since !== undefined) {
      this.timed?.used(now - watch.since);
      this.watches.counts?.hold.record(now - watch.since);
    }
    if (watch.hold !== undefined) this.held!.remove(watch.hold, now);
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

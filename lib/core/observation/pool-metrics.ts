// Metrics of a pool through the OpenTelemetry API (an optional peer): the semantic conventions
// for client connection pools (`db.client.connection.*`, so dashboards made for HikariCP and other
// pools work unchanged), and what only this pool has under `nestjs_shared_pool.*`. Gauges and
// counters are read from the pool's own counts when a reader collects, costing the hot path
// nothing; only the three timings are recorded as they happen.
import { createRequire } from 'node:module';
import type { PoolHealth, PoolStats, RetireReason } from '../contracts/index.js';
import type { PoolLogger, Rule } from '../common/index.js';
import {
  DURATION_BUCKETS,
  type ProducerPart,
  TIMING_INSTRUMENTS,
  TimingHistogram,
  timingsProduced,
  type PoolTimingSeries,
} from './pool-timings.js';
import { limiterInstruments } from './limiter-metrics.js';
import { placeTimings } from './sdk-readers.js';

/** Attributes of a measurement. */
export type MetricsAttributes = Record<string, string | number | boolean>;

/** Options of one instrument, as the OpenTelemetry API takes them. */
export interface MetricsInstrumentOptions {
  description?: string;
  unit?: string;
  advice?: { explicitBucketBoundaries?: number[] };
}

/**
 * The part of an OpenTelemetry `Meter` the pool uses: `metrics.getMeter(...)` of
 * `@opentelemetry/api` fits it. Typed by these fields only, so the package's types need no
 * OpenTelemetry package installed.
 */
export interface MetricsMeter {
  createHistogram(
    name: string,
    options?: MetricsInstrumentOptions,
  ): { record(value: number, attributes?: MetricsAttributes): void };
  createObservableGauge(name: string, options?: MetricsInstrumentOptions): object;
  createObservableCounter(name: string, options?: MetricsInstrumentOptions): object;
  createObservableUpDownCounter(name: string, options?: MetricsInstrumentOptions): object;
  addBatchObservableCallback(callback: (observer: MetricsObserver) => void, observables: object[]): void;
  removeBatchObservableCallback(callback: (observer: MetricsObserver) => void, observables: object[]): void;
}

const HEALTH_STATES: readonly PoolHealth[] = ['healthy', 'degraded', 'critical', 'exhausted', 'failing'];
const REASONS: readonly RetireReason[] = [
  'idle',
  'lifetime',
  'failed',
  'connector',
  'validation',
  'reset',
  'refresh',
  'closed',
  'group',
];
const MODES = ['local', 'redis', 'quarantine', 'unreachable', 'fallback', 'fail-closed'] as const;
const POOL = 'db.client.connection.pool.name';

let globalMeter: MetricsMeter | null | undefined;

/** A Meter's histogram, as the timings record into it. */
type TimingInstrument = { record(value: number, attributes?: MetricsAttributes): void };
/** The histogram of a pool that aggregates its timings: never recorded into. */
const UNUSED: TimingInstrument = { record() {} };

/**
 * The meter of the application's global MeterProvider, or null when `@opentelemetry/api` is not
 * installed or no provider is registered (its no-op provider): then nothing is recorded and
 * nothing is paid. Looked up once, when the first pool is made.
 */
function appMeter(): MetricsMeter | null {
  if (globalMeter !== undefined) return globalMeter;
  try {
    const api = createRequire(import.meta.url)('@opentelemetry/api') as {
      metrics: { getMeterProvider(): { constructor: { name: string }; getMeter(name: string): MetricsMeter } };
    };
    const provider = api.metrics.getMeterProvider();
    globalMeter = provider.constructor.name === 'NoopMeterProvider' ? null : provider.getMeter('nestjs-shared-pool');
  } catch {
    globalMeter = null;
  }
  return globalMeter;
}

/** @internal The rule of every `metrics` option (a pool's, a group's): a boolean, or a Meter. */
export const meterRule: Rule = {
  says: 'true (the global MeterProvider), false, or a Meter of @opentelemetry/api',
  ok: (v) =>
    typeof v === 'boolean' ||
    (typeof v === 'object' &&
      v !== null &&
      typeof (v as MetricsMeter).createHistogram === 'function' &&
      typeof (v as MetricsMeter).addBatchObservableCallback === 'function'),
};

/** What a batch callback is handed: it observes each instrument's value. */
export type MetricsObserver = { observe(observable: object, value: number, attributes?: MetricsAttributes): void };

/**
 * @internal Registers `collect` to observe `observables` whenever a reader collects; returns what
 * unregisters it (a closed pool or group stops reporting).
 */
export function observeEach(
  meter: MetricsMeter,
  observables: object[],
  collect: (observer: MetricsObserver) => void,
): () => void {
  meter.addBatchObservableCallback(collect, observables);
  return () => meter.removeBatchObservableCallback(collect, observables);
}

/** @internal The meter a `metrics` option names: the app's (true), none (false), or the one given. */
export function meterOf(option: boolean | MetricsMeter): MetricsMeter | null {
  return option === false ? null : option === true ? appMeter() : option;
}

/** @internal For tests: forget the global meter looked up before (a provider registered since). */
export function forgetAppMeter(): void {
  globalMeter = undefined;
}

/** What the collection reads of a pool. */
export interface MeasuredPool {
  stats(): PoolStats;
}

/** @internal A pool's own counts of its leases: one wait each as it is made, one hold each as it comes back. */
export interface LeaseCounts {
  readonly acquired: number;
  readonly released: number;
}

/**
 * One pool's instruments. `waited`, `used` and `created` take milliseconds and record seconds;
 * the rest is observed from `stats()` when a reader collects.
 */
export class PoolMetrics {
  readonly #attributes: MetricsAttributes;
  /** The Meter's histograms, when the timings go through them (see #place). */
  readonly #wait: TimingInstrument;
  readonly #use: TimingInstrument;
  readonly #create: TimingInstrument;
  /** The timings aggregated here, for the producers (see pool-timings.ts). */
  readonly #series: PoolTimingSeries;
  /** The producers' parts the series joined. */
  readonly #parts: ProducerPart[] = [];
  /** Whether the timings are aggregated here: always (every reader has a producer), or once the application made one (readers not seen). */
  readonly #aggregates: 'always' | 'with a producer' | 'never';
  /** Whether they are aggregated here now (see #aggregated). */
  #aggregating = false;
  /**
   * Whether a wait or hold of 0 may go unrecorded: aggregated here, the histograms count them
   * from the pool's counts of its leases (a lease begun and ended in one turn is the commonest
   * case, and then its timings cost no call at all). Until then, every value is recorded.
   */
  zerosCounted = false;
  readonly #leases: LeaseCounts | undefined;
  /** Its three histograms, held directly: recording a value is on every acquire and release. */
  readonly #waited: TimingHistogram;
  readonly #used: TimingHistogram;
  readonly #created: TimingHistogram;
  /** Unregisters the gauges and counters, and the timings from any producer. */
  readonly stop: () => void;

  /** The pool's metrics per its `metrics` option, or undefined when there is nowhere to record them. */
  static of(
    option: boolean | MetricsMeter,
    timings: boolean,
    name: string,
    pool: MeasuredPool,
    logger?: PoolLogger,
    leases?: LeaseCounts,
  ): PoolMetrics | undefined {
    const meter = meterOf(option);
    return meter === null ? undefined : new PoolMetrics(meter, timings, name, pool, logger, leases);
  }

  /** Whether it times waits, holds and creates (`metricTimings`). */
  readonly timings: boolean;

  /** `leases`: the pool's counts of its leases, if every lease from now on is timed (then zeros are counted from them). */
  constructor(
    meter: MetricsMeter,
    timings: boolean,
    name: string,
    pool: MeasuredPool,
    logger?: PoolLogger,
    leases?: LeaseCounts,
  ) {
    this.timings = timings;
    this.#leases = leases;
    this.#attributes = { [POOL]: name };
    this.#series = {
      attributes: { [POOL]: name },
      histograms: { wait: new TimingHistogram(), use: new TimingHistogram(), create: new TimingHistogram() },
    };
    ({ wait: this.#waited, use: this.#used, create: this.#created } = this.#series.histograms);
    let aggregates: 'always' | 'with a producer' | 'never' = 'never';
    if (timings) {
      const placed = placeTimings(meter, name, logger);
      aggregates = placed.aggregates;
      for (const part of placed.parts) this.#join(part);
    }
    this.#aggregates = aggregates;
    // Seconds, as the conventions record durations; from sub-millisecond waits of a warm pool to a slow connect.
    const histogram = (kind: keyof typeof TIMING_INSTRUMENTS): TimingInstrument => {
      if (this.#aggregates === 'always') return UNUSED;
      const { name: instrument, description } = TIMING_INSTRUMENTS[kind];
      return meter.createHistogram(instrument, {
        description,
        unit: 's',
        advice: { explicitBucketBoundaries: [...DURATION_BUCKETS] },
      });
    };
    this.#wait = histogram('wait');
    this.#use = histogram('use');
    this.#create = histogram('create');
    const connections = (unit: string, description: string) =>
      meter.createObservableUpDownCounter(`db.client.connection.${unit}`, { unit: '{connection}', description });
    const count = connections(
      'count',
      'The number of connections that are currently in the state described by the state attribute',
    );
    const idleMax = connections('idle.max', 'The maximum number of idle open connections allowed');
    const idleMin = connections('idle.min', 'The minimum number of idle open connections allowed');
    const max = connections('max', 'The maximum number of open connections allowed');
    const pending = meter.createObservableUpDownCounter('db.client.connection.pending_requests', {
      unit: '{request}',
      description: 'The number of current pending requests for an open connection',
    });
    const timeouts = meter.createObservableCounter('db.client.connection.timeouts', {
      unit: '{timeout}',
      description: 'The number of connection timeouts that have occurred trying to obtain a connection from the pool',
    });
    const clients = meter.createObservableUpDownCounter('nestjs_shared_pool.clients', {
      unit: '{caller}',
      description: 'Callers holding a lease: a shared connection serves up to client_limit at once',
    });
    const clientLimit = meter.createObservableGauge('nestjs_shared_pool.client_limit', {
      unit: '{caller}',
      description: 'Callers one connection serves at once',
    });
    const utilization = meter.createObservableGauge('nestjs_shared_pool.utilization', {
      unit: '1',
      description: 'Callers over max × client_limit, or the admission limiter’s share if higher',
    });
    const health = meter.createObservableGauge('nestjs_shared_pool.health', {
      unit: '1',
      description: 'The pool’s health: 1 for the state it is in, 0 for the others',
    });
    const retirements = meter.createObservableCounter('nestjs_shared_pool.retirements', {
      unit: '{connection}',
      description: 'Connections taken out of service, by reason (lifetime: rotations)',
    });
    const admitted = meter.createObservableCounter('nestjs_shared_pool.limiter.admitted', {
      unit: '{lease}',
      description: 'Leases the admission limiter admitted',
    });
    const refused = meter.createObservableCounter('nestjs_shared_pool.limiter.refused', {
      unit: '{lease}',
      description: 'Leases the admission limiter refused, by the limit that refused them',
    });
    const lost = meter.createObservableCounter('nestjs_shared_pool.limiter.lost', {
      unit: '{lease}',
      description: 'Held leases the limiter lost (a Redis TTL lapsed)',
    });
    const used = meter.createObservableUpDownCounter('nestjs_shared_pool.limiter.used', {
      unit: '{lease}',
      description: 'Leases held against the global limit, across instances',
    });
    const mode = meter.createObservableGauge('nestjs_shared_pool.limiter.mode', {
      unit: '1',
      description: 'The limiter’s mode: 1 for the one it is in, 0 for the others',
    });
    const limit = meter.createObservableGauge('nestjs_shared_pool.limit', {
      unit: '{lease}',
      description: 'The admission limiter’s global limit now (an adaptive one moves it)',
    });
    const waiting = limiterInstruments(meter);
    const observables = [
      ...waiting.observables,
      count,
      idleMax,
      idleMin,
      max,
      pending,
      timeouts,
      clients,
      clientLimit,
      utilization,
      health,
      retirements,
      admitted,
      refused,
      lost,
      used,
      mode,
      limit,
    ];
    const a = this.#attributes;
    const idle = { ...a, 'db.client.connection.state': 'idle' };
    const busy = { ...a, 'db.client.connection.state': 'used' };
    const unobserve = observeEach(meter, observables, (observer) => {
      const s = pool.stats();
      observer.observe(count, s.idle, idle);
      observer.observe(count, s.ready - s.idle, busy);
      observer.observe(idleMax, s.maxSize, a);
      observer.observe(idleMin, s.minSize, a);
      observer.observe(max, s.maxSize, a);
      observer.observe(pending, s.waiting, a);
      observer.observe(timeouts, s.counters.timeouts, a);
      observer.observe(clients, s.clients, a);
      observer.observe(clientLimit, s.clientLimit, a);
      observer.observe(utilization, s.utilization, a);
      for (const state of HEALTH_STATES) observer.observe(health, s.health === state ? 1 : 0, { ...a, state });
      for (const reason of REASONS) observer.observe(retirements, s.counters.retiredBy[reason], { ...a, reason });
      const l = s.admission;
      if (l === undefined) return;
      observer.observe(admitted, l.counters.admitted, a);
      observer.observe(refused, l.counters.refusedGlobal, { ...a, limit: 'global' });
      observer.observe(refused, l.counters.refusedKey, { ...a, limit: 'key' });
      observer.observe(lost, l.counters.lost, a);
      observer.observe(used, l.used, a);
      for (const m of MODES) observer.observe(mode, l.mode === m ? 1 : 0, { ...a, mode: m });
      if (Number.isFinite(l.limit)) observer.observe(limit, l.limit, a);
      waiting.observe(observer, l, a);
    });
    this.stop = () => {
      unobserve();
      for (const part of this.#parts) part.series.delete(this.#series);
    };
  }

  #join(part: ProducerPart): void {
    part.series.add(this.#series);
    this.#parts.push(part);
  }

  /** An acquire got its connection after `ms` (with {@link zerosCounted}, a wait of 0 need not be told). */
  waited(ms: number): void {
    this.#time(this.#waited, this.#wait, ms, 'wait');
  }

  /** An acquire got its connection at once: a wait of 0 (the same data as `waited(0)`, for less). */
  waitedNone(): void {
    if (this.#aggregated('wait')) this.#waited.recordZero();
    else this.#wait.record(0, this.#attributes);
  }

  /** A lease was held `ms` (with {@link zerosCounted}, a hold of 0 need not be told). */
  used(ms: number): void {
    this.#time(this.#used, this.#use, ms, 'hold');
  }

  /** A connection took `ms` to open and be ready. */
  created(ms: number): void {
    this.#time(this.#created, this.#create, ms, undefined);
  }

  /** Seconds into the pool's own histogram for the producers, or through the Meter's (see #place). */
  #time(own: TimingHistogram, instrument: TimingInstrument, ms: number, lease: 'wait' | 'hold' | undefined): void {
    if (this.#aggregated(lease)) own.record(ms / 1000);
    else instrument.record(ms / 1000, this.#attributes);
  }

  /**
   * Whether the timings are aggregated here now: once they are, for good (producers are never
   * unmade). From then on, the wait and hold histograms count their zeros from the pool's counts of
   * its leases; `lease` says which timing of a lease already counted is being told now (it is theirs).
   */
  #aggregated(lease: 'wait' | 'hold' | undefined): boolean {
    if (this.#aggregating) return true;
    const a = this.#aggregates;
    if (a === 'never' || (a === 'with a producer' && !timingsProduced())) return false;
    this.#aggregating = true;
    const leases = this.#leases;
    if (leases !== undefined) {
      this.#waited.zerosFrom(() => leases.acquired, lease === 'wait' ? 1 : 0);
      this.#used.zerosFrom(() => leases.released, lease === 'hold' ? 1 : 0);
      this.zerosCounted = true;
    }
    return true;
  }
}

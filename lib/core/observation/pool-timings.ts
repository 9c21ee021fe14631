// The three timing histograms of every pool (wait, use, create), aggregated inside the pool and
// handed to OpenTelemetry when a reader collects, through a MetricProducer (given to the readers
// by the pool itself where it can see them: see sdk-readers.ts). Recording a value
// through the SDK hashes its attributes every time (about 0.6 µs with the pool's one attribute);
// here a value costs a bucket search and a few increments. The data is the same as the SDK's
// explicit-bucket histogram would make of the same values: the same boundaries (inclusive upper
// bounds), counts, sum, count, min and max, under the same names, units and attributes.

/** A point in time as OpenTelemetry writes it: seconds and nanoseconds since the epoch. */
export type HrTime = [number, number];

/** One value set of a histogram, as the SDK's `Histogram` data point value has it. */
export interface HistogramValue {
  buckets: { boundaries: number[]; counts: number[] };
  sum: number;
  count: number;
  min?: number;
  max?: number;
}

/** Explicit bucket boundaries of the timings, in seconds (inclusive upper bounds). */
export const DURATION_BUCKETS: readonly number[] = [
  0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

/** The bucket bounds, as the hot path scans them. */
const BOUNDS = Float64Array.from(DURATION_BUCKETS);
const LAST = BOUNDS.length;
/** Where a {@link TimingHistogram} keeps its sum, count, min and max. */
const SUM = 0;
const COUNT = 1;
const MIN = 2;
const MAX = 3;

/**
 * Values recorded into fixed buckets: what a collection reads. Recording is on every acquire and
 * release, so it touches typed arrays only, and a wait of 0 (most acquires of a pool with room)
 * is one increment, counted into the rest when read; or, once its values are also counted
 * elsewhere ({@link zerosFrom}), nothing at all.
 */
export class TimingHistogram {
  readonly #counts = new Float64Array(LAST + 1);
  readonly #totals = Float64Array.of(0, 0, Infinity, -Infinity);
  /** Values of 0 recorded since the last read. */
  #zeros = 0;
  /** A count of every value it is given, 0 or not (see zerosFrom), and what that count stood at before the first. */
  #events: (() => number) | undefined = undefined;
  #eventsBefore = 0;
  #countingSince: HrTime | undefined = undefined;
  #start: HrTime | undefined = undefined;

  /** When the first value was recorded (the series' start), or undefined before. */
  get start(): HrTime | undefined {
    // Counted elsewhere, a 0 leaves no trace here: the series starts when the counting did.
    if (this.#start === undefined && this.#events !== undefined && this.#events() > this.#eventsBefore)
      this.#start = this.#countingSince;
    return this.#start;
  }

  /**
   * From now on, `events()` counts every value this histogram is given, 0 or not (a pool's leases:
   * one wait each, one hold each), and a 0 need not be recorded at all: a read counts the zeros as
   * the events less the values recorded. `given` events already counted belong to it (the one under
   * way). Call once, before any value.
   */
  zerosFrom(events: () => number, given = 0): void {
    this.#events = events;
    this.#eventsBefore = events() - given;
    this.#countingSince = now();
  }

  record(value: number): void {
    // A wait or hold of 0 (begun and ended in one turn, as leases are dated per turn) is the common value.
    if (value === 0) return this.recordZero();
    let i = 0;
    // 16 buckets: a linear scan of a small constant array beats a binary search here.
    while (i < LAST && value > BOUNDS[i]!) i++;
    this.#counts[i]!++;
    const t = this.#totals;
    t[SUM]! += value;
    t[COUNT]!++;
    if (value < t[MIN]!) t[MIN] = value;
    if (value > t[MAX]!) t[MAX] = value;
    if (this.#start === undefined) this.#start = this.#countingSince ?? now();
  }

  /** `record(0)`, for a wait that did not happen: the same data, for an increment (nothing, where zeros are counted elsewhere). */
  recordZero(): void {
    if (this.#events !== undefined) return;
    if (this.#zeros++ === 0 && this.#start === undefined) this.#start = now();
  }

  /** What was recorded: counts per bucket (a copy), sum, count, min and max (Infinity and -Infinity with none). */
  read(): { counts: Float64Array; sum: number; count: number; min: number; max: number } {
    const t = this.#totals;
    const zeros = this.#events === undefined ? this.#zeros : this.#events() - this.#eventsBefore - t[COUNT]!;
    if (zeros > 0) {
      this.#zeros = 0;
      this.#counts[0]! += zeros;
      t[COUNT]! += zeros;
      if (t[MIN]! > 0) t[MIN] = 0;
      if (t[MAX]! < 0) t[MAX] = 0;
    }
    return { counts: this.#counts.slice(), sum: t[SUM]!, count: t[COUNT]!, min: t[MIN]!, max: t[MAX]! };
  }
}

/** The instruments of the timings: name, description, unit. */
export const TIMING_INSTRUMENTS = {
  wait: {
    name: 'db.client.connection.wait_time',
    description: 'The time it took to obtain a connection from the pool',
  },
  use: {
    name: 'db.client.connection.use_time',
    description: 'The time between borrowing a connection and returning it to the pool',
  },
  create: { name: 'db.client.connection.create_time', description: 'The time it took to create a new connection' },
} as const;

export type TimingKind = keyof typeof TIMING_INSTRUMENTS;

/** A pool's three histograms, under its attributes. */
export interface PoolTimingSeries {
  readonly attributes: Readonly<Record<string, string>>;
  readonly histograms: Readonly<Record<TimingKind, TimingHistogram>>;
}

/**
 * What a producer hands over: the series of the pools whose Meter's readers it is given to, and,
 * since a Meter need not say where its data goes, the series of every pool whose Meter does not.
 */
export interface ProducerPart {
  readonly series: Set<PoolTimingSeries>;
}

const PART = Symbol('nestjs-shared-pool timings');

/**
 * @internal Series of pools whose Meter's readers cannot be seen (not the SDK's, or not as this
 * reads it): every producer the application made hands them over, as soon as one exists.
 */
export const unplacedSeries: ProducerPart = { series: new Set() };
/** Producers the application made (not those a pool gave a reader itself). */
let producers = 0;

/** @internal Whether the application made a producer: pools whose readers cannot be seen then aggregate their timings instead of recording each. */
export function timingsProduced(): boolean {
  return producers > 0;
}

/** @internal The part of one of this package's producers, if `producer` is one. */
export function producerPart(producer: unknown): ProducerPart | undefined {
  return typeof producer === 'object' && producer !== null ? (producer as { [PART]?: ProducerPart })[PART] : undefined;
}

function now(): HrTime {
  const ms = performance.timeOrigin + performance.now();
  const seconds = Math.floor(ms / 1000);
  return [seconds, Math.round((ms - seconds * 1000) * 1e6)];
}

/** Options of {@link poolMetricProducer}. */
export interface PoolMetricProducerOptions {
  /**
   * The aggregation temporality of the reader it is given to: `cumulative` (Prometheus, and OTLP
   * by default) or `delta` (an OTLP exporter set to delta). A delta point carries no min and max:
   * the pool keeps them since its start only. Default `cumulative`.
   */
  temporality?: 'cumulative' | 'delta';
}

/** What `collect()` returns, shaped as `@opentelemetry/sdk-metrics` reads a producer's result. */
export interface ProducedMetrics {
  resourceMetrics: { resource: object; scopeMetrics: { scope: { name: string }; metrics: object[] }[] };
  errors: unknown[];
}

/**
 * A `MetricProducer` of `@opentelemetry/sdk-metrics`, typed by what the reader calls. Its result
 * is a {@link ProducedMetrics}; it is typed `any` so that it fits the SDK's `MetricProducer`
 * without this package's types naming the SDK (an optional peer).
 */
export interface PoolMetricProducer {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the SDK's CollectionResult, which these types cannot name
  collect(options?: { timeoutMillis?: number }): Promise<any>;
}

/** The SDK's `DataPointType.HISTOGRAM` and `AggregationTemporality` values, and `ValueType.DOUBLE`. */
const HISTOGRAM = 0;
const TEMPORALITY = { delta: 0, cumulative: 1 } as const;
const DOUBLE = 1;

/**
 * Hands pools' timing histograms to an OpenTelemetry reader when it collects. A pool whose Meter
 * comes from an `@opentelemetry/sdk-metrics` MeterProvider (the global one included) gives each
 * of its readers such a producer itself, with the reader's temporality: you need this only where
 * a pool cannot see the readers (a Meter of another SDK, or one wrapped), or to choose the reader
 * yourself. Give it to the reader, once per reader:
 * `new PrometheusExporter({ metricProducers: [poolMetricProducer()] })`, or
 * `new PeriodicExportingMetricReader({ exporter, metricProducers: [poolMetricProducer()] })`.
 * A pool made while a reader of its Meter has one hands it its timings; a pool that cannot see
 * its Meter's readers hands them to every producer made, from the moment one exists. Either way
 * the pool aggregates its wait, use and create times itself (about 1 µs less per acquire and
 * release than recording each through the SDK) instead of recording them through the Meter's
 * histograms; its gauges and counters are unchanged. SDK Views do not apply to what a producer
 * gives.
 */
export function poolMetricProducer(options: PoolMetricProducerOptions = {}): PoolMetricProducer {
  const temporality = options.temporality ?? 'cumulative';
  if (temporality !== 'cumulative' && temporality !== 'delta') {
    throw new TypeError(`poolMetricProducer: temporality must be 'cumulative' or 'delta', got ${String(temporality)}`);
  }
  producers++;
  return makeProducer(temporality);
}

/** @internal A producer a pool gives a reader of its Meter itself (the application made none for it). */
export function readerProducer(temporality: 'cumulative' | 'delta'): PoolMetricProducer {
  return makeProducer(temporality);
}

function makeProducer(temporality: 'cumulative' | 'delta'): PoolMetricProducer {
  const part: ProducerPart = { series: new Set() };
  /** For delta: what each histogram held at the last collection, and when that was. */
  const last = new WeakMap<TimingHistogram, { counts: Float64Array; sum: number; count: number; at: HrTime }>();
  const producer: PoolMetricProducer & { [PART]: ProducerPart } = {
    [PART]: part,
    collect: (): Promise<ProducedMetrics> => {
      const end = now();
      const metrics = (Object.keys(TIMING_INSTRUMENTS) as TimingKind[]).map((kind) => {
        const { name, description } = TIMING_INSTRUMENTS[kind];
        const dataPoints: object[] = [];
        for (const s of each(part.series, unplacedSeries.series)) {
          const histogram = s.histograms[kind];
          if (histogram.start === undefined) continue;
          const h = histogram.read();
          if (temporality === 'cumulative') {
            dataPoints.push({
              startTime: histogram.start,
              endTime: end,
              attributes: s.attributes,
              value: valueOf(h.counts, h.sum, h.count, h.min, h.max),
            });
            continue;
          }
          const before = last.get(histogram);
          const counts = before === undefined ? h.counts : h.counts.map((c, i) => c - before.counts[i]!);
          const value = valueOf(
            counts,
            h.sum - (before?.sum ?? 0),
            h.count - (before?.count ?? 0),
            undefined,
            undefined,
          );
          dataPoints.push({ startTime: before?.at ?? histogram.start, endTime: end, attributes: s.attributes, value });
          last.set(histogram, { counts: h.counts, sum: h.sum, count: h.count, at: end });
        }
        return {
          descriptor: { name, description, unit: 's', valueType: DOUBLE },
          aggregationTemporality: TEMPORALITY[temporality],
          dataPointType: HISTOGRAM,
          dataPoints,
        };
      });
      return Promise.resolve({
        resourceMetrics: {
          resource: {},
          scopeMetrics: [
            { scope: { name: 'nestjs-shared-pool' }, metrics: metrics.filter((m) => m.dataPoints.length > 0) },
          ],
        },
        errors: [],
      });
    },
  };
  return producer;
}

function* each<T>(a: Set<T>, b: Set<T>): Generator<T> {
  yield* a;
  for (const x of b) if (!a.has(x)) yield x;
}

function valueOf(
  counts: Float64Array,
  sum: number,
  count: number,
  min: number | undefined,
  max: number | undefined,
): HistogramValue {
  const value: HistogramValue = { buckets: { boundaries: [...DURATION_BUCKETS], counts: [...counts] }, sum, count };
  if (min !== undefined && count > 0) {
    value.min = min;
    value.max = max;
  }
  return value;
}

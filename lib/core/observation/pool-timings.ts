// The three timing histograms of every pool (wait, use, create), aggregated inside the pool and
// handed to OpenTelemetry when a reader collects, through a MetricProducer. Recording a value
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

/** Values recorded into fixed buckets: what a collection reads. */
export class TimingHistogram {
  readonly counts = new Float64Array(DURATION_BUCKETS.length + 1);
  sum = 0;
  count = 0;
  min = Infinity;
  max = -Infinity;
  /** When the first value was recorded (the series' start), or undefined before. */
  start: HrTime | undefined;

  record(value: number): void {
    let i = 0;
    // 16 buckets: a linear scan of a small constant array beats a binary search here.
    while (i < DURATION_BUCKETS.length && value > DURATION_BUCKETS[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
    if (value < this.min) this.min = value;
    if (value > this.max) this.max = value;
    this.start ??= now();
  }

  /** `record(0)`, for a wait that did not happen: the first bucket, nothing added to the sum. */
  recordZero(): void {
    this.counts[0]!++;
    this.count++;
    if (this.min > 0) this.min = 0;
    if (this.max < 0) this.max = 0;
    this.start ??= now();
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

/** The series of every pool whose metrics are on, while it is open. */
const series = new Set<PoolTimingSeries>();
let producers = 0;

/** @internal Whether a producer exists: pools then aggregate their timings instead of recording each. */
export function timingsProduced(): boolean {
  return producers > 0;
}

/** @internal A pool's series joins the collections (`add`) or leaves them (its pool closed). */
export function timingSeries(entry: PoolTimingSeries, add: boolean): void {
  if (add) series.add(entry);
  else series.delete(entry);
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
 * Hands every pool's timing histograms to an OpenTelemetry reader when it collects. Give it to
 * the reader, once per reader:
 * `new PrometheusExporter({ metricProducers: [poolMetricProducer()] })`, or
 * `new PeriodicExportingMetricReader({ exporter, metricProducers: [poolMetricProducer()] })`.
 * From the moment one exists, pools aggregate their wait, use and create times themselves
 * (about 0.6 µs less per acquire and release than recording each through the SDK) instead of
 * recording them through the Meter's histograms; their gauges and counters are unchanged. Make it
 * before the pools serve. SDK Views do not apply to what a producer gives.
 */
export function poolMetricProducer(options: PoolMetricProducerOptions = {}): PoolMetricProducer {
  const temporality = options.temporality ?? 'cumulative';
  if (temporality !== 'cumulative' && temporality !== 'delta') {
    throw new TypeError(`poolMetricProducer: temporality must be 'cumulative' or 'delta', got ${String(temporality)}`);
  }
  producers++;
  /** For delta: what each histogram held at the last collection, and when that was. */
  const last = new WeakMap<TimingHistogram, { counts: Float64Array; sum: number; count: number; at: HrTime }>();
  return {
    collect: (): Promise<ProducedMetrics> => {
      const end = now();
      const metrics = (Object.keys(TIMING_INSTRUMENTS) as TimingKind[]).map((kind) => {
        const { name, description } = TIMING_INSTRUMENTS[kind];
        const dataPoints: object[] = [];
        for (const s of series) {
          const h = s.histograms[kind];
          if (h.start === undefined) continue;
          if (temporality === 'cumulative') {
            dataPoints.push({
              startTime: h.start,
              endTime: end,
              attributes: s.attributes,
              value: valueOf(h.counts, h.sum, h.count, h.min, h.max),
            });
            continue;
          }
          const before = last.get(h);
          const counts = before === undefined ? h.counts.slice() : h.counts.map((c, i) => c - before.counts[i]!);
          const value = valueOf(
            counts,
            h.sum - (before?.sum ?? 0),
            h.count - (before?.count ?? 0),
            undefined,
            undefined,
          );
          dataPoints.push({ startTime: before?.at ?? h.start, endTime: end, attributes: s.attributes, value });
          last.set(h, { counts: h.counts.slice(), sum: h.sum, count: h.count, at: end });
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

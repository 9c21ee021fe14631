// Where a pool's timings go (placeTimings), and where a Meter's data goes when it is one of
// @opentelemetry/sdk-metrics: the readers of its MeterProvider, so that a pool can hand its
// timings to each through a producer of its own instead of recording each value through the SDK
// (see pool-timings.ts). The OpenTelemetry API
// has no asynchronous histogram, and the SDK no public way from a Meter to its readers: this
// reads the SDK's fields (as its 2.x and 3.x have them), checks every one it uses, and answers
// "not known" for anything else, a Meter of another SDK included. Nothing here throws.
import type { PoolLogger } from '../common/index.js';
import {
  type ProducerPart,
  producerPart,
  readerProducer,
  TIMING_INSTRUMENTS,
  timingsProduced,
  unplacedSeries,
} from './pool-timings.js';

/** The histograms' instrument type and their default aggregation, as the SDK names them. */
const HISTOGRAM = 'HISTOGRAM';
const DEFAULT_AGGREGATION = 0;

/** The part of an SDK `MetricReader` used here. */
export interface SdkReader {
  _metricProducers: unknown[];
  selectAggregationTemporality(type: string): unknown;
  selectAggregation?(type: string): unknown;
}

/** What the SDK says of a Meter: its readers, and whether a View or an aggregation changes its histograms. */
export type SdkMeterReaders =
  | { readonly known: true; readonly readers: readonly SdkReader[]; readonly reshaped: string | undefined }
  | { readonly known: false };

const UNKNOWN = { known: false } as const;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

/** The readers of `meter`'s provider, if it is an SDK Meter whose fields read as this expects. */
export function sdkMeterReaders(
  meter: unknown,
  instruments: readonly { name: string; unit: string }[],
): SdkMeterReaders {
  try {
    const shared = isObject(meter) ? meter._meterSharedState : undefined;
    const provider = isObject(shared) ? shared._meterProviderSharedState : undefined;
    if (!isObject(shared) || !isObject(provider) || !Array.isArray(provider.metricCollectors)) return UNKNOWN;
    const collectors = provider.metricCollectors;
    const readers: SdkReader[] = [];
    for (const collector of collectors as unknown[]) {
      const reader = isObject(collector) ? collector._metricReader : undefined;
      if (!isObject(reader) || !Array.isArray(reader._metricProducers)) return UNKNOWN;
      if (typeof reader.selectAggregationTemporality !== 'function') return UNKNOWN;
      readers.push(reader as unknown as SdkReader);
    }
    return { known: true, readers, reshaped: reshaped(provider, shared, readers, instruments) };
  } catch {
    return UNKNOWN;
  }
}

/** Why the SDK's data of the histograms would differ from a producer's (a View, an aggregation), or undefined. */
function reshaped(
  provider: Record<string, unknown>,
  shared: Record<string, unknown>,
  readers: readonly SdkReader[],
  instruments: readonly { name: string; unit: string }[],
): string | undefined {
  const views = provider.viewRegistry;
  if (!isObject(views) || !Array.isArray(views._registeredViews)) return 'its Views cannot be read';
  if (views._registeredViews.length > 0) {
    if (typeof views.findViews !== 'function') return 'its Views cannot be read';
    const scope = shared._instrumentationScope;
    for (const { name, unit } of instruments) {
      const descriptor = { name, unit, type: HISTOGRAM, description: '', valueType: 1, advice: {} };
      const found: unknown = (views.findViews as (d: object, s: unknown) => unknown).call(views, descriptor, scope);
      if (!Array.isArray(found)) return 'its Views cannot be read';
      if (found.length > 0) return `a View applies to ${name}`;
    }
  }
  for (const reader of readers) {
    const chosen = reader.selectAggregation?.(HISTOGRAM);
    if (chosen === undefined) continue;
    const type = isObject(chosen) ? chosen.type : undefined;
    // 2.x and 3.x: { type: AggregationType.DEFAULT }; 1.x: an instance of DefaultAggregation.
    const plain =
      type === DEFAULT_AGGREGATION || (isObject(chosen) && chosen.constructor.name === 'DefaultAggregation');
    if (!plain) return 'a reader aggregates histograms its own way';
  }
  return undefined;
}

/** A reader's temporality for histograms: `delta` or `cumulative` (the SDK's 0 and 1). */
export function histogramTemporality(reader: SdkReader): 'delta' | 'cumulative' | undefined {
  const t = reader.selectAggregationTemporality(HISTOGRAM);
  return t === 0 ? 'delta' : t === 1 ? 'cumulative' : undefined;
}

/** The timings' instruments, as a View would select them. */
const INSTRUMENTS = Object.values(TIMING_INSTRUMENTS).map(({ name }) => ({ name, unit: 's' }));

/**
 * Where a pool's timings go. Recorded one by one through the SDK, each value pays the hashing of
 * its attributes; aggregated in the pool, a bucket search. So where the Meter is the SDK's and its
 * readers can be seen, each reader gets a producer (the application's, if it gave the reader one;
 * else one made here, with the reader's temporality) and the pool aggregates `always`, for the
 * producers' `parts`. Where a View or a reader's own aggregation would shape the histograms, they
 * go through the Meter (`never` aggregated), as asked, and the pool says once what that costs.
 * Where the readers cannot be seen, they go to whatever producer the application makes, or through
 * the Meter until it makes one (`with a producer`).
 */
export function placeTimings(
  meter: unknown,
  name: string,
  logger: PoolLogger | undefined,
): { aggregates: 'always' | 'with a producer' | 'never'; parts: ProducerPart[] } {
  const found = sdkMeterReaders(meter, INSTRUMENTS);
  if (!found.known) {
    if (!timingsProduced()) warnOnce(logger, `pool "${name}": its Meter does not show where its data goes`);
    return { aggregates: 'with a producer', parts: [unplacedSeries] };
  }
  const given = found.readers.map((r) => r._metricProducers.map(producerPart).find((p) => p !== undefined));
  const bare = found.readers.filter((_, i) => given[i] === undefined);
  const temporalities = bare.map(histogramTemporality);
  const why =
    bare.length === 0
      ? undefined
      : (found.reshaped ?? (temporalities.includes(undefined) ? "a reader's temporality is not known" : undefined));
  if (why !== undefined) {
    warnOnce(logger, `pool "${name}": ${why}`);
    return { aggregates: 'never', parts: [] };
  }
  let made = 0;
  const parts = found.readers.map((reader, i) => {
    const part = given[i];
    if (part !== undefined) return part;
    const producer = readerProducer(temporalities[made++]!);
    reader._metricProducers.push(producer);
    return producerPart(producer)!;
  });
  return { aggregates: 'always', parts };
}

/** Whether the warning of timings going through the Meter was given (once per process). */
let warned = false;

/**
 * Says once per process that a pool's timings go through the Meter's histograms, why, what that
 * costs, and the line that makes the pool aggregate them instead.
 */
function warnOnce(logger: PoolLogger | undefined, why: string): void {
  if (warned || logger === undefined) return;
  warned = true;
  logger.warn(
    `${why}, so its wait, use and create times are recorded one by one through the Meter's histograms: ` +
      `about 1 µs more per acquire and release. To aggregate them in the pools instead (SDK Views do not apply to them then), ` +
      `give each reader the pools' producer: new PeriodicExportingMetricReader({ exporter, metricProducers: [poolMetricProducer()] }) ` +
      `(or new PrometheusExporter({ metricProducers: [poolMetricProducer()] })); or set metricTimings: false to drop the timings.`,
  );
}

/** @internal For tests: the next pool whose timings go through the Meter says so again. */
export function forgetTimingsWarning(): void {
  warned = false;
}

import { InstrumentType, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { poolMetricProducer } from '../../lib/index.js';
import { bestOf, describe, pairedRatio } from '../paired.js';
import { alternatingFreshCycles, LOCAL_LIMITER_VARIANT, METRICS_VARIANTS } from '../fresh-cycles.js';
import { SETS, CYCLE_ROUNDS } from './production.js';

import { ours, clockSink, oursReadingTheClock, compare } from '../contenders.js';

/** A reader that collects only when asked: the SDK's cost on the hot path is the recording itself. */
class QuietReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

/**
 * The warm exclusive cycle with metrics off and on (real SDK MeterProviders), 1 and 100 callers:
 * the gauges alone; the timings on a plain MeterProvider (its reader given a producer by the
 * pool); and, for what that spares, the timings kept in the SDK by a View (each value recorded
 * through the Meter). In this one process each configuration leaves its JIT feedback at the
 * pool's call sites for the next, so the timings' 0.90× target is judged by
 * {@link metricsFreshBench}, each variant in a process of its own.
 */
export async function metricsBench(
  results: Record<string, unknown>,
  rows: string[][],
  fmt: (n: number) => string,
): Promise<void> {
  const reader = new QuietReader();
  const meter = new MeterProvider({ readers: [reader] }).getMeter('bench');
  const viewed = new QuietReader();
  const inSdk = new MeterProvider({
    readers: [viewed],
    views: [{ instrumentType: InstrumentType.HISTOGRAM, instrumentName: 'db.client.connection.*' }],
  }).getMeter('bench');
  const quiet = { info() {}, warn() {}, error() {} };
  const out: Record<string, unknown> = {};
  for (const concurrency of [1, 100]) {
    const best = await compare(
      {
        'metrics off': () => ours(1, 10, undefined, false),
        'metrics on, gauges and counters only (metricTimings: false)': () => ours(1, 10, undefined, meter, false),
        'metrics on, with the timings (plain SDK MeterProvider)': () => ours(1, 10, undefined, meter, true),
        'metrics on, with the timings kept in the SDK by a View': () => ours(1, 10, undefined, inSdk, true, quiet),
      },
      concurrency,
      1_000_000,
      5,
    );
    const off = best['metrics off']!;
    const gauges = best['metrics on, gauges and counters only (metricTimings: false)']!;
    const timed = best['metrics on, with the timings (plain SDK MeterProvider)']!;
    const recorded = best['metrics on, with the timings kept in the SDK by a View']!;
    out[`c${concurrency}`] = {
      ...best,
      gaugesOverOff: gauges / off,
      timingsOverOff: timed / off,
      timingsCostUs: (1 / timed - 1 / off) * 1e6,
      recordedOverOff: recorded / off,
    };
    for (const [name, r] of Object.entries(best))
      rows.push([`metrics, exclusive, ${concurrency} caller(s)`, name, fmt(r), '']);
    rows.push([
      `metrics, exclusive, ${concurrency} caller(s)`,
      'gauges and counters / off',
      `${(gauges / off).toFixed(2)}×`,
      'target ≥ 0.90×',
    ]);
    rows.push([
      `metrics, exclusive, ${concurrency} caller(s)`,
      'with the timings, plain MeterProvider / off',
      `${(timed / off).toFixed(2)}×`,
      `${((1 / timed - 1 / off) * 1e6).toFixed(2)} µs more per acquire + release; the 0.90× target is judged in fresh processes`,
    ]);
    rows.push([
      `metrics, exclusive, ${concurrency} caller(s)`,
      'with the timings recorded through the SDK (a View) / off',
      `${(recorded / off).toFixed(2)}×`,
      `what a View on the timings costs: ${((1 / recorded - 1 / off) * 1e6).toFixed(2)} µs`,
    ]);
  }
  // Then through a poolMetricProducer() the application gives its reader, against metrics off again.
  const produced = new QuietReader({ metricProducers: [poolMetricProducer()] });
  const producedMeter = new MeterProvider({ readers: [produced] }).getMeter('bench');
  for (const concurrency of [1, 100]) {
    const best = await compare(
      {
        'metrics off': () => ours(1, 10, undefined, false),
        'metrics on, with the timings (poolMetricProducer)': () => ours(1, 10, undefined, producedMeter, true),
        'metrics off, two clock reads per cycle (control)': oursReadingTheClock,
      },
      concurrency,
      1_000_000,
      5,
    );
    const off = best['metrics off']!;
    const timed = best['metrics on, with the timings (poolMetricProducer)']!;
    out[`c${concurrency}`] = {
      ...(out[`c${concurrency}`] as object),
      producerOff: off,
      producer: timed,
      producerOverOff: timed / off,
    };
    rows.push([
      `metrics, exclusive, ${concurrency} caller(s)`,
      'metrics on, with the timings (poolMetricProducer), and off again',
      `${fmt(timed)} / ${fmt(off)}`,
      '',
    ]);
    rows.push([
      `metrics, exclusive, ${concurrency} caller(s)`,
      'with the timings through the producer / off',
      `${(timed / off).toFixed(2)}×`,
      `${((1 / timed - 1 / off) * 1e6).toFixed(2)} µs more per acquire + release; the 0.90× target is judged in fresh processes`,
    ]);
    const clocked = best['metrics off, two clock reads per cycle (control)']!;
    out[`c${concurrency}`] = { ...(out[`c${concurrency}`] as object), clockReadsOverOff: clocked / off };
    rows.push([
      `metrics, exclusive, ${concurrency} caller(s)`,
      'control: two performance.now() per cycle, metrics off / off',
      `${(clocked / off).toFixed(2)}×`,
      `the clock reads any timing needs: ${((1 / clocked - 1 / off) * 1e6).toFixed(2)} µs`,
    ]);
  }
  await reader.collect(); // what was recorded is readable
  await viewed.collect();
  await produced.collect();
  out.clockSink = clockSink; // read, so the control's clock reads are not optimised away
  results.metrics = out;
}

/**
 * The production path in fresh processes: the timing histograms through `poolMetricProducer()`,
 * and a `LocalLimiter` in front, each against metrics off and no limiter, with the control (two
 * clock reads per cycle, metrics off); each variant in a process of its own, the variants taking
 * rounds in turn, the ratios round by round (the bound from the best cycle). In one process these
 * rows run after the SDK path has left its JIT feedback at the pool's call sites.
 */
export async function metricsFreshBench(
  results: Record<string, unknown>,
  rows: string[][],
  fmt: (n: number) => string,
): Promise<void> {
  const out: Record<string, unknown> = {};
  const readNs = clockReadNs();
  const variants = ['pool', ...METRICS_VARIANTS, LOCAL_LIMITER_VARIANT] as const;
  for (const shape of ['exclusive, 1 caller', 'exclusive, 100 callers'] as const) {
    const rounds = await alternatingFreshCycles(variants, shape, SETS, CYCLE_ROUNDS);
    const best = bestOf(rounds);
    const produced = pairedRatio(rounds, (r) => r['metrics through the producer'] / r.pool);
    const plain = pairedRatio(rounds, (r) => r['metrics through a plain MeterProvider'] / r.pool);
    const clocked = pairedRatio(rounds, (r) => r['two clock reads per cycle'] / r.pool);
    const limited = pairedRatio(rounds, (r) => r[LOCAL_LIMITER_VARIANT] / r.pool);
    out[shape] = {
      off: best.pool,
      producer: best['metrics through the producer'],
      plainProvider: best['metrics through a plain MeterProvider'],
      clockReads: best['two clock reads per cycle'],
      localLimiter: best[LOCAL_LIMITER_VARIANT],
      produced,
      plain,
      clocked,
      limited,
      rounds,
    };
    const row = `metrics, ${shape}, fresh processes`;
    rows.push([
      row,
      'metrics off / timings through the producer / through a plain MeterProvider / off with two clock reads (best of each)',
      `${fmt(best.pool)} / ${fmt(best['metrics through the producer'])} / ${fmt(best['metrics through a plain MeterProvider'])} / ${fmt(best['two clock reads per cycle'])}`,
      '',
    ]);
    rows.push([
      row,
      'with the timings through the producer / off, round by round',
      describe(produced, 0.9),
      `target ≥ 0.90×; ${((1 / best['metrics through the producer'] - 1 / best.pool) * 1e9).toFixed(0)} ns a cycle`,
    ]);
    rows.push([
      row,
      'with the timings through a plain MeterProvider / off, round by round',
      describe(plain, 0.9),
      `target ≥ 0.90×; ${((1 / best['metrics through a plain MeterProvider'] - 1 / best.pool) * 1e9).toFixed(0)} ns a cycle`,
    ]);
    rows.push([
      row,
      'control: metrics off with two clock reads per cycle / off, round by round',
      describe(clocked),
      `what a clock read per lease end would cost: ${((1 / best['two clock reads per cycle'] - 1 / best.pool) * 1e9).toFixed(0)} ns`,
    ]);
    // The bound of a timing that read the clock when each lease begins and ends (as the pool did before dating per turn).
    const cycleNs = 1e9 / best.pool;
    const bound = cycleNs / (cycleNs + 2 * readNs);
    (out[shape] as Record<string, unknown>).clockBound = bound;
    rows.push([
      row,
      'bound of a clock read per lease begin and end: a cycle / (a cycle + two reads)',
      `${bound.toFixed(2)}×`,
      `${cycleNs.toFixed(0)} ns a cycle; ${readNs.toFixed(1)} ns a performance.now() read in this Node`,
    ]);
    const limiterRow = `a LocalLimiter, ${shape}, fresh processes`;
    rows.push([
      limiterRow,
      'no limiter / a LocalLimiter in front (best of each)',
      `${fmt(best.pool)} / ${fmt(best[LOCAL_LIMITER_VARIANT])}`,
      `${((1 / best[LOCAL_LIMITER_VARIANT] - 1 / best.pool) * 1e9).toFixed(0)} ns an admission and its release`,
    ]);
    rows.push([
      limiterRow,
      'a LocalLimiter in front / no limiter, round by round',
      describe(limited, 0.8),
      'target ≥ 0.80×',
    ]);
  }
  out.clockReadNs = readNs;
  results.metricsFresh = out;
}

/** What one `performance.now()` costs in this process, ns: the least of five runs of a million reads. */
export function clockReadNs(): number {
  let least = Infinity;
  let sink = 0;
  for (let run = 0; run < 5; run++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < 1_000_000; i++) sink += performance.now();
    least = Math.min(least, Number(process.hrtime.bigint() - started) / 1_000_000);
  }
  if (sink < 0) console.error(sink); // read, so the loop is not optimised away
  return least;
}

import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
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

/** The warm exclusive cycle with metrics off and on (a real SDK MeterProvider), 1 and 100 callers. */
export async function metricsBench(
  results: Record<string, unknown>,
  rows: string[][],
  fmt: (n: number) => string,
): Promise<void> {
  const reader = new QuietReader();
  const meter = new MeterProvider({ readers: [reader] }).getMeter('bench');
  const out: Record<string, unknown> = {};
  for (const concurrency of [1, 100]) {
    const best = await compare(
      {
        'metrics off': () => ours(1, 10, undefined, false),
        'metrics on, gauges and counters only (metricTimings: false)': () => ours(1, 10, undefined, meter, false),
        'metrics on, with the timings (SDK MeterProvider)': () => ours(1, 10, undefined, meter, true),
      },
      concurrency,
      1_000_000,
      5,
    );
    const off = best['metrics off']!;
    const gauges = best['metrics on, gauges and counters only (metricTimings: false)']!;
    const timed = best['metrics on, with the timings (SDK MeterProvider)']!;
    out[`c${concurrency}`] = {
      ...best,
      gaugesOverOff: gauges / off,
      timingsOverOff: timed / off,
      timingsCostUs: (1 / timed - 1 / off) * 1e6,
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
      'with the timings / off',
      `${(timed / off).toFixed(2)}×`,
      `target ≥ 0.90×; ${((1 / timed - 1 / off) * 1e6).toFixed(2)} µs more per acquire + release`,
    ]);
  }
  // Then through poolMetricProducer(): made once, it switches every pool of the process to
  // aggregating its timings, so it is measured after the rows above, against metrics off again.
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
      `target ≥ 0.90×; ${((1 / timed - 1 / off) * 1e6).toFixed(2)} µs more per acquire + release`,
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
    const clocked = pairedRatio(rounds, (r) => r['two clock reads per cycle'] / r.pool);
    const limited = pairedRatio(rounds, (r) => r[LOCAL_LIMITER_VARIANT] / r.pool);
    out[shape] = {
      off: best.pool,
      producer: best['metrics through the producer'],
      clockReads: best['two clock reads per cycle'],
      localLimiter: best[LOCAL_LIMITER_VARIANT],
      produced,
      clocked,
      limited,
      rounds,
    };
    const row = `metrics, ${shape}, fresh processes`;
    rows.push([
      row,
      'metrics off / timings through the producer / off with two clock reads (best of each)',
      `${fmt(best.pool)} / ${fmt(best['metrics through the producer'])} / ${fmt(best['two clock reads per cycle'])}`,
      '',
    ]);
    rows.push([
      row,
      'with the timings through the producer / off, round by round',
      describe(produced, 0.9),
      `target ≥ 0.90×; two clock reads alone: ${describe(clocked)} (${((1 / best['two clock reads per cycle'] - 1 / best.pool) * 1e9).toFixed(0)} ns), the producer ${((1 / best['metrics through the producer'] - 1 / best.pool) * 1e9).toFixed(0)} ns`,
    ]);
    // The bound of any timing that reads the clock when a lease begins and ends: the cycle plus two reads.
    const cycleNs = 1e9 / best.pool;
    const bound = cycleNs / (cycleNs + 2 * readNs);
    (out[shape] as Record<string, unknown>).clockBound = bound;
    rows.push([
      row,
      'bound: a cycle / (a cycle + two clock reads)',
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

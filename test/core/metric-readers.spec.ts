// Where a pool's timings go, however a team registers OpenTelemetry: a pool on a plain SDK
// MeterProvider gives each of its readers a producer itself (with the reader's temporality) and
// aggregates, so no value pays the SDK's recording; a View or a reader's own aggregation keeps
// them in the SDK, as asked, with one warning that says what it costs and the line to add; a
// Meter whose readers cannot be seen records through its histograms until the application makes
// a producer. Read back through real SDK readers.
import { afterEach, describe, expect, it } from '@jest/globals';
import { metrics } from '@opentelemetry/api';
import {
  AggregationTemporality,
  AggregationType,
  InstrumentType,
  MeterProvider,
  type MetricReaderOptions,
  type ViewOptions,
} from '@opentelemetry/sdk-metrics';
import { ConnectionPool, poolMetricProducer, type MetricsMeter } from '../../lib/index.js';
import { forgetAppMeter } from '../../lib/core/observation/pool-metrics.js';
import { forgetTimingsWarning } from '../../lib/core/observation/sdk-readers.js';
import { FakeConnector, type FakeConnection } from '../support/fake-connector.js';
import { RecordingLogger } from '../support/harness.js';
import { VirtualClock } from '../support/virtual-clock.js';
import { TestReader } from '../support/test-reader.js';

const USE = 'db.client.connection.use_time';
const WAIT = 'db.client.connection.wait_time';
const POOL = 'db.client.connection.pool.name';

/** A reader on a new provider; `read()`: per scope, the metrics' names, and the use_time and wait_time points by pool. */
function sdk(options: MetricReaderOptions = {}, views: ViewOptions[] = []) {
  const reader = new TestReader(options);
  const provider = new MeterProvider({ readers: [reader], views });
  const read = async () => {
    const { resourceMetrics, errors } = await reader.collect();
    expect(errors).toEqual([]);
    const scopes = resourceMetrics.scopeMetrics.map((s) => ({
      scope: s.scope.name,
      names: s.metrics.map((m) => m.descriptor.name),
    }));
    const points = (name: string) => {
      const byPool = new Map<string, { count: number; sum: number; temporality: AggregationTemporality }>();
      for (const m of resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).filter((m) => m.descriptor.name === name))
        for (const p of m.dataPoints) {
          const v = p.value as { count: number; sum: number };
          byPool.set(String(p.attributes[POOL]), {
            count: v.count,
            sum: Math.round(v.sum * 1e6) / 1e6,
            temporality: m.aggregationTemporality,
          });
        }
      return byPool;
    };
    return { scopes, holds: points(USE), waits: points(WAIT) };
  };
  return { reader, provider, read, meter: provider.getMeter('app') };
}

/** A pool on virtual time (`metrics` its option) whose callers hold their connection `ms` each, one after the other. */
async function holds(name: string, meter: MetricsMeter | true, logger: RecordingLogger, ms: number[]) {
  const clock = new VirtualClock();
  const pool = new ConnectionPool<FakeConnection>(new FakeConnector(), { name, metrics: meter, clock, logger });
  for (const hold of ms) {
    const done = pool.use(() => new Promise<void>((resolve) => clock.setTimeout(resolve, hold)));
    await clock.advance(hold);
    await done;
  }
  return pool;
}

afterEach(() => {
  metrics.disable();
  forgetAppMeter();
  forgetTimingsWarning();
});

describe('timings, however OpenTelemetry is registered', () => {
  // First: a producer, once made, serves every pool whose Meter's readers cannot be seen, and the
  // tests after this one make producers.
  it('through a Meter whose readers cannot be seen, are recorded through it until a producer is made', async () => {
    const recorded: [string, number][] = [];
    const meter: MetricsMeter = {
      createHistogram: (name) => ({ record: (value) => void recorded.push([name, value]) }),
      createObservableGauge: () => ({}),
      createObservableCounter: () => ({}),
      createObservableUpDownCounter: () => ({}),
      addBatchObservableCallback: () => {},
      removeBatchObservableCallback: () => {},
    };
    const logger = new RecordingLogger();
    const pool = await holds('wrapped', meter, logger, [8]);
    expect(recorded).toContainEqual([USE, 0.008]);
    const moreClock = new VirtualClock();
    const more = new ConnectionPool<FakeConnection>(new FakeConnector(), {
      name: 'wrapped-3',
      metrics: meter,
      clock: moreClock,
      logger,
    });
    (await more.acquire()).release(); // before any producer: through the Meter
    expect(recorded.filter(([name]) => name === USE)).toEqual([
      [USE, 0.008],
      [USE, 0],
    ]);
    expect(logger.warnings).toEqual([
      expect.stringMatching(
        /^pool "wrapped": its Meter does not show where its data goes, so its wait, use and create times are recorded one by one/,
      ),
    ]);
    // The application gives its reader a producer: from then on the pool aggregates, and that reader gets them.
    const producer = poolMetricProducer();
    const { read, provider } = sdk({ metricProducers: [producer] });
    recorded.length = 0;
    const later = await holds('wrapped-2', meter, logger, [11]);
    expect(recorded.filter(([name]) => name === USE)).toEqual([]);
    expect((await read()).holds.get('wrapped-2')).toMatchObject({ count: 1, sum: 0.011 });
    expect(logger.warnings).toHaveLength(1);
    // A pool made before the producer aggregates too, from its next lease on: its holds and waits
    // of 0, which it then counts from its leases rather than records, are all there (the lease
    // that made it change included), and none from before (they went through the Meter).
    const { read: readMore, provider: other } = sdk({ metricProducers: [poolMetricProducer()] });
    for (const ms of [0, 4, 0, 0, 9]) {
      const done = more.use(() =>
        ms === 0 ? undefined : new Promise<void>((resolve) => moreClock.setTimeout(resolve, ms)),
      );
      await moreClock.advance(ms);
      await done;
    }
    const lease = await more.acquire(); // a wait of 0 told, its hold not yet
    expect((await readMore()).holds.get('wrapped-3')).toMatchObject({ count: 5, sum: 0.013 });
    lease.release();
    expect((await readMore()).holds.get('wrapped-3')).toMatchObject({ count: 6, sum: 0.013 });
    expect((await readMore()).waits.get('wrapped-3')).toMatchObject({ count: 6, sum: 0 });
    expect(recorded).toEqual([]);
    await Promise.all([pool.close(), later.close(), more.close()]);
    await Promise.all([provider.shutdown(), other.shutdown()]);
  });

  it('on a plain MeterProvider, go to its reader through a producer the pool gives it, without a word', async () => {
    const { read, meter, provider } = sdk();
    const logger = new RecordingLogger();
    const pool = await holds('plain', meter, logger, [3, 20]);
    const { scopes, holds: byPool } = await read();
    // Aggregated in the pool: the timings come under the pool's scope, the gauges under the app's Meter.
    expect(scopes.find((s) => s.scope === 'nestjs-shared-pool')?.names.sort()).toEqual([
      'db.client.connection.create_time',
      USE,
      'db.client.connection.wait_time',
    ]);
    expect(scopes.find((s) => s.scope === 'app')?.names).not.toContain(USE);
    expect(scopes.find((s) => s.scope === 'app')?.names).toContain('db.client.connection.count');
    expect(byPool.get('plain')).toEqual({ count: 2, sum: 0.023, temporality: AggregationTemporality.CUMULATIVE });
    expect(logger.warnings).toEqual([]);
    await pool.close();
    await provider.shutdown();
  });

  it("take the reader's temporality: a delta reader gets delta points", async () => {
    const { read, meter, provider } = sdk({ aggregationTemporalitySelector: () => AggregationTemporality.DELTA });
    const logger = new RecordingLogger();
    const pool = await holds('delta', meter, logger, [5]);
    expect((await read()).holds.get('delta')).toEqual({
      count: 1,
      sum: 0.005,
      temporality: AggregationTemporality.DELTA,
    });
    const again = await holds('delta-2', meter, logger, [7]);
    const second = await read();
    expect(second.holds.get('delta')).toEqual({ count: 0, sum: 0, temporality: AggregationTemporality.DELTA });
    expect(second.holds.get('delta-2')).toEqual({ count: 1, sum: 0.007, temporality: AggregationTemporality.DELTA });
    await Promise.all([pool.close(), again.close()]);
    await provider.shutdown();
  });

  it('of two providers, each reader gets the timings of its own pools only', async () => {
    const one = sdk();
    const two = sdk();
    const logger = new RecordingLogger();
    const a = await holds('a', one.meter, logger, [1]);
    const b = await holds('b', two.meter, logger, [2, 2]);
    expect([...(await one.read()).holds.keys()]).toEqual(['a']);
    expect([...(await two.read()).holds.keys()]).toEqual(['b']);
    expect((await two.read()).holds.get('b')?.count).toBe(2);
    await Promise.all([a.close(), b.close(), one.provider.shutdown(), two.provider.shutdown()]);
  });

  it('through the global MeterProvider (metrics: true), as the OpenTelemetry docs register it', async () => {
    const { read, provider } = sdk();
    metrics.setGlobalMeterProvider(provider);
    forgetAppMeter();
    const logger = new RecordingLogger();
    const pool = await holds('global', true, logger, [9]); // metrics: true, the default
    const { scopes, holds: byPool } = await read();
    // The global Meter's scope is the pool's name too: the timings come in a scope of their own, without the gauges.
    const timings = scopes.filter((s) => s.names.includes(USE));
    expect(timings).toHaveLength(1);
    expect(timings[0]!.names).not.toContain('db.client.connection.count');
    expect(byPool.get('global')).toMatchObject({ count: 1, sum: 0.009 });
    expect(logger.warnings).toEqual([]);
    await pool.close();
    await provider.shutdown();
  });

  it('stay in the SDK where a reader aggregates histograms its own way, said once for every pool', async () => {
    const { read, meter, provider } = sdk({
      aggregationSelector: (type) =>
        type === InstrumentType.HISTOGRAM
          ? { type: AggregationType.EXPONENTIAL_HISTOGRAM }
          : { type: AggregationType.DEFAULT },
    });
    const logger = new RecordingLogger();
    const first = await holds('exp', meter, logger, [4]);
    const second = await holds('exp-2', meter, logger, [4]);
    const { scopes } = await read();
    // The SDK's exponential histogram, under the app's Meter: what the reader asked for.
    expect(scopes.find((s) => s.scope === 'app')?.names).toContain(USE);
    expect(scopes.some((s) => s.scope === 'nestjs-shared-pool')).toBe(false);
    expect(logger.warnings).toEqual([
      expect.stringMatching(
        /^pool "exp": a reader aggregates histograms its own way, so its wait, use and create times are recorded one by one through the Meter's histograms: about 1 µs more per acquire and release\. To aggregate them in the pools instead \(SDK Views do not apply to them then\), give each reader the pools' producer: new PeriodicExportingMetricReader\(\{ exporter, metricProducers: \[poolMetricProducer\(\)\] \}\)/,
      ),
    ]);
    await Promise.all([first.close(), second.close()]);
    await provider.shutdown();
  });

  it('go to a producer the application gave its reader, a View notwithstanding', async () => {
    const producer = poolMetricProducer();
    const view: ViewOptions = { instrumentType: InstrumentType.HISTOGRAM, instrumentName: '*' };
    const { read, meter, provider } = sdk({ metricProducers: [producer] }, [view]);
    const logger = new RecordingLogger();
    const pool = await holds('given', meter, logger, [6]);
    const { scopes, holds: byPool } = await read();
    expect(scopes.find((s) => s.scope === 'nestjs-shared-pool')?.names).toContain(USE);
    expect(scopes.find((s) => s.scope === 'app')?.names ?? []).not.toContain(USE);
    expect(byPool.get('given')).toMatchObject({ count: 1, sum: 0.006 });
    expect(logger.warnings).toEqual([]);
    await pool.close();
    await provider.shutdown();
  });
});

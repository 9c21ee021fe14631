// A pool's OpenTelemetry metrics, read back through a real SDK MeterProvider: the semantic
// conventions' connection-pool instruments, this pool's own, the timings on virtual time, and
// that nothing is recorded when metrics are off.
import { afterEach, describe, expect, it } from '@jest/globals';
import { metrics } from '@opentelemetry/api';
import { DataPointType, MeterProvider, type MetricData } from '@opentelemetry/sdk-metrics';
import { ConnectionPool, LocalLimiter, type Connector, type Lease } from '../../lib/index.js';
import { forgetAppMeter } from '../../lib/core/observation/pool-metrics.js';
import type { FakeConnection } from '../support/fake-connector.js';
import { makePool, RecordingLogger, track } from '../support/harness.js';
import { VirtualClock } from '../support/virtual-clock.js';
import { TestReader } from '../support/test-reader.js';

function sdk() {
  const reader = new TestReader();
  const provider = new MeterProvider({ readers: [reader] });
  /** Every metric collected now, by name. */
  const read = async () => {
    const { resourceMetrics } = await reader.collect();
    return new Map(resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).map((m) => [m.descriptor.name, m] as const));
  };
  return { provider, meter: provider.getMeter('test'), read };
}

/** Data points of `metric` as [attributes, value], the pool attribute left out. */
function points(metric: MetricData | undefined) {
  expect(metric).toBeDefined();
  return metric!.dataPoints.map((p) => {
    const { 'db.client.connection.pool.name': pool, ...rest } = p.attributes;
    expect(pool).toBe('test');
    return [rest, p.value] as const;
  });
}
const only = (metric: MetricData | undefined) => points(metric)[0]![1];
const histogram = (metric: MetricData | undefined) => {
  expect(metric?.dataPointType).toBe(DataPointType.HISTOGRAM);
  const v = only(metric) as { count: number; sum: number };
  return { count: v.count, sum: Math.round(v.sum * 1e6) / 1e6 };
};

afterEach(() => {
  metrics.disable();
  forgetAppMeter();
});

describe('OpenTelemetry metrics', () => {
  it('report connections by state, the limits, pending requests and timeouts under the conventions’ names', async () => {
    const { meter, read } = sdk();
    const { pool, clock } = makePool({ metrics: meter, maxSize: 3, minSize: 1, clientLimit: 1, growAt: 1 });
    const held = [await pool.acquire(), await pool.acquire()];
    (await pool.acquire()).release();
    const third = await pool.acquire();
    const late = track(pool.acquire({ timeoutMs: 50 }));
    const queued = track(pool.acquire({ timeoutMs: 10_000 }));
    await clock.advance(60); // one waiter times out
    const m = await read();
    const s = pool.stats();
    expect(points(m.get('db.client.connection.count'))).toEqual([
      [{ 'db.client.connection.state': 'idle' }, 0],
      [{ 'db.client.connection.state': 'used' }, 3],
    ]);
    expect([
      only(m.get('db.client.connection.max')),
      only(m.get('db.client.connection.idle.max')),
      only(m.get('db.client.connection.idle.min')),
    ]).toEqual([3, 3, 1]);
    expect([
      only(m.get('db.client.connection.pending_requests')),
      only(m.get('db.client.connection.timeouts')),
    ]).toEqual([s.waiting, s.counters.timeouts]);
    expect([s.waiting, s.counters.timeouts, late.error !== undefined]).toEqual([1, 1, true]);
    expect([
      only(m.get('nestjs_shared_pool.clients')),
      only(m.get('nestjs_shared_pool.client_limit')),
      only(m.get('nestjs_shared_pool.utilization')),
    ]).toEqual([3, 1, 1]);
    expect(points(m.get('nestjs_shared_pool.health'))).toEqual(
      ['healthy', 'degraded', 'critical', 'exhausted', 'failing'].map((state) => [
        { state },
        state === 'exhausted' ? 1 : 0,
      ]),
    );
    for (const l of [...held, third]) l.release();
    await clock.advance(0);
    (queued.value as Lease<FakeConnection>).release();
    await pool.close();
  });

  it('time each wait, hold and create, in seconds, reading the clock once per event', async () => {
    const { meter, read } = sdk();
    const clock = new VirtualClock();
    const slow: Connector<number> = {
      create: () => new Promise<number>((resolve) => clock.setTimeout(() => resolve(1), 30)),
    };
    const pool = new ConnectionPool(slow, {
      name: 'test',
      clock,
      logger: new RecordingLogger(),
      metrics: meter,
      maxSize: 1,
      clientLimit: 1,
      growAt: 1,
    });
    const first = track(pool.acquire()); // waits 30 ms for the create
    await clock.advance(30);
    const second = track(pool.acquire()); // waits 50 ms for the first to be given back
    await clock.advance(50);
    (first.value as Lease<number>).release(); // held 50 ms
    await clock.advance(20);
    (second.value as Lease<number>).fail(); // held 20 ms
    const m = await read();
    expect(histogram(m.get('db.client.connection.wait_time'))).toEqual({ count: 2, sum: 0.08 });
    expect(histogram(m.get('db.client.connection.use_time'))).toEqual({ count: 2, sum: 0.07 });
    expect(histogram(m.get('db.client.connection.create_time'))).toEqual({ count: 1, sum: 0.03 });
    expect(m.get('db.client.connection.wait_time')!.descriptor).toMatchObject({ unit: 's' });
    expect(points(m.get('nestjs_shared_pool.retirements')).find(([a]) => a.reason === 'failed')).toEqual([
      { reason: 'failed' },
      1,
    ]);
    await pool.close();
  }, 10_000);

  it('keep the gauges and counters but time nothing with metricTimings: false', async () => {
    const { meter, read } = sdk();
    const { pool } = makePool({ metrics: meter, metricTimings: false });
    await pool.use(() => 1);
    const m = await read();
    expect(m.get('db.client.connection.wait_time')?.dataPoints ?? []).toEqual([]);
    expect(m.get('db.client.connection.use_time')?.dataPoints ?? []).toEqual([]);
    expect(m.get('db.client.connection.create_time')?.dataPoints ?? []).toEqual([]);
    expect(points(m.get('db.client.connection.count'))).toEqual([
      [{ 'db.client.connection.state': 'idle' }, 1],
      [{ 'db.client.connection.state': 'used' }, 0],
    ]);
    await pool.close();
  });

  it('report the limiter’s waiting: whether its queue stands, what it shed, and each priority class', async () => {
    const { meter, read } = sdk();
    const clock = new VirtualClock();
    const limiter = new LocalLimiter({
      global: 1,
      clock,
      waiting: { mode: 'controlled' },
      classes: [{ name: 'live', share: 0.5 }, { name: 'batch' }],
    });
    const { pool } = makePool({ metrics: meter, limiter, clock, clientLimit: 10 });
    const held = await pool.acquire({ class: 'live' });
    const waiting = pool.acquire({ class: 'batch', timeoutMs: 100 });
    const ended = track(waiting);
    await expect(pool.acquire({ class: 'nope', timeoutMs: 100 })).rejects.toMatchObject({ code: 'POOL_CONFIG' });
    await clock.advance(150); // batch's wait ends at its deadline
    expect(ended.settled).toBe(true);
    await expect(waiting).rejects.toMatchObject({ code: 'CAPACITY_EXCEEDED' });
    const m = await read();
    expect(only(m.get('nestjs_shared_pool.limiter.standing'))).toBe(0);
    expect(only(m.get('nestjs_shared_pool.limiter.shed'))).toBe(0);
    expect(points(m.get('nestjs_shared_pool.limiter.class.used'))).toEqual([
      [{ class: 'live' }, 1],
      [{ class: 'batch' }, 0],
    ]);
    expect(points(m.get('nestjs_shared_pool.limiter.class.admitted'))).toEqual([
      [{ class: 'live' }, 1],
      [{ class: 'batch' }, 0],
    ]);
    expect(points(m.get('nestjs_shared_pool.limiter.class.refused'))).toEqual([
      [{ class: 'live' }, 0],
      [{ class: 'batch' }, 1],
    ]);
    expect(points(m.get('nestjs_shared_pool.limiter.class.waiting'))).toEqual([
      [{ class: 'live' }, 0],
      [{ class: 'batch' }, 0],
    ]);
    held.release();
    await pool.close();
  });

  it('report the admission limiter: admitted, refused by limit, lost, used and its mode', async () => {
    const { meter, read } = sdk();
    const limiter = new LocalLimiter({ global: 2, perKey: 1 });
    const { pool } = makePool({ metrics: meter, limiter });
    const a = await pool.acquire({ key: 'ann' });
    await expect(pool.acquire({ key: 'ann' })).rejects.toMatchObject({ code: 'KEY_LIMIT' });
    const b = await pool.acquire({ key: 'bob' });
    await expect(pool.acquire({ key: 'cy' })).rejects.toMatchObject({ code: 'CAPACITY_EXCEEDED' });
    const m = await read();
    expect([
      only(m.get('nestjs_shared_pool.limiter.admitted')),
      only(m.get('nestjs_shared_pool.limiter.lost')),
      only(m.get('nestjs_shared_pool.limiter.used')),
    ]).toEqual([2, 0, 2]);
    expect(points(m.get('nestjs_shared_pool.limiter.refused'))).toEqual([
      [{ limit: 'global' }, 1],
      [{ limit: 'key' }, 1],
    ]);
    expect(points(m.get('nestjs_shared_pool.limiter.mode')).filter(([, v]) => v === 1)).toEqual([
      [{ mode: 'local' }, 1],
    ]);
    expect(only(m.get('nestjs_shared_pool.limit'))).toBe(2);
    a.release();
    b.release();
    await pool.close();
    await limiter.close();
  });

  it('record through the global MeterProvider by default, and nothing with metrics: false or none registered', async () => {
    const { provider, read } = sdk();
    const none = makePool();
    await none.pool.use(() => 1);
    metrics.setGlobalMeterProvider(provider);
    forgetAppMeter(); // pools made from now on find the provider
    const { pool } = makePool();
    const off = makePool({ metrics: false, name: 'off' });
    await pool.use(() => 1);
    await off.pool.use(() => 1);
    const m = await read();
    expect(histogram(m.get('db.client.connection.wait_time'))).toEqual({ count: 1, sum: 0 });
    expect(points(m.get('db.client.connection.count'))).toHaveLength(2); // the pool "test" only
    await Promise.all([pool.close(), off.pool.close(), none.pool.close()]);
  });

  it('stop observing a pool once it is closed', async () => {
    const { meter } = sdk();
    const calls: string[] = [];
    const watched = {
      ...meter,
      createHistogram: meter.createHistogram.bind(meter),
      createObservableGauge: meter.createObservableGauge.bind(meter),
      createObservableCounter: meter.createObservableCounter.bind(meter),
      createObservableUpDownCounter: meter.createObservableUpDownCounter.bind(meter),
      addBatchObservableCallback: (cb: never, observables: never[]) => {
        calls.push(`add ${observables.length}`);
        meter.addBatchObservableCallback(cb, observables);
      },
      removeBatchObservableCallback: (cb: never, observables: never[]) => {
        calls.push(`remove ${observables.length}`);
        meter.removeBatchObservableCallback(cb, observables);
      },
    };
    const { pool } = makePool({ metrics: watched });
    expect(calls).toEqual(['add 23']);
    await pool.close();
    expect(calls).toEqual(['add 23', 'remove 23']);
  });

  it('refuses a metrics option that is no meter, saying what it takes', () => {
    expect(() => new ConnectionPool({ create: async () => 1 }, { name: 'db', metrics: 'otel' as never })).toThrow(
      'pool "db": option "metrics" must be true (the global MeterProvider), false, or a Meter of @opentelemetry/api, got "otel"',
    );
  });
});

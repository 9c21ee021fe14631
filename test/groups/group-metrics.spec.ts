// A pool group's own OpenTelemetry metrics, read back through a real SDK MeterProvider: one
// series set per group, none per member unless asked.
import { describe, expect, it } from '@jest/globals';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { PoolGroup, type Lease } from '../../lib/index.js';
import { FakeConnector, type FakeConnection } from '../support/fake-connector.js';
import { RecordingLogger } from '../support/harness.js';
import { VirtualClock } from '../support/virtual-clock.js';
import { TestReader } from '../support/test-reader.js';

describe('a pool group’s metrics', () => {
  it('report its connections against maxTotal, members, waiting callers, transfers and utilization; its members report nothing', async () => {
    const reader = new TestReader();
    const meter = new MeterProvider({ readers: [reader] }).getMeter('test');
    const clock = new VirtualClock();
    const g = new PoolGroup<FakeConnection>({
      name: 'tenants',
      maxTotal: 3,
      clock,
      logger: new RecordingLogger(),
      metrics: meter,
      connector: () => new FakeConnector(),
      member: { clientLimit: 1 },
    });
    const held: Lease<FakeConnection>[] = [await g.acquire('a'), await g.acquire('a'), await g.acquire('b')];
    const queued = g.acquire('c').catch(() => undefined); // the budget is spent: it waits
    await clock.advance(1);
    const { resourceMetrics } = await reader.collect();
    const metrics = new Map(
      resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).map((m) => [m.descriptor.name, m.dataPoints] as const),
    );
    const value = (name: string) => {
      const points = metrics.get(`nestjs_shared_pool.group.${name}`)!;
      expect(points.map((p) => p.attributes)).toEqual([{ 'nestjs_shared_pool.group.name': 'tenants' }]);
      return points[0]!.value;
    };
    const s = g.stats();
    expect([
      value('connections'),
      value('max'),
      value('members'),
      value('pending_requests'),
      value('transfers'),
      value('utilization'),
    ]).toEqual([s.total, 3, 3, 1, s.transfers, 1]);
    expect([s.total, s.members.length, s.waiting]).toEqual([3, 3, 1]);
    expect(metrics.has('db.client.connection.count')).toBe(false); // no member records
    for (const l of held) l.release();
    await clock.advance(100);
    await queued.then((l) => l?.release());
    await g.close();
    await g.close(); // the same close
  });

  it('record nothing with metrics: false, and refuse what is no meter', async () => {
    expect(
      () => new PoolGroup({ maxTotal: 1, connector: () => new FakeConnector(), metrics: 'prometheus' as never }),
    ).toThrow(
      'pool group "group": option "metrics" must be true (the global MeterProvider), false, or a Meter of @opentelemetry/api, got "prometheus"',
    );
    const g = new PoolGroup({ maxTotal: 1, connector: () => new FakeConnector(), metrics: false });
    await g.use('a', () => 1);
    await g.close();
  });
});

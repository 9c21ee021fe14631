import { describe, expect, it } from '@jest/globals';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { TestReader } from '../support/test-reader.js';
import { WATCH_BOUNDS_MS, watchedQuantile } from '../../lib/index.js';
import { WatchCounts } from '../../lib/core/observation/timing-watch.js';
import { makePool, track } from '../support/harness.js';
import { flush } from '../support/virtual-clock.js';

describe('watched timings', () => {
  it('time nothing while nobody watches, and every wait and hold while someone does', async () => {
    const { pool, clock } = makePool({ maxSize: 1, clientLimit: 1 });
    const unwatched = await pool.acquire();
    await clock.advance(50);
    unwatched.release();

    const watch = pool.watchTimings();
    const first = await pool.acquire(); // free: waits 0
    const queued = track(pool.acquire());
    await clock.advance(30);
    first.release(); // held 30
    await flush();
    expect(queued.settled).toBe(true);
    await clock.advance(200);
    queued.value!.release(); // held 200, after waiting about 30

    const { wait, hold } = watch.read();
    expect(wait.total).toBe(2);
    expect(hold.total).toBe(2);
    expect(wait.counts[0]).toBe(1); // the caller served at once
    expect(watchedQuantile(wait.counts, 1)).toBeGreaterThan(25);
    expect(watchedQuantile(wait.counts, 1)).toBeLessThanOrEqual(36);
    expect(watchedQuantile(hold.counts, 0.5)).toBeGreaterThan(25);
    expect(watchedQuantile(hold.counts, 0.5)).toBeLessThanOrEqual(36);
    expect(watchedQuantile(hold.counts, 1)).toBeGreaterThan(168);
    expect(watchedQuantile(hold.counts, 1)).toBeLessThanOrEqual(200 * 1.19); // within its bucket

    watch.stop();
    watch.stop(); // twice does nothing
    const after = await pool.acquire();
    await clock.advance(10);
    after.release();
    expect(watch.read().hold.total).toBe(2); // a stopped watch sees nothing more
    const again = pool.watchTimings();
    expect(again.read()).toEqual({
      wait: { counts: expect.any(Array), total: 0 },
      hold: { counts: expect.any(Array), total: 0 },
    }); // a new watch starts from zero
    again.stop();
    await pool.close();
  });

  it("time every lease for the metrics while a watch begins and ends, and the watch's leases for it", async () => {
    const reader = new TestReader();
    const meter = new MeterProvider({ readers: [reader] }).getMeter('test');
    const { pool, clock } = makePool({ maxSize: 1, clientLimit: 1, metrics: meter, metricTimings: true });
    const cycle = async (holdMs: number) => {
      const lease = await pool.acquire();
      await clock.advance(holdMs);
      lease.release();
    };
    await cycle(0); // timed for the metrics alone
    await cycle(20);
    const watch = pool.watchTimings();
    await cycle(0);
    const holder = await pool.acquire();
    const waiting = track(pool.acquire());
    await clock.advance(40);
    holder.release(); // held 40
    await flush();
    await clock.advance(10);
    waiting.value!.release(); // waited 40, held 10
    expect(watch.read().hold.total).toBe(3);
    expect(watch.read().wait.total).toBe(3);
    watch.stop();
    await cycle(5); // the metrics alone again
    const { resourceMetrics } = await reader.collect();
    const count = (name: string) =>
      resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name)!.dataPoints[0]!
        .value as { count: number; max: number };
    expect(count('db.client.connection.use_time')).toMatchObject({ count: 6, max: 0.04 });
    expect(count('db.client.connection.wait_time')).toMatchObject({ count: 6, max: 0.04 });
    await pool.close();
  });

  it('share one set of counts between two watches until the last stops', async () => {
    const { pool, clock } = makePool({ maxSize: 1 });
    const a = pool.watchTimings();
    const b = pool.watchTimings();
    a.stop();
    const lease = await pool.acquire();
    await clock.advance(5);
    lease.release();
    expect(b.read().hold.total).toBe(1);
    b.stop();
    await pool.close();
  });

  it('put every duration in the bucket whose bounds hold it, zero, tiny, huge, infinite and NaN included', () => {
    const counts = new WatchCounts();
    const values = [0, -5, NaN, 0.001, 0.01, 0.0100001, 1, 1000, 600_000, 1e12, Infinity];
    for (const v of values) counts.record(v);
    const { counts: c, total } = counts.read();
    expect(total).toBe(values.length);
    expect(c.length).toBe(WATCH_BOUNDS_MS.length + 1);
    expect(c[0]).toBe(3); // 0, a negative duration and NaN count as served at once
    expect(c[1]).toBe(2); // up to the first bound, inclusive
    expect(c[c.length - 1]).toBe(2); // above the last bound: 1e12 and Infinity
    // Each finite positive value sits in the bucket (lower, upper].
    for (const v of [0.0100001, 1, 1000, 600_000]) {
      const one = new WatchCounts();
      one.record(v);
      const i = one.read().counts.findIndex((n) => n === 1);
      expect(v).toBeLessThanOrEqual(WATCH_BOUNDS_MS[i]!);
      expect(v).toBeGreaterThan(WATCH_BOUNDS_MS[i - 1]!);
    }
    // A value exactly on a bound belongs to that bound's bucket.
    for (const i of [2, 17, 60, 108]) {
      const one = new WatchCounts();
      one.record(WATCH_BOUNDS_MS[i]!);
      expect(one.read().counts[i]).toBe(1);
    }
  });

  it('read quantiles within a bucket of the truth, and nothing from no counts', () => {
    expect(watchedQuantile(new Array(WATCH_BOUNDS_MS.length + 1).fill(0), 0.5)).toBeUndefined();
    const counts = new WatchCounts();
    const values = Array.from({ length: 1000 }, (_, i) => (i + 1) * 0.7); // 0.7 .. 700 ms
    for (const v of values) counts.record(v);
    for (const q of [0.5, 0.9, 0.99]) {
      const truth = values[Math.ceil(q * values.length) - 1]!;
      const read = watchedQuantile(counts.read().counts, q)!;
      expect(read / truth).toBeGreaterThan(0.84);
      expect(read / truth).toBeLessThan(1.19);
    }
    expect(watchedQuantile(counts.read().counts, 2)).toBeLessThanOrEqual(700 * 1.19); // q past 1 reads as 1
  });
});

describe('stats().oldestWaitMs', () => {
  it('is how long the first queued caller has waited, and 0 with nobody queued', async () => {
    const { pool, clock } = makePool({ maxSize: 1, clientLimit: 1 });
    expect(pool.stats().oldestWaitMs).toBe(0);
    const held = await pool.acquire();
    const queued = track(pool.acquire());
    await flush();
    await clock.advance(120);
    expect(pool.stats().oldestWaitMs).toBeGreaterThanOrEqual(119);
    expect(pool.stats().oldestWaitMs).toBeLessThanOrEqual(121);
    held.release();
    await flush();
    expect(pool.stats().oldestWaitMs).toBe(0);
    queued.value!.release();
    await pool.close();
  });
});

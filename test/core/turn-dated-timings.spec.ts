// Leases are dated once per turn of the event loop (a clock read shared by every lease the turn
// begins or ends), not each by its own clock read. That is exact to the turn: a date is early by
// at most what of its turn ran before it. This runs a real-time workload on the real clock (holds
// over timers, immediates, microtasks and synchronous work; callers queueing) and times every
// lease a second way, by a clock read of its own at the moment the pool begins and ends it (the
// pool's diagnostics channels), then compares the histograms a real SDK reader exports with that
// per-lease clock's, bucket by bucket: every count must be what the per-lease values allow once
// each is moved by its own turn's length. The turns are marked where the pool ends them: when the
// real clock's `defer` (which lets the next date read the clock again) runs.
import { describe, expect, it } from '@jest/globals';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { setImmediate as immediate, setTimeout as sleep } from 'node:timers/promises';
import { InstrumentType, MeterProvider, type ViewOptions } from '@opentelemetry/sdk-metrics';
import { type Clock, ConnectionPool, POOL_CHANNELS, systemClock } from '../../lib/index.js';
import { TURN_READS } from '../../lib/core/common/turn-clock.js';
import { FakeConnector } from '../support/fake-connector.js';
import { RecordingLogger } from '../support/harness.js';
import { TestReader } from '../support/test-reader.js';
import { VirtualClock } from '../support/virtual-clock.js';

/** The timings' bucket bounds, ms (the pool's, in seconds, × 1000). */
const BOUNDS_MS = [0.1, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000];

/**
 * The ends of turns, marked in order: each as its `defer` begins (`from`) and once it has run
 * (`to`). The pool reads the turn's stamp inside it, between the two.
 */
interface TurnEnds {
  readonly from: number[];
  readonly to: number[];
}

/**
 * The turn around `t`: how early a date taken at `t` can be (a date is read after the last end
 * began), how late a stamp dated at the turn's end can be (by the time the next end has run), and
 * which turn it is.
 */
function turnAt({ from: ends, to }: TurnEnds, t: number): { early: number; late: number; turn: number } {
  let lo = 0;
  let hi = ends.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ends[mid]! < t) lo = mid + 1;
    else hi = mid;
  }
  const start = lo === 0 ? -Infinity : ends[lo - 1]!;
  const end = lo === ends.length ? Infinity : to[lo]!;
  return { early: t - start, late: end - t, turn: lo };
}

/** How many of `values` fall in each bucket (inclusive upper bounds; the last bucket: above all). */
function bucketsOf(values: readonly number[]): number[] {
  const counts = new Array<number>(BOUNDS_MS.length + 1).fill(0);
  for (const v of values) {
    let i = 0;
    while (i < BOUNDS_MS.length && v > BOUNDS_MS[i]!) i++;
    counts[i]!++;
  }
  return counts;
}

const cumulative = (counts: readonly number[]) =>
  counts.map((_, i) => counts.slice(0, i + 1).reduce((s, c) => s + c, 0));

/**
 * Whether `counts` (the pool's) can be the per-lease values each moved within its bounds: at each
 * bound, no fewer at or below it than the values whose highest possible reading is, and no more
 * than those whose lowest is. Returns the bounds where it is not, described.
 */
function outside(
  what: string,
  counts: readonly number[],
  lowest: readonly number[],
  highest: readonly number[],
): string[] {
  const got = cumulative(counts);
  const atLeast = cumulative(bucketsOf(highest));
  const atMost = cumulative(bucketsOf(lowest));
  const wrong: string[] = [];
  BOUNDS_MS.forEach((b, i) => {
    if (got[i]! < atLeast[i]! || got[i]! > atMost[i]!)
      wrong.push(`${what} ≤ ${b} ms: ${got[i]} counted, the per-lease clock allows ${atLeast[i]}–${atMost[i]}`);
  });
  return wrong;
}

describe('timings dated once per turn', () => {
  it('equal, bucket by bucket, a per-lease clock on the same workload, within each turn’s resolution', async () => {
    // The real clock, each turn's end marked as its `defer` runs: before and after (a stamp read
    // inside it comes a few µs after the first mark, which once moved a wait of 5 ms across a bound).
    const ends: TurnEnds = { from: [], to: [] };
    const clock: Clock = {
      ...systemClock,
      defer: (fn) =>
        systemClock.defer!(() => {
          ends.from.push(performance.now());
          fn();
          ends.to.push(performance.now());
        }),
    };
    const reader = new TestReader();
    const provider = new MeterProvider({ readers: [reader] });
    const logger = new RecordingLogger();
    const pool = new ConnectionPool(
      { create: async () => ({}) },
      { name: 'turns', maxSize: 12, clientLimit: 1, clock, metrics: provider.getMeter('test'), logger },
    );
    await pool.warmup();

    // The per-lease clock: a read when the pool begins each lease and when it ends it.
    const begun = new Map<number, number>();
    const holds: { exact: number; at: number; begunAt: number }[] = [];
    const onAcquire = (m: unknown) => {
      const { pool: name, connectionId } = m as { pool: string; connectionId: number };
      if (name === 'turns') begun.set(connectionId, performance.now());
    };
    const onRelease = (m: unknown) => {
      const at = performance.now();
      const { pool: name, connectionId } = m as { pool: string; connectionId: number };
      if (name !== 'turns') return;
      const begunAt = begun.get(connectionId)!;
      holds.push({ exact: at - begunAt, at, begunAt });
    };
    subscribe(POOL_CHANNELS.acquire, onAcquire);
    subscribe(POOL_CHANNELS.release, onRelease);
    const waits: { exact: number; calledAt: number; leasedAt: number }[] = [];
    try {
      // 48 callers on 12 connections, so that most queue; each holds its connection over a timer
      // (0–60 ms), an immediate, a microtask, or 1–3 ms of synchronous work (a long turn).
      let n = 0;
      const caller = async () => {
        for (let round = 0; round < 25; round++) {
          const calledAt = performance.now();
          const lease = await pool.acquire();
          waits.push({
            exact: begun.get(lease.connectionId)! - calledAt,
            calledAt,
            leasedAt: begun.get(lease.connectionId)!,
          });
          const kind = n++ % 10;
          if (kind < 5) await sleep(Math.random() * 60);
          else if (kind < 7) await immediate();
          else if (kind < 9) await undefined;
          else {
            const until = performance.now() + 1 + Math.random() * 2;
            while (performance.now() < until);
          }
          lease.release();
        }
      };
      await Promise.all(Array.from({ length: 48 }, caller));
    } finally {
      unsubscribe(POOL_CHANNELS.acquire, onAcquire);
      unsubscribe(POOL_CHANNELS.release, onRelease);
    }
    await immediate(); // the last turn ends

    const { resourceMetrics } = await reader.collect();
    const histogram = (name: string) => {
      const metric = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name);
      const value = metric!.dataPoints[0]!.value as { buckets: { counts: number[] }; count: number };
      return value;
    };
    const use = histogram('db.client.connection.use_time');
    const wait = histogram('db.client.connection.wait_time');
    expect(holds).toHaveLength(48 * 25);
    expect(use.count).toBe(holds.length);
    expect(wait.count).toBe(waits.length);

    // A hold is dated at its begin and its end, each early by up to its turn's resolution there.
    const holdLow = holds.map((h) => Math.max(0, h.exact - turnAt(ends, h.at).early));
    const holdHigh = holds.map((h) => h.exact + turnAt(ends, h.begunAt).early);
    expect(outside('holds', use.buckets.counts, holdLow, holdHigh)).toEqual([]);
    // A wait runs from its batch's stamp (at the end of the turn it queued in: late by what was
    // left of it) to its lease's date (early by what of that turn ran before it); a caller served
    // in the turn it asked in waited 0. Never above the per-lease clock's.
    const waitLow = waits.map((w) => {
      const asked = turnAt(ends, w.calledAt);
      const leased = turnAt(ends, w.leasedAt);
      return asked.turn === leased.turn ? 0 : Math.max(0, w.exact - leased.early - asked.late);
    });
    expect(
      outside(
        'waits',
        wait.buckets.counts,
        waitLow,
        waits.map((w) => w.exact),
      ),
    ).toEqual([]);

    // It means something: the holds spread over many buckets, and their bounds are tight (turns are
    // short), so that dating a lease at any other time than its turn's, or never reading the clock
    // again, could not pass.
    expect(use.buckets.counts.filter((c) => c > 0).length).toBeGreaterThanOrEqual(6);
    const widths = holds.map((_, i) => holdHigh[i]! - holdLow[i]!).sort((a, b) => a - b);
    expect(widths[Math.floor(widths.length / 2)]).toBeLessThan(10);
    expect(logger.warnings.filter((w) => w.includes('Meter'))).toEqual([]); // the timings are aggregated, said nothing of
    await pool.close();
    await provider.shutdown();
  });

  /** A virtual clock with turns the test ends, counting its reads. */
  class TurnedClock extends VirtualClock {
    reads = 0;
    readonly #deferred: (() => void)[] = [];
    override now(): number {
      this.reads++;
      return super.now();
    }
    defer(fn: () => void): void {
      this.#deferred.push(fn);
    }
    endTurn(): void {
      for (const fn of this.#deferred.splice(0)) fn();
    }
  }

  /** A warm pool of two connections on a clock with turns, its timings read by a real SDK reader (`views` on the MeterProvider). */
  async function turnedPool(views: ViewOptions[] = []) {
    const clock = new TurnedClock();
    const reader = new TestReader();
    const provider = new MeterProvider({ readers: [reader], views });
    const logger = new RecordingLogger();
    const pool = new ConnectionPool(new FakeConnector(), {
      name: 'turned',
      maxSize: 2,
      minSize: 2,
      clientLimit: 1,
      clock,
      logger,
      metrics: provider.getMeter('test'),
    });
    await pool.warmup();
    const holds = async () => {
      const { resourceMetrics } = await reader.collect();
      const metric = resourceMetrics.scopeMetrics
        .flatMap((s) => s.metrics)
        .find((m) => m.descriptor.name === 'db.client.connection.use_time');
      const value = metric?.dataPoints[0]?.value as { buckets: { counts: number[] }; count: number; sum: number };
      return value ?? { buckets: { counts: [] }, count: 0, sum: 0 };
    };
    const close = async () => {
      await pool.close();
      await provider.shutdown();
    };
    return { clock, pool, holds, logger, close };
  }

  it('a hold begun since the turn last read the clock is no time; any other is read and timed', async () => {
    const { clock, pool, holds, close } = await turnedPool();
    clock.endTurn();
    (await pool.acquire()).release(); // in the turn it began: no time

    const across = await pool.acquire();
    clock.endTurn();
    await clock.advance(30);
    const reads = clock.reads;
    across.release(); // its turn ended: the release reads the clock
    expect(clock.reads).toBe(reads + 1);

    // A long turn reads the clock again after TURN_READS dates: a hold begun before that read is timed.
    clock.endTurn();
    const long = await pool.acquire();
    await clock.advance(12); // time moves, the turn does not end
    for (let i = 0; i < TURN_READS; i++) (await pool.acquire()).release();
    long.release();

    const h = await holds();
    expect(h.count).toBe(3 + TURN_READS);
    expect(h.buckets.counts[0]).toBe(1 + TURN_READS); // the brief hold and the long turn's cycles: no time
    expect(h.sum).toBeCloseTo(0.042, 9); // 30 ms, then 12 ms: each read, neither lost
    expect(h.buckets.counts[7]).toBe(1); // 30 ms: in (25, 50] ms
    expect(h.buckets.counts[6]).toBe(1); // 12 ms: in (10, 25] ms
    await close();
  });

  it('a hold of no time is still told where zeros are not counted from the leases: a View, a watch', async () => {
    const view = { instrumentType: InstrumentType.HISTOGRAM, instrumentName: 'db.client.connection.*' };
    const viewed = await turnedPool([view]);
    expect(viewed.logger.warnings.join('\n')).toContain('View'); // recorded through the SDK, as the View asks
    viewed.clock.endTurn();
    for (let i = 0; i < 3; i++) (await viewed.pool.acquire()).release();
    expect(await viewed.holds()).toMatchObject({ count: 3, sum: 0 });
    await viewed.close();

    // Aggregated (zeros counted from the leases), but watched: the watch counts each hold itself.
    const watched = await turnedPool();
    const watch = watched.pool.watchTimings();
    watched.clock.endTurn();
    for (let i = 0; i < 3; i++) (await watched.pool.acquire()).release();
    expect(watch.read().hold.total).toBe(3);
    expect(watch.read().hold.counts[0]).toBe(3);
    expect(await watched.holds()).toMatchObject({ count: 3, sum: 0 });
    watch.stop();
    await watched.close();
  });
});

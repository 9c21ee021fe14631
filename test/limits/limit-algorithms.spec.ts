// The adaptive limit's algorithms on hand-built traces and on random ones: bounds always held, no
// growth without successes, a cut on overload (once per round of calls), and hostile input (NaN,
// negative and infinite durations, clock jumps, zero-duration calls) that never moves the limit
// out of its bounds or to NaN.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { Random } from '../qos/random.js';
import {
  limitAlgorithm,
  type AdaptiveAlgorithmOptions,
  type LimitAlgorithm,
  type LimitSample,
} from '../../lib/limits/adaptive/limit-algorithms.js';

const ALGORITHMS = ['aimd', 'gradient', 'vegas'] as const;

/** Feeds `samples` one after another; the limit after each. */
function run(algorithm: LimitAlgorithm, samples: readonly LimitSample[]): number[] {
  return samples.map((s) => algorithm.sample(s));
}

/** Calls at full load (inflight = the limit), each `ms` long, admitted 25 ms apart (40 a second). */
function steady(algorithm: LimitAlgorithm, n: number, ms: (i: number) => number, from = 0): number[] {
  const limits: number[] = [];
  for (let i = 0; i < n; i++)
    limits.push(
      algorithm.sample({ startedAt: from + i * 25, durationMs: ms(i), inflight: algorithm.limit, outcome: 'success' }),
    );
  return limits;
}

const sample = fc.record({
  startedAt: fc.oneof(fc.double({ min: 0, max: 1e7, noNaN: true }), fc.constantFrom(NaN, Infinity, -1)),
  durationMs: fc.oneof(fc.double({ min: 0, max: 1e5, noNaN: true }), fc.constantFrom(0, NaN, -5, Infinity, 3.6e6)),
  inflight: fc.oneof(fc.integer({ min: 0, max: 5_000 }), fc.constantFrom(NaN, -1)),
  outcome: fc.constantFrom('success' as const, 'overload' as const),
});

describe.each(ALGORITHMS)('the %s limit', (name) => {
  const make = (extra: Partial<AdaptiveAlgorithmOptions> = {}) =>
    limitAlgorithm({ algorithm: name, min: 2, max: 200, initial: 20, ...extra } as AdaptiveAlgorithmOptions);

  it('takes a fleet’s floor as its own probe: the first probe then comes a limit’s worth of periods later', () => {
    // Calls 25 ms apart, 10 ms each, filling the limit: a window of 250 ms every 10 calls.
    const probedWithin = (algorithm: LimitAlgorithm, calls: number) => {
      let probed = false;
      for (let i = 0; i < calls; i++) {
        algorithm.sample({ startedAt: i * 25, durationMs: 10, inflight: algorithm.limit, outcome: 'success' });
        probed ||= algorithm.probing;
      }
      return probed;
    };
    expect(probedWithin(make({ probeEvery: 3 }), 100)).toBe(true); // alone: after 3 windows
    const adopted = make({ probeEvery: 3 });
    adopted.adoptFloor(10);
    expect(probedWithin(adopted, 100)).toBe(false); // not before 3 × its limit's windows
    expect(adopted.floor.count).toBe(0); // taken, not measured: nothing to report to the fleet
    // One that measured keeps its own.
    const measured = make({ probeEvery: 1 });
    for (let i = 0; measured.floor.count === 0 && i < 2_000; i++)
      measured.sample({ startedAt: i * 25, durationMs: 10, inflight: Math.min(3, measured.limit), outcome: 'success' });
    expect(measured.floor.ms).toBeCloseTo(10, 5);
    measured.adoptFloor(40);
    const before = measured.limit;
    // 30 ms calls: a queue against its own 10 ms (they would be none against 40). Ten windows,
    // fewer than its next probe's limit's worth.
    for (let i = 0; i < 100; i++)
      measured.sample({ startedAt: 1e6 + i * 25, durationMs: 30, inflight: measured.limit, outcome: 'success' });
    expect(measured.limit).toBeLessThan(before);
  });

  it('does not grow while a probe pins it: calls at the pin, timed or not, test no limit', () => {
    // Calls 25 ms apart, 10 ms each, filling the limit, until a probe pins it; then the probe's
    // calls, at the pin, until it ends. AIMD grew by 1/pin a call there (the pin is what its
    // app-limited test compared with), 20 over a probe in a fleet's run, and sent the upstream
    // half as much again as it serves the moment the probe ended.
    const algorithm = make({ probeEvery: 1 });
    let at = 0;
    for (let i = 0; !algorithm.probing && i < 2_000; i++, at += 25)
      algorithm.sample({ startedAt: at, durationMs: 10, inflight: algorithm.limit, outcome: 'success' });
    expect(algorithm.probing).toBe(true);
    const pinnedAt = algorithm.estimate;
    const during: number[] = [];
    for (let i = 0; algorithm.probing && i < 2_000; i++, at += 25) {
      algorithm.sample({ startedAt: at, durationMs: 10, inflight: algorithm.limit, outcome: 'success' });
      if (algorithm.probing) algorithm.untimedSuccess(algorithm.limit);
      if (algorithm.probing) during.push(algorithm.estimate);
    }
    expect(algorithm.probing).toBe(false); // the probe ended
    expect(during.length).toBeGreaterThan(0);
    expect(Math.max(...during)).toBeLessThanOrEqual(pinnedAt);
  });

  it('keeps a whole number within its bounds whatever it is fed, hostile input included', () => {
    fc.assert(
      fc.property(fc.array(sample, { maxLength: 400 }), (samples) => {
        const algorithm = make();
        for (const limit of run(algorithm, samples)) {
          expect(Number.isInteger(limit)).toBe(true);
          expect(limit).toBeGreaterThanOrEqual(2);
          expect(limit).toBeLessThanOrEqual(200);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('moves on an untimed success as AIMD blind to latency does on the same success timed, and not at all if latency-based', () => {
    // AIMD reading latency (its default) grows on it the same, but a zero-length timed success would also lower its latency without a queue.
    const blind = name === 'aimd' ? { tolerance: Infinity } : {};
    fc.assert(
      fc.property(fc.array(fc.tuple(sample, fc.boolean()), { maxLength: 300 }), (steps) => {
        const bySample = make(blind);
        const direct = make(blind);
        for (const [s, untimed] of steps) {
          // Untimed successes (as a dense stream's) between ordinary samples: AIMD's as a zero-length timed success, the others' as nothing.
          const asSuccess = untimed && s.outcome === 'success';
          const before = bySample.limit;
          const a = !asSuccess
            ? bySample.sample(s)
            : name === 'aimd'
              ? bySample.sample({ startedAt: 5, durationMs: 0, inflight: s.inflight, outcome: 'success' })
              : before;
          const b = asSuccess ? direct.untimedSuccess(s.inflight) : direct.sample(s);
          expect(b).toBe(a);
          expect(direct.estimate).toBe(bySample.estimate);
        }
      }),
      { numRuns: 200 },
    );
    const algorithm = make();
    const before = algorithm.estimate;
    for (let i = 0; i < 100; i++) algorithm.untimedSuccess(200); // at full load
    if (name === 'aimd') expect(algorithm.estimate).toBeGreaterThan(before);
    else expect(algorithm.estimate).toBe(before);
  });

  it('never grows without a success', () => {
    fc.assert(
      fc.property(
        fc.array(
          sample.map((s) => ({ ...s, outcome: 'overload' as const })),
          { maxLength: 200 },
        ),
        (samples) => {
          const algorithm = make();
          let before = algorithm.limit;
          for (const limit of run(algorithm, samples)) {
            expect(limit).toBeLessThanOrEqual(before);
            before = limit;
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('cuts on an overload, once per round: calls admitted before the cut do not cut again', () => {
    const algorithm = make({ backoff: 0.5 });
    steady(algorithm, 50, () => 10);
    const before = algorithm.limit;
    // A round of 30 calls admitted at 100..129 all time out at about 1,100.
    const after = run(
      algorithm,
      Array.from({ length: 30 }, (_, i) => ({
        startedAt: 100 + i,
        durationMs: 1_000,
        inflight: before,
        outcome: 'overload' as const,
      })),
    );
    expect(after[0]).toBe(Math.max(2, Math.floor(before * 0.5)));
    expect(new Set(after).size).toBe(1);
    // A call admitted after that cut, overloaded too: a new round, a new cut.
    expect(algorithm.sample({ startedAt: 1_200, durationMs: 5, inflight: after[0]!, outcome: 'overload' })).toBe(
      Math.max(2, Math.floor(Math.floor(before * 0.5) * 0.5)),
    );
  });

  it('grows while calls succeed at full load and latency stays flat, up to its max', () => {
    const algorithm = make();
    const limits = steady(algorithm, 40_000, () => 20);
    expect(limits[limits.length - 1]).toBe(200);
    // and never past it
    expect(limits.reduce((a, b) => Math.max(a, b))).toBe(200);
  });

  it('does not grow from calls that never filled the limit (the caller, not the backend, was the bound)', () => {
    const algorithm = make();
    for (let i = 0; i < 5_000; i++) algorithm.sample({ startedAt: i, durationMs: 10, inflight: 3, outcome: 'success' });
    expect(algorithm.limit).toBe(20);
  });

  it('grows no further than one step past twice the most calls in flight it has seen, whatever the load', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 5, max: 60 }),
        fc.array(fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 1, max: 50, noNaN: true })), {
          minLength: 1_000,
          maxLength: 3_000,
        }),
        (most, calls) => {
          const algorithm = make();
          let t = 0;
          for (const [share, ms] of calls) {
            const inflight = Math.max(1, Math.round(share * most));
            algorithm.sample({ startedAt: t, durationMs: ms, inflight, outcome: 'success' });
            t += 2;
          }
          // Growth only from calls that filled half the limit, then one step: AIMD's 1, the
          // gradient's √limit × 0.2, Vegas's 6 log10(limit).
          const step = Math.max(1, 6 * Math.log10(3 * most), Math.sqrt(3 * most));
          expect(algorithm.limit).toBeLessThanOrEqual(Math.max(20, 2 * most + step));
        },
      ),
      { numRuns: 100 },
    );
  });

  it('ignores a sample with a NaN, negative or infinite duration or a bad start, and takes a zero-duration call', () => {
    const algorithm = make();
    for (const bad of [
      { durationMs: NaN },
      { durationMs: -1 },
      { durationMs: Infinity },
      { startedAt: NaN },
      { inflight: NaN },
    ]) {
      expect(algorithm.sample({ startedAt: 1, durationMs: 5, inflight: 20, outcome: 'overload', ...bad })).toBe(20);
    }
    expect(Number.isInteger(algorithm.sample({ startedAt: 2, durationMs: 0, inflight: 20, outcome: 'success' }))).toBe(
      true,
    );
  });
});

describe('latency-based limits', () => {
  it.each([1, 2, 3, 4, 5])(
    'vegas grows through the noise of long calls of varied length when nothing queues (seed %i)',
    (seed) => {
      // Calls of 100 ms on average, exponential: a quarter-second window holds a few dozen, whose
      // mean varies by a fifth. The least of such means (and the first windows, which hold only the
      // calls that ended soonest) once made a queue appear where there was none, holding the limit.
      // Not every draw passes: in 10 of draws 1–60 a probe's 20 calls, short by chance, measure
      // the latency without a queue a third low, and the limit holds at 14–32 until the next
      // probe (docs/limits.md says so; measuring longer costs goodput where calls vary this much).
      const algorithm = limitAlgorithm({ algorithm: 'vegas', initial: 10, max: 40 });
      let state = seed;
      const random = () => (state = (state * 48_271) % 2_147_483_647) / 2_147_483_647;
      // The limit's slots, each running calls back to back; told in the order the calls end.
      const slots: { startedAt: number; endsAt: number }[] = [];
      const call = (now: number) => ({ startedAt: now, endsAt: now - Math.log(1 - random()) * 100 });
      let now = 0;
      while (now < 30_000) {
        while (slots.length < algorithm.limit) slots.push(call(now));
        slots.sort((a, b) => a.endsAt - b.endsAt);
        const done = slots.shift()!;
        now = done.endsAt;
        algorithm.sample({
          startedAt: done.startedAt,
          durationMs: done.endsAt - done.startedAt,
          inflight: slots.length + 1,
          outcome: 'success',
        });
        if (slots.length < algorithm.limit) slots.push(call(now));
      }
      expect(algorithm.limit).toBeGreaterThanOrEqual(33); // held by a phantom queue, it stayed between 11 and 29
      expect(algorithm.limit).toBeLessThanOrEqual(40);
    },
  );

  /** A backend with 50 slots: past 50 calls in flight, latency grows in proportion (a queue). Calls 1 ms apart, each at full load. */
  function saturated(name: 'gradient' | 'vegas', initial: number, calls: number) {
    const algorithm = limitAlgorithm({ algorithm: name, min: 1, max: 500, initial });
    const limits: number[] = [];
    for (let i = 0; i < calls; i++) {
      const inflight = algorithm.limit;
      limits.push(
        algorithm.sample({ startedAt: i, durationMs: 10 * Math.max(1, inflight / 50), inflight, outcome: 'success' }),
      );
    }
    return limits;
  }

  it.each(['gradient', 'vegas'] as const)(
    '%s starts slowly as TCP does: doubles each window it binds without a queue, until the first queue',
    (name) => {
      // A backend of 200 slots, 10 ms a call: no queue below 200 in flight, a queue past it.
      const algorithm = limitAlgorithm({ algorithm: name, min: 1, max: 1_000, initial: 10 });
      const byWindow: number[] = [];
      let now = 0;
      for (let windows = 0; windows < 40; windows++) {
        const until = now + 260; // past one window (250 ms, 10 calls)
        for (; now < until; now += 1) {
          const inflight = algorithm.limit;
          const durationMs = 10 * Math.max(1, inflight / 200);
          algorithm.sample({ startedAt: now, durationMs, inflight, outcome: 'success' });
        }
        byWindow.push(algorithm.limit);
      }
      // Doubling from 10 reaches 200 within a few windows; growth by the algorithm's step alone
      // (√limit or 6 log limit a window) would take about 20.
      const reached = byWindow.findIndex((l) => l >= 160);
      expect(reached).toBeGreaterThanOrEqual(0);
      expect(reached).toBeLessThanOrEqual(8);
      expect(algorithm.starting).toBe(false); // it met the queue past 200
      // And holds near the knee, not at twice it.
      expect(Math.max(...byWindow.slice(-10))).toBeLessThanOrEqual(400);
    },
  );

  it.each(['gradient', 'vegas'] as const)('%s stops starting slowly at its first cut, and at its max', (name) => {
    const cut = limitAlgorithm({ algorithm: name, initial: 10 });
    expect(cut.starting).toBe(true);
    cut.sample({ startedAt: 0, durationMs: 5, inflight: 10, outcome: 'overload' });
    expect(cut.starting).toBe(false);
    const capped = limitAlgorithm({ algorithm: name, initial: 10, max: 10 });
    expect(capped.starting).toBe(false);
    expect(limitAlgorithm({ algorithm: 'aimd' }).starting).toBe(false); // it grows by the call
  });

  it('vegas: grows from below to the knee of a backend and holds there, where a queue begins', () => {
    const limits = saturated('vegas', 10, 600_000);
    const last = limits.slice(-100_000);
    expect(last.reduce((a, b) => Math.min(a, b))).toBeGreaterThanOrEqual(50);
    expect(last.reduce((a, b) => Math.max(a, b))).toBeLessThanOrEqual(75);
  });

  it('vegas: started past the knee of a backend that is never idle, finds its latency without a queue from a probe, and comes down to the knee', () => {
    // Every window it sees holds a queue; the probe pins the limit low for a moment and measures the backend without one.
    const limits = saturated('vegas', 100, 600_000);
    const last = limits.slice(-100_000).filter((l) => l > 3); // probes left out
    expect(last.reduce((a, b) => Math.min(a, b))).toBeGreaterThanOrEqual(50);
    expect(last.reduce((a, b) => Math.max(a, b))).toBeLessThanOrEqual(75);
    expect(limits.some((l) => l <= 3)).toBe(true); // the probes
  });

  it('vegas: does not ratchet under sustained load: the queue it keeps never becomes its floor', () => {
    // Half an hour of calls at full load, a millisecond apart: probes come and go, the limit stays at the knee.
    const limits = saturated('vegas', 10, 1_800_000);
    const settled = limits.slice(300_000).filter((l) => l > 3); // past the first five minutes, probes left out
    expect(settled.reduce((a, b) => Math.min(a, b))).toBeGreaterThanOrEqual(50);
    expect(settled.reduce((a, b) => Math.max(a, b))).toBeLessThanOrEqual(75);
    const quarter = settled.length >> 2;
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    expect(mean(settled.slice(-quarter))).toBeLessThanOrEqual(mean(settled.slice(0, quarter)) * 1.05);
  });

  it('gradient: cuts when latency jumps above its long-term level (the backend lost capacity), and moves once per window', () => {
    const algorithm = limitAlgorithm({ algorithm: 'gradient', min: 1, max: 500, initial: 100 });
    let t = 0;
    const at = (ms: number, calls: number) => {
      for (let i = 0; i < calls; i++, t += 5)
        algorithm.sample({ startedAt: t, durationMs: ms, inflight: algorithm.limit, outcome: 'success' });
      return algorithm.limit;
    };
    const before = at(10, 200 * 60); // a minute at 10 ms
    expect(before).toBeGreaterThan(100); // flat latency at full load: it grew
    // Within less than a window (40 calls, 200 ms of the default 250), it moves at most once, however slow the calls.
    const seen = new Set<number>();
    for (let i = 0; i < 40; i++) seen.add(at(40, 1));
    expect(seen.size).toBeLessThanOrEqual(2);
    // Each window cuts by up to a tenth (gradient 0.5, smoothing 0.2), so it keeps cutting while latency stays up.
    expect(at(40, 200 * 3)).toBeLessThan(before * 0.85); // three seconds at 40 ms
    expect(at(40, 200 * 10)).toBeLessThan(before * 0.5); // ten more
  });

  it('AIMD cuts when latency climbs past its tolerance over the latency without a queue (a queue building), and only on overloads with tolerance Infinity', () => {
    const reading = limitAlgorithm({ algorithm: 'aimd', initial: 50, max: 60 });
    const blind = limitAlgorithm({ algorithm: 'aimd', initial: 50, max: 60, tolerance: Infinity });
    const climbing = (i: number) => 10 + i / 1_000; // latency climbing steadily: 10 ms, 1.5 × that after 5,000 calls
    const limits = steady(reading, 10_000, climbing);
    expect(limits[2_000]).toBe(60); // grown while latency stayed within 1.5 × 10 ms
    expect(Math.min(...limits.slice(6_000))).toBeLessThanOrEqual(Math.floor(60 * 0.7)); // cut by the backoff once past it
    steady(blind, 10_000, climbing);
    expect(blind.limit).toBe(60);
  });

  it('AIMD cuts once per round, whether a queue or an overload cut first: calls admitted before the cut do not cut again', () => {
    const algorithm = limitAlgorithm({ algorithm: 'aimd', initial: 40, max: 60 });
    steady(algorithm, 200, () => 10, 0); // its latency without a queue: 10 ms
    const before = algorithm.limit;
    const estimate = algorithm.estimate;
    // Calls admitted at 5 000–5 029 come back at 30 ms: the first whose recent mean shows the queue
    // cuts; the rest, admitted before that cut, do not cut again.
    const limits: number[] = [];
    for (let i = 0; i < 30; i++)
      limits.push(algorithm.sample({ startedAt: 5_000 + i, durationMs: 30, inflight: before, outcome: 'success' }));
    expect(algorithm.cuts).toBe(1);
    expect(limits).toContain(Math.floor(estimate * 0.7));
    const cut = algorithm.limit;
    // An overload of a call admitted before that cut belongs to the same round.
    algorithm.sample({ startedAt: 5_010, durationMs: 40, inflight: before, outcome: 'overload' });
    expect(algorithm.limit).toBe(cut);
    expect(algorithm.cuts).toBe(1);
    // One admitted after it is a new round.
    algorithm.sample({ startedAt: 6_000, durationMs: 5, inflight: cut, outcome: 'overload' });
    expect(algorithm.cuts).toBe(2);
    expect(algorithm.limit).toBe(Math.floor(algorithm.estimate));
    expect(algorithm.limit).toBeLessThan(cut);
  });

  it('AIMD grows back slowly near where it last saw a queue, and at full speed below and past it', () => {
    // A backend with a knee at 20: past it, calls queue, and a call takes 10 ms × limit / 20.
    const algorithm = limitAlgorithm({ algorithm: 'aimd', initial: 10, max: 60 });
    // A call ends a limit's worth of calls after it was admitted, at the limit then.
    const admittedAt: number[] = [];
    const knee = (i: number) => {
      admittedAt.push(algorithm.limit);
      const then = admittedAt[Math.max(0, i - algorithm.limit)]!;
      return 10 * Math.max(1, then / 20) + (i % 7) * 0.1;
    };
    const limits = steady(algorithm, 30_000, knee)
      .slice(5_000)
      .filter((l) => l > 3); // probes left out
    // Each cut follows a queue seen a mean's worth of calls late; growing slowly near the last
    // one, the limit passes the knee by less before the next. Growing at full speed there, it
    // queued past one call in 53 % of calls, and was no more often at the knee or above.
    const queued = limits.filter((l) => l > 21).length / limits.length;
    const below = limits.filter((l) => l < 18).length / limits.length;
    expect(queued).toBeLessThan(0.48); // 44 %
    expect(below).toBeLessThan(0.18); // 16 % (19 % growing at full speed)
  });

  it('AIMD holds its limit where one call in a hundred is slow: a tail is no queue', () => {
    const algorithm = limitAlgorithm({ algorithm: 'aimd', initial: 30, max: 40 });
    const limits = steady(algorithm, 20_000, (i) => (i % 100 === 99 ? 200 : 10));
    expect(Math.min(...limits.slice(1_000).filter((l) => l > 3))).toBe(40); // probes left out
  });

  it.each(['aimd', 'gradient'] as const)(
    '%s holds its limit where calls vary widely without a queue: chance is no queue',
    (name) => {
      // Exponential call times (mean 20 ms, as much spread as mean) that never grow with the
      // limit: nothing queues, whatever the limit. A mean of 20 calls is off by a fifth of it
      // often enough that a test of one standard error, run window after window or call after
      // call, cut such a limit down to its least.
      const random = new Random(7);
      const algorithm = limitAlgorithm({ algorithm: name, initial: 30, max: 40 });
      const limits = steady(algorithm, 40_000, () => -Math.log(1 - random.next()) * 20);
      const settled = limits.slice(10_000).filter((l) => l > 3); // probes left out
      expect(settled.filter((l) => l >= 36).length / settled.length).toBeGreaterThan(0.9);
      expect(Math.min(...settled)).toBeGreaterThanOrEqual(20); // a dip by chance, no collapse
    },
  );
});

describe('the algorithms’ options', () => {
  it('are Vegas’s when they name no algorithm, as the docs say it is the default', () => {
    expect(limitAlgorithm({}).name).toBe('vegas');
    const bounded = limitAlgorithm({ initial: 20, max: 40 });
    expect(bounded).toMatchObject({ name: 'vegas', limit: 20, max: 40 });
    // Vegas's own options only: another algorithm's is refused by name.
    expect(() => limitAlgorithm({ tolerance: 2 } as AdaptiveAlgorithmOptions)).toThrow(/adaptive\.tolerance/);
  });

  it('refuses options that are no object, by name, rather than failing on them', () => {
    for (const bad of [null, 'vegas', 5, true])
      expect(() => limitAlgorithm(bad as unknown as AdaptiveAlgorithmOptions)).toThrow(
        /option "adaptive" must be an object of the algorithm and its bounds/,
      );
  });

  it.each([
    [
      { algorithm: 'cubic' },
      'limiter "limits": option "adaptive.algorithm" must be \'aimd\' or \'gradient\' or \'vegas\', got "cubic"',
    ],
    [
      { algorithm: 'aimd', min: 0 },
      'limiter "limits": option "adaptive.min" must be a whole number of 1 or more, got 0',
    ],
    [
      { algorithm: 'aimd', min: 10, max: 5 },
      'limiter "limits": option "adaptive.max" must be at least min (10), got 5',
    ],
    [
      { algorithm: 'aimd', initial: 5_000 },
      'limiter "limits": option "adaptive.initial" must be within min and max (1–1000), got 5000',
    ],
    [
      { algorithm: 'vegas', backoff: 1 },
      'limiter "limits": option "adaptive.backoff" must be a number from 0.1 to below 1, got 1',
    ],
    [
      { algorithm: 'aimd', smoothing: 0.5 },
      'limiter "limits": option "adaptive.smoothing" is not one of the options of the aimd algorithm: they are algorithm, min, max, initial, backoff, tolerance, windowMs, probeEvery',
    ],
    [
      { algorithm: 'aimd', tolerance: 0.5 },
      'limiter "limits": option "adaptive.tolerance" must be a number of 1 or more (Infinity: only overloads cut), got 0.5',
    ],
    [
      { algorithm: 'vegas', windowMs: 0 },
      'limiter "limits": option "adaptive.windowMs" must be a finite number above 0, got 0',
    ],
    [
      { algorithm: 'gradient', smoothing: 0 },
      'limiter "limits": option "adaptive.smoothing" must be a fraction in (0, 1], got 0',
    ],
  ])('refuse %j with an error that names the option', (options, message) => {
    expect(() => limitAlgorithm(options as AdaptiveAlgorithmOptions)).toThrow(message);
  });

  it('start at 10 within the default bounds 1–1000', () => {
    const algorithm = limitAlgorithm({ algorithm: 'aimd' });
    expect(algorithm.limit).toBe(10);
    expect(limitAlgorithm({ algorithm: 'vegas', min: 30 }).limit).toBe(30);
  });
});

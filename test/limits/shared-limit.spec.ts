// The instance's side of a limit shared through Redis, under random sequences of what can
// happen to it: successes, overloads (with and without a fencing token or a Retry-After), calls
// that carry its reports and then fail or are answered with any estimate. Whatever the order,
// the limit stays within its bounds, an overload or a failed call never raises it, the spec it
// sends always parses as the script reads it, and an answer sets the limit to Redis's estimate
// plus what was not sent yet.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { limitAlgorithm } from '../../lib/limits/adaptive/limit-algorithms.js';
import type { Taken } from '../../lib/limits/redis/redis-calls.js';
import { SharedLimit } from '../../lib/limits/adaptive/shared-limit.js';

type Step =
  | { kind: 'success'; durationMs: number; inflight: number }
  | { kind: 'overload'; fence: number | undefined; retryAfterMs: number | undefined }
  | { kind: 'send' }
  | { kind: 'fail' }
  | { kind: 'answer'; milli: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant('success' as const),
    durationMs: fc.oneof(fc.double({ min: 0, max: 5_000, noNaN: true }), fc.constantFrom(NaN, -1, Infinity, 0)),
    inflight: fc.integer({ min: 0, max: 500 }),
  }),
  fc.record({
    kind: fc.constant('overload' as const),
    fence: fc.option(fc.integer({ min: 1, max: 2 ** 40 }), { nil: undefined }),
    retryAfterMs: fc.option(fc.integer({ min: 1, max: 3_600_000 }), { nil: undefined }),
  }),
  fc.constant({ kind: 'send' as const }),
  fc.constant({ kind: 'fail' as const }),
  fc.record({
    kind: fc.constant('answer' as const),
    milli: fc.oneof(fc.integer({ min: 0, max: 2_000_000 }), fc.constantFrom(-1, NaN)),
  }),
);

describe('SharedLimit, the instance’s side of a shared adaptive limit', () => {
  it.each(['aimd', 'vegas', 'gradient'] as const)(
    '%s: any sequence keeps the bounds, never raises on overload or failure, and sends what the script reads',
    (algorithm) => {
      fc.assert(
        fc.property(fc.array(step, { maxLength: 200 }), (steps) => {
          let now = 0;
          const clock = { now: () => now, setTimeout: () => 0, clearTimeout: () => {} };
          const limit = new SharedLimit(
            limitAlgorithm({ algorithm, min: 2, max: 50, initial: 10 }),
            clock,
            1_000,
            () => {},
          );
          const inFlight: Taken[] = [];
          for (const s of steps) {
            now += 7;
            const before = limit.limit;
            if (s.kind === 'success')
              limit.success(
                { startedAt: now - 5, durationMs: s.durationMs, inflight: s.inflight, outcome: 'success' },
                3,
                1,
              );
            else if (s.kind === 'overload') {
              limit.overload(
                { startedAt: now - 5, durationMs: 5, inflight: 10, outcome: 'overload' },
                s.fence,
                s.retryAfterMs,
              );
              expect(limit.limit).toBeLessThanOrEqual(before);
            } else if (s.kind === 'send') {
              const taken = limit.take();
              const fields = taken.spec.split(' ');
              expect(fields).toHaveLength(10);
              for (const f of fields) expect(f).toMatch(/^-?\d+(\.\d+)?$/); // no exponent, no NaN: Lua's tonumber reads each
              const [, min, max, , , cut, pause, deadline, probe, floor] = fields.map(Number);
              expect([min, max]).toEqual([2, 50]);
              expect(cut === -1 || cut! >= 0).toBe(true);
              expect(pause).toBeGreaterThanOrEqual(0);
              expect(deadline).toBeGreaterThanOrEqual(0);
              expect(Number.isInteger(probe) && probe! >= 0 && probe! <= 10_000).toBe(true);
              expect(floor).toBeGreaterThanOrEqual(0);
              inFlight.push(taken);
            } else if (s.kind === 'fail') {
              const taken = inFlight.shift();
              if (taken !== undefined) limit.failed(taken);
              expect(limit.limit).toBeLessThanOrEqual(before);
            } else {
              const taken = inFlight.shift();
              if (taken !== undefined) limit.answered(taken, s.milli, now + 1_000_000, 0, 0);
            }
            expect(limit.limit).toBeGreaterThanOrEqual(2);
            expect(limit.limit).toBeLessThanOrEqual(50);
            expect(Number.isInteger(limit.limit)).toBe(true);
          }
        }),
        { numRuns: 300 },
      );
    },
  );

  it('an answer sets the limit to the estimate in Redis, plus the growth not sent yet', () => {
    let now = 0;
    const clock = { now: () => now, setTimeout: () => 0, clearTimeout: () => {} };
    const moves: [number, number][] = [];
    const limit = new SharedLimit(
      limitAlgorithm({ algorithm: 'aimd', min: 1, max: 100, initial: 10 }),
      clock,
      1_000,
      (from, to) => void moves.push([from, to]),
    );
    const taken = limit.take();
    expect(taken.spec).toBe('10 1 100 0.7 0 0 0 0 0 0'); // the seed is the initial until Redis answered; no deadline before the offset is known
    limit.answered(taken, 31_500, 5_000, 0, 0);
    expect(limit.limit).toBe(31);
    for (let i = 0; i < 31; i++)
      limit.success({ startedAt: now, durationMs: 1, inflight: 31, outcome: 'success' }, 1, 1);
    expect(limit.limit).toBe(32); // +1 for a limit's worth of successes, not sent yet
    now = 100;
    const next = limit.take();
    expect(next.spec.split(' ')[0]).toBe('31.500000'); // the seed: what Redis said, less what this call carries
    // The deadline on Redis's clock: sent at 100, Redis 5 000 ms ahead (its answer at 5 000 for a call sent and answered at 0), timeout 1 000.
    expect(Number(next.spec.split(' ')[7])).toBe(6_100);
    limit.failed(next); // a fault: the growth is dropped
    expect(limit.limit).toBe(31);
    expect(moves).toEqual([
      [10, 31],
      [31, 32],
      [32, 31],
    ]);
  });

  it('sends a cut by backoff on a success (AIMD seeing a queue) as a cut, for Redis to count once per round; a window’s step down as a step', () => {
    const clock = { now: () => 0, setTimeout: () => 0, clearTimeout: () => {} };
    const shared = (algorithm: 'aimd' | 'gradient') =>
      new SharedLimit(limitAlgorithm({ algorithm, min: 1, max: 100, initial: 40 }), clock, 1_000, () => {});
    // Calls at full load: 10 ms for a while, then 30 ms (three times the latency without a queue).
    const feed = (limit: SharedLimit, fence: number) => {
      for (let i = 0; i < 2_000; i++)
        limit.success(
          { startedAt: i * 5, durationMs: i < 1_000 ? 10 : 30, inflight: limit.limit, outcome: 'success' },
          1,
          fence,
        );
    };
    const aimd = shared('aimd');
    feed(aimd, 7);
    const cut = aimd.take().report;
    expect(cut.cut).toBe(7); // its lease's fence: Redis cuts by backoff, once for the round
    const gradient = shared('gradient');
    feed(gradient, 7);
    const step = gradient.take().report;
    expect(step.cut).toBe(0);
    expect(step.delta).toBeLessThan(0); // its proportional step, sent as a step
  });
});

// How an adaptive limit dates calls: every call while they come slower than one each 20 µs; past
// that a random sample, thin enough that a timed call comes every 20–80 µs or so, while the
// others start at the last reading, never later than they truly began.
import { describe, expect, it } from '@jest/globals';
import type { Clock } from '../../lib/core/index.js';
import { CallTimer } from '../../lib/limits/local/call-timer.js';
import { AdaptiveLimiter } from '../../lib/limits/index.js';
import { limitAlgorithm } from '../../lib/limits/adaptive/limit-algorithms.js';
import { VirtualClock } from '../support/virtual-clock.js';

/** A clock that reads `t` (ms) and counts its readings. */
function steppedClock() {
  const clock = { t: 0, reads: 0, now: () => (clock.reads++, clock.t) };
  return clock;
}

/**
 * Admits `calls` calls `apartMs` apart: how many were timed, the longest gap between timed calls,
 * the most an untimed start was early, how many starts were wrong (a timed one not the reading
 * of its admission, an untimed one later than its true start), and the timed calls per caller.
 */
function admit(timer: CallTimer, clock: { t: number }, calls: number, apartMs: number, caller = (_i: number) => 0) {
  let timed = 0;
  let lastTimed = clock.t;
  let widestGapMs = 0;
  let earliestMs = 0;
  let wrong = 0;
  const perCaller = new Map<number, number>();
  for (let i = 0; i < calls; i++) {
    clock.t += apartMs;
    if (timer.admit()) {
      timed++;
      if (timer.last !== clock.t) wrong++;
      widestGapMs = Math.max(widestGapMs, clock.t - lastTimed);
      lastTimed = clock.t;
      perCaller.set(caller(i), (perCaller.get(caller(i)) ?? 0) + 1);
    } else {
      if (timer.last > clock.t) wrong++;
      earliestMs = Math.max(earliestMs, clock.t - timer.last);
    }
  }
  return { timed, widestGapMs, earliestMs, wrong, perCaller };
}

describe('CallTimer', () => {
  it('times every call while they come slower than one each 20 µs', () => {
    const clock = steppedClock();
    const timer = new CallTimer(clock as unknown as Clock);
    expect(admit(timer, clock, 10_000, 0.05)).toMatchObject({ timed: 10_000, wrong: 0, earliestMs: 0 });
    expect(timer.every).toBe(1);
    expect(clock.reads).toBe(10_000);
  });

  it('past that times a sample, a timed call every 20–80 µs or so, and every call again once they slow', () => {
    const clock = steppedClock();
    const timer = new CallTimer(clock as unknown as Clock);
    admit(timer, clock, 20_000, 0.001); // a million calls a second: the sample settles
    const dense = admit(timer, clock, 200_000, 0.001);
    expect(timer.every).toBeGreaterThanOrEqual(16);
    expect(timer.every).toBeLessThanOrEqual(128);
    expect(dense.timed).toBeGreaterThan(200_000 / 0.08 / 1_000 / 2); // at least about one every 80 µs
    expect(dense.timed).toBeLessThan((200_000 / 0.02 / 1_000) * 1.5); // at most about one every 20 µs
    expect(dense.widestGapMs).toBeLessThan(0.4); // random gaps of at most 2 × every calls
    expect(dense.earliestMs).toBeLessThan(0.4);
    expect(dense.wrong).toBe(0);
    // The calls slow to one each 0.1 ms: the sample grows back to every call.
    admit(timer, clock, 5_000, 0.1);
    expect(timer.every).toBe(1);
    expect(admit(timer, clock, 1_000, 0.1).timed).toBe(1_000);
  });

  it('is never thinner than one call in 1,024, however dense the calls (a clock that does not move)', () => {
    const clock = steppedClock();
    const timer = new CallTimer(clock as unknown as Clock);
    const still = admit(timer, clock, 1_000_000, 0);
    expect(timer.every).toBe(1_024);
    expect(still.timed).toBeGreaterThan(1_000_000 / 1_024 / 2);
    expect(still.wrong).toBe(0);
  });

  it('samples callers in lockstep alike: a random sample, not every n-th call', () => {
    const clock = steppedClock();
    const timer = new CallTimer(clock as unknown as Clock);
    admit(timer, clock, 20_000, 0.001);
    const every = timer.every;
    // 16 callers taking turns: a sample of every n-th call with n a multiple of 16 would time only one of them.
    const { perCaller, timed } = admit(timer, clock, 320_000, 0.001, (i) => i % 16);
    expect(timer.every).toBe(every);
    expect(perCaller.size).toBe(16);
    for (const count of perCaller.values()) {
      expect(count / timed).toBeGreaterThan(1 / 16 / 1.5);
      expect(count / timed).toBeLessThan((1 / 16) * 1.5);
    }
  });

  it('times more calls again after its clock went back', () => {
    const clock = steppedClock();
    const timer = new CallTimer(clock as unknown as Clock);
    admit(timer, clock, 50_000, 0.001);
    const every = timer.every;
    expect(every).toBeGreaterThan(1);
    clock.t -= 1_000;
    // The first change after the jump, whose span crossed it: the sample grows denser, never thinner.
    for (let calls = 0; timer.every === every && calls < 10 * 64 * every; calls++) {
      clock.t += 0.001;
      timer.admit();
    }
    expect(timer.every).toBe(every / 2);
  });
});

describe('an in-process adaptive limit on calls too dense to time each', () => {
  it('counts every success for AIMD, timed or not, and cuts once per round on an untimed overload', async () => {
    const clock = new VirtualClock(); // it does not move yet: every call comes at one instant, the densest there is
    const limiter = new AdaptiveLimiter({
      clock,
      adaptive: { algorithm: 'aimd', initial: 100, max: 1_000, backoff: 0.5 },
    });
    // 50 rounds of 100 calls at the limit: AIMD adds one per limit's worth of successes.
    for (let round = 0; round < 50; round++) {
      const admissions = [];
      for (let i = 0; i < 100; i++) admissions.push(await limiter.admit({ pool: 'p', timeoutMs: 1_000 }));
      for (const a of admissions) {
        a.ended!({ ok: true, value: { status: 200 } });
        a.release();
      }
    }
    // Sampled or not, each success counted: the limit is what AIMD makes of every one of them.
    const everyCall = limitAlgorithm({ algorithm: 'aimd', initial: 100, max: 1_000, backoff: 0.5 });
    for (let round = 0; round < 50; round++)
      for (let i = 1; i <= 100; i++) everyCall.sample({ startedAt: 0, durationMs: 0, inflight: i, outcome: 'success' });
    expect(everyCall.limit).toBeGreaterThan(110);
    expect(limiter.limit).toBe(everyCall.limit);
    expect(limiter.stats().adaptive).toMatchObject({ successes: 5_000, overloads: 0 });
    // 100 calls a microsecond apart (a sample of them timed), all answered 429 a millisecond later.
    const before = limiter.limit;
    const admissions = [];
    for (let i = 0; i < 100; i++) {
      await clock.advance(0.001);
      admissions.push(await limiter.admit({ pool: 'p', timeoutMs: 1_000 }));
    }
    await clock.advance(1);
    for (const a of admissions) {
      a.ended!({ ok: true, value: { status: 429 } });
      a.release();
    }
    expect(limiter.stats().adaptive).toMatchObject({ overloads: 100 });
    expect(limiter.limit).toBe(Math.floor(before * 0.5)); // one round, one cut, whichever calls were timed
    await limiter.close();
  });
});

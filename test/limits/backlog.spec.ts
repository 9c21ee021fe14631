// A caller over a limit that waits is refused at once, not at its deadline, when the queue ahead
// of it, served at the rate it has been, would outlast that deadline; never before the queue has
// stood, served, for a whole measure, and never once it has emptied until it stands again.
import { describe, expect, it } from '@jest/globals';
import { CapacityExceededError, ConnectionPool, LocalLimiter } from '../../lib/index.js';
import { DRAIN_WINDOW_MS, DrainRate } from '../../lib/core/waiting/drain-rate.js';
import { SlotWaiters } from '../../lib/limits/local/slot-waiters.js';
import { FakeConnector } from '../support/fake-connector.js';
import { track } from '../support/harness.js';
import { heldAdmission, type Outcome } from '../support/held-admissions.js';
import { VirtualClock } from '../support/virtual-clock.js';

/**
 * A limiter whose every admission is held `holdMs` (virtual) and then released, so that the
 * queue is served at `global / holdMs` a millisecond; `call(timeoutMs)` records what becomes of it.
 */
function heldFor(holdMs: number, global: number) {
  const clock = new VirtualClock();
  const limiter = new LocalLimiter({ global, wait: true, clock });
  const outcomes: Outcome[] = [];
  const call = (timeoutMs: number): Outcome => {
    const outcome = heldAdmission(limiter, clock, holdMs, timeoutMs);
    outcomes.push(outcome);
    return outcome;
  };
  return { clock, limiter, outcomes, call };
}

describe('a queue that would outlast a deadline', () => {
  it('refuses at once, once the queue has stood a measure, a caller it could not serve in time', async () => {
    // Two slots, each held 10 ms: the queue is served at 0.2 a millisecond.
    const { clock, limiter, call } = heldFor(10, 2);
    for (let i = 0; i < 60; i++) call(1_000);
    // Before the queue has stood a measure, a caller it cannot serve in time waits to its deadline.
    const early = call(50);
    await clock.advance(0);
    expect(early.at).toBeNaN();
    await clock.advance(50);
    expect(early).toMatchObject({ at: 50, admitted: false, reason: 'limit' });

    await clock.advance(DRAIN_WINDOW_MS);
    expect(limiter.stats().waiting).toBe(60 - 2 - 30); // 30 served in 150 ms, 2 at once
    // 28 ahead, and its own slot, at about 0.2 a millisecond (19 grants closed the first measure of
    // 100 ms: the 20th closed it): 153 ms. A deadline of 100 ms is told now, why, and what to change.
    const doomed = call(100);
    await clock.advance(0);
    expect(doomed).toMatchObject({ at: 150, admitted: false, reason: 'backlog' });
    expect(doomed.message).toBe(
      `pool "api": the global limit of 2 concurrent leases is reached, and the 28 calls already waiting for a slot, served at 190 a second, would outlast this call's 100 ms deadline; retry later`,
    );
    expect(limiter.stats().waiting).toBe(28); // it never queued
    // A deadline the queue can meet waits, and is served in time.
    const patient = call(200);
    await clock.advance(200);
    expect(patient).toMatchObject({ admitted: true });
    expect(patient.at - 150).toBeLessThanOrEqual(150);
  });

  it('keeps the queue to what it can serve in time under sustained overload: the callers that wait are served', async () => {
    // Served at 0.2 a millisecond, asked at 0.4 for 3 s, each caller with 300 ms to wait.
    const { clock, limiter, outcomes, call } = heldFor(10, 2);
    let deepest = 0;
    for (let t = 0; t < 3_000; t += 5) {
      call(300);
      call(300);
      await clock.advance(5);
      deepest = Math.max(deepest, limiter.stats().waiting);
    }
    await clock.advance(1_000);
    const settled = outcomes.filter((o) => o.at >= 600); // the queue's first measure and first deadlines behind
    const served = settled.filter((o) => o.admitted).length;
    const atOnce = settled.filter((o) => o.reason === 'backlog').length;
    const timedOut = settled.filter((o) => o.reason === 'limit').length;
    // Half are served (the rate), half refused at once; few wait for nothing. Without it, the
    // queue grows to 120 and every caller that waits past the first deadline waits 300 ms for nothing.
    expect(served / settled.length).toBeGreaterThan(0.45);
    expect(atOnce / settled.length).toBeGreaterThan(0.4);
    expect(timedOut / (served + timedOut)).toBeLessThan(0.05);
    expect(deepest).toBeLessThanOrEqual(0.2 * 300 * 1.1);
    expect(limiter.stats().waiting).toBe(0);
  });

  it('forgets the rate once the queue empties, and never refuses a wait without a deadline', async () => {
    const { clock, limiter, call } = heldFor(10, 1);
    for (let i = 0; i < 40; i++) call(1_000);
    await clock.advance(150); // stood and served: 0.1 a millisecond
    const doomed = call(50);
    await clock.advance(0);
    expect(doomed).toMatchObject({ at: 150, reason: 'backlog' });
    const forever = call(Infinity);
    await clock.advance(0);
    expect(forever.at).toBeNaN(); // waits, however long the queue
    await clock.advance(1_000); // everyone served: the queue emptied
    expect(forever.admitted).toBe(true);
    expect(limiter.stats().waiting).toBe(0);
    // A new queue at another limit: until it stands a measure, a caller waits to its deadline.
    for (let i = 0; i < 40; i++) call(1_000);
    const again = call(20);
    await clock.advance(20);
    expect(again).toMatchObject({ at: clock.now(), reason: 'limit' });
  });

  it("reaches a caller of pool.use() as the limit's refusal, at once, and spares those that wait", async () => {
    const clock = new VirtualClock();
    const limiter = new LocalLimiter({ global: 1, wait: true, clock });
    const pool = new ConnectionPool(new FakeConnector(), { name: 'api', clock, limiter });
    const work = () => new Promise<void>((resolve) => clock.setTimeout(resolve, 10));
    const waiting = Array.from({ length: 30 }, () => track(pool.use(work, { timeoutMs: 5_000 })));
    await clock.advance(150); // served at 0.1 a millisecond: 15 done, 15 wait
    const doomed = track(pool.use(work, { timeoutMs: 100 }));
    await clock.advance(0);
    expect(doomed.error).toBeInstanceOf(CapacityExceededError);
    expect(doomed.error).toMatchObject({ reason: 'backlog', limit: 1, code: 'CAPACITY_EXCEEDED' });
    await clock.advance(1_000);
    expect(waiting.filter((c) => c.settled && c.error === undefined)).toHaveLength(30);
    await pool.close();
  });

  it('says one call waiting as one', () => {
    const error = new CapacityExceededError('api', 1, 1_000, 'backlog', undefined, {
      waiting: 1,
      servedPerSec: 2.4,
      deadlineMs: 100.4,
    });
    expect(error.message).toBe(
      `pool "api": the global limit of 1 concurrent leases is reached, and the call already waiting for a slot, served at 2 a second, would outlast this call's 100 ms deadline; retry later`,
    );
  });
});

describe('DrainRate', () => {
  it('is unknown until a queue has stood a whole measure, and ignores bursts of no duration and a clock that goes back', () => {
    let now = 1_000;
    const rate = new DrainRate({ now: () => now });
    rate.granted(); // no queue formed: nothing to measure
    expect(rate.perMs).toBe(0);
    rate.formed();
    for (let i = 0; i < 1_000; i++) rate.granted(); // a burst at one instant
    expect(rate.perMs).toBe(0);
    now = 900; // back
    rate.granted();
    expect(rate.perMs).toBe(0);
    now = 1_000 + DRAIN_WINDOW_MS;
    rate.granted();
    expect(rate.perMs).toBeCloseTo(1_002 / DRAIN_WINDOW_MS);
    now += 2 * DRAIN_WINDOW_MS;
    rate.granted();
    expect(rate.perMs).toBeCloseTo((1_002 / DRAIN_WINDOW_MS + 1 / (2 * DRAIN_WINDOW_MS)) / 2);
    rate.emptied();
    expect(rate.perMs).toBe(0);
    now += 5 * DRAIN_WINDOW_MS;
    rate.granted(); // a grant after the queue emptied and before another formed measures nothing
    expect(rate.perMs).toBe(0);
  });

  it('is what SlotWaiters reads to tell a newcomer its wait would outlast its deadline', async () => {
    const clock = new VirtualClock();
    const waiters = new SlotWaiters<number>(clock);
    const refuse = () => new Error('timed out');
    const waits = Array.from({ length: 10 }, () => waiters.wait({ pool: 'api', timeoutMs: 10_000 }, refuse));
    expect(waiters.outlasts(0)).toBe(false); // unknown
    await clock.advance(DRAIN_WINDOW_MS);
    waiters.serve(() => 1); // 10 granted at once, after a measure: 0.1 a millisecond; the queue empties
    await Promise.all(waits);
    expect(waiters.servedPerSec).toBe(0); // emptied: forgotten
    const more = Array.from({ length: 5 }, () => waiters.wait({ pool: 'api', timeoutMs: 10_000 }, refuse));
    await clock.advance(DRAIN_WINDOW_MS);
    const [first] = waiters.snapshot();
    expect(waiters.grant(first!, 1)).toBe(true); // 1 in 100 ms
    expect(waiters.servedPerSec).toBeCloseTo(10);
    expect(waiters.outlasts(400)).toBe(true); // 4 ahead, and its own: 5 at 0.01 a millisecond is 500 ms
    expect(waiters.outlasts(500)).toBe(false);
    waiters.rejectAll(new Error('closed'));
    await Promise.allSettled(more);
  });
});

// Controlled waiting (`waiting: { mode: 'controlled' }`, an adaptive limiter's default): a queue
// that forms in a burst and drains is left alone; one that stands — its shortest wait above the
// target for a whole interval — refuses a newcomer at once (CapacityExceededError, reason
// `standing`) unless it would serve it within the target, so under sustained overload the callers
// served wait about the target rather than their whole deadline. Each case runs on virtual time
// through the limiter's own admit(), the same way round the FIFO mode, which waits to the deadline.
import { describe, expect, it } from '@jest/globals';
import {
  AdaptiveLimiter,
  CapacityExceededError,
  type LimitOptions,
  LocalLimiter,
  PoolConfigError,
  RedisLimiter,
} from '../../lib/index.js';
import { StandingQueue } from '../../lib/core/waiting/standing-queue.js';
import { DrainRate } from '../../lib/core/waiting/drain-rate.js';
import { namespace, REDIS_URL, started } from '../support/redis.js';
import { heldAdmission, type Outcome } from '../support/held-admissions.js';
import { VirtualClock } from '../support/virtual-clock.js';

/**
 * Callers arriving every `everyMs` at a limiter of `global` slots, each held `holdMs`, each with
 * a deadline of `timeoutMs`; `from`..`until` ms of virtual time.
 */
async function overload(
  options: LimitOptions,
  { global = 4, holdMs = 20, everyMs = 2.5, timeoutMs = 1_000, untilMs = 6_000 } = {},
  make: (o: LimitOptions & { clock: VirtualClock }) => LocalLimiter | AdaptiveLimiter = (o) => new LocalLimiter(o),
) {
  const clock = new VirtualClock();
  const limiter = make({ global, wait: true, ...options, clock });
  const outcomes: Outcome[] = [];
  const arrive = () => outcomes.push(heldAdmission(limiter, clock, holdMs, timeoutMs));
  for (let t = 0; t < untilMs; t += everyMs) {
    arrive();
    await clock.advance(everyMs);
  }
  // What the stats said while the overload lasted.
  const during = limiter.stats();
  await clock.advance(timeoutMs + holdMs);
  return { limiter, outcomes, clock, during };
}

const waits = (outcomes: Outcome[], from: number) =>
  outcomes.filter((o) => o.admitted && o.arrived >= from).map((o) => o.at - o.arrived);
const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(0.99 * (xs.length - 1))]!;

describe('controlled waiting', () => {
  it('at twice the capacity, keeps the wait of the callers served near the hold time, where FIFO waits the whole deadline', async () => {
    // 4 slots held 20 ms: 200 a second; callers arrive at 400 a second with a 1 s deadline.
    const fifo = await overload({});
    const controlled = await overload({ waiting: { mode: 'controlled' } });
    const settled = 2_000;
    const fifoWaits = waits(fifo.outcomes, settled);
    const controlledWaits = waits(controlled.outcomes, settled);
    expect(Math.min(...fifoWaits)).toBeGreaterThan(900);
    // The target is the mean hold the queue measures (20 ms): served within it, and a little.
    expect(p99(controlledWaits)).toBeLessThanOrEqual(25);
    // The capacity is still served: as many callers as FIFO serves.
    expect(controlledWaits.length).toBeGreaterThanOrEqual(0.95 * fifoWaits.length);
    // Refused at once, saying why: no one refused at its deadline after the queue stood.
    const refused = controlled.outcomes.filter((o) => !o.admitted && o.arrived >= settled);
    expect(refused.length).toBeGreaterThan(0);
    for (const o of refused) expect(o).toMatchObject({ reason: 'standing', at: o.arrived });
    expect(refused[0]!.message).toMatch(/its queue stands .* target of 20 ms.*retry later/);
    const stats = controlled.limiter.stats();
    expect(stats.standing).toMatchObject({
      stood: 1,
      shed: controlled.outcomes.filter((o) => o.reason === 'standing').length,
    });
    expect(stats.standing!.targetMs).toBeCloseTo(20, 0);
    // FIFO reports no queue state: it has none.
    expect(fifo.limiter.stats().standing).toBeUndefined();
  });

  it('absorbs a burst that drains within the interval: nobody is refused', async () => {
    const clock = new VirtualClock();
    const limiter = new LocalLimiter({ global: 4, wait: true, waiting: { mode: 'controlled' }, clock });
    const outcomes: Outcome[] = [];
    const arrive = () => outcomes.push(heldAdmission(limiter, clock, 20, 1_000));
    // A calm (50 a second), a burst of 100 at once (half a second of the capacity), a calm again.
    for (let t = 0; t < 2_000; t += 20) {
      arrive();
      await clock.advance(20);
    }
    for (let i = 0; i < 100; i++) arrive();
    for (let t = 0; t < 2_000; t += 20) {
      arrive();
      await clock.advance(20);
    }
    await clock.advance(1_100);
    expect(outcomes.filter((o) => !o.admitted)).toEqual([]);
    expect(limiter.stats().standing).toMatchObject({ standing: false, stood: 0, shed: 0 });
  });

  it('lets a standing queue be once it stayed drained for an interval', async () => {
    const { limiter, clock, during } = await overload({ waiting: { mode: 'controlled' } }, { untilMs: 3_000 });
    expect(during.standing!.standing).toBe(true);
    // The overload ended a deadline and a hold ago (1 020 ms): drained for more than the 1 s interval.
    expect(limiter.stats().standing).toMatchObject({ standing: false, stood: 1 });
    // A new overload must stand a whole interval again before anyone is shed.
    const held = await Promise.all([0, 1, 2, 3].map(() => limiter.admit({ pool: 'api', timeoutMs: 5_000 })));
    const waiting = Array.from({ length: 50 }, () => limiter.admit({ pool: 'api', timeoutMs: 5_000 }));
    await clock.advance(500);
    expect(limiter.stats()).toMatchObject({ waiting: 50, standing: { standing: false } });
    for (const a of held) a.release();
    await clock.advance(0);
    await Promise.all(waiting.map(async (w) => (await w).release()));
  });

  it('takes a fixed target and interval', async () => {
    // Target 5 ms: the served wait well below the 20 ms hold.
    const fixed = await overload({ waiting: { mode: 'controlled', targetMs: 5, intervalMs: 200 } });
    const measured = await overload({ waiting: { mode: 'controlled' } });
    // Within a few targets: slots come free one every 5 ms, so a wait is counted in such turns.
    const fixedP99 = p99(waits(fixed.outcomes, 1_000));
    expect(fixedP99).toBeLessThanOrEqual(15);
    expect(fixedP99).toBeLessThan(p99(waits(measured.outcomes, 1_000)));
    expect(fixed.during.standing!.targetMs).toBe(5);
  });

  it('is an adaptive limiter’s default, and FIFO when asked', async () => {
    const adaptive = new AdaptiveLimiter({});
    expect(adaptive.stats().standing).toMatchObject({ standing: false, stood: 0, shed: 0 });
    expect(new AdaptiveLimiter({ waiting: { mode: 'fifo' } }).stats().standing).toBeUndefined();
    // Under sustained overload an adaptive limiter's served callers wait about a hold, not 1 s.
    const { outcomes } = await overload(
      {},
      { holdMs: 20, everyMs: 1 },
      (o) => new AdaptiveLimiter({ clock: o.clock, adaptive: { algorithm: 'vegas', initial: 4, max: 4 } }),
    );
    expect(p99(waits(outcomes, 3_000))).toBeLessThanOrEqual(30);
  });

  it('lets a cold adaptive limit’s queue be while the limit starts slowly, and sheds once it can grow no more', async () => {
    // Callers every 2 ms, each holding 20 ms: 10 in flight. The limit starts at 6: a queue forms
    // at once and lasts while the limit learns the latency and grows (about a second). It is the
    // limit's to drain (it doubles each window it binds), not a standing queue: nobody is refused.
    // Capped at 6, the same queue stands.
    const run = (max: number) =>
      overload(
        {},
        { holdMs: 20, everyMs: 2, untilMs: 4_000 },
        (o) => new AdaptiveLimiter({ clock: o.clock, adaptive: { algorithm: 'vegas', initial: 6, max } }),
      );
    const growing = await run(1_000);
    expect(growing.outcomes.filter((o) => !o.admitted)).toEqual([]);
    expect(growing.limiter.stats().standing).toMatchObject({ stood: 0, shed: 0 });
    expect(growing.limiter.stats().limit).toBeGreaterThanOrEqual(10);
    const capped = await run(6);
    expect(capped.outcomes.filter((o) => o.reason === 'standing').length).toBeGreaterThan(0);
    expect(capped.limiter.stats().standing!.stood).toBeGreaterThanOrEqual(1);
  });

  it('refuses a bad waiting option by name, with what to change', () => {
    const bad: [unknown, RegExp][] = [
      [{ mode: 'lifo' }, /limits\.waiting\.mode.*'controlled'.*'fifo'/],
      [{ targetMs: -1 }, /limits\.waiting\.targetMs/],
      [{ intervalMs: Infinity }, /limits\.waiting\.intervalMs/],
      [{ target: 5 }, /target.*targetMs/],
      ['controlled', /limits\.waiting.*an object/],
    ];
    for (const [waiting, message] of bad) {
      expect(() => new LocalLimiter({ waiting } as LimitOptions)).toThrow(PoolConfigError);
      expect(() => new LocalLimiter({ waiting } as LimitOptions)).toThrow(message);
      expect(() => new AdaptiveLimiter({ waiting } as LimitOptions)).toThrow(message);
    }
  });

  it('sheds through Redis too, each instance over its own waiters', async () => {
    const limiter = await started(
      new RedisLimiter({
        redis: { url: REDIS_URL, namespace: namespace(), restartProtection: false },
        global: 2,
        wait: true,
        waiting: { mode: 'controlled', targetMs: 5, intervalMs: 150 },
      }),
    );
    {
      const refusals: string[] = [];
      let served = 0;
      const caller = async () => {
        try {
          const a = await limiter.admit({ pool: 'api', timeoutMs: 2_000 });
          served++;
          await new Promise((r) => setTimeout(r, 20));
          a.release();
        } catch (err) {
          refusals.push((err as CapacityExceededError).reason);
        }
      };
      // 12 callers at once, again every 10 ms for a second: six times what two slots of 20 ms serve.
      const calls: Promise<void>[] = [];
      for (let i = 0; i < 100; i++) {
        for (let j = 0; j < 3; j++) calls.push(caller());
        await new Promise((r) => setTimeout(r, 10));
      }
      await Promise.all(calls);
      expect(served).toBeGreaterThan(0);
      expect(refusals.length).toBeGreaterThan(0);
      expect(new Set(refusals)).toEqual(new Set(['standing']));
      expect(limiter.stats().standing).toMatchObject({ stood: expect.any(Number), shed: refusals.length });
      expect(limiter.stats().standing!.stood).toBeGreaterThanOrEqual(1);
    }
  }, 20_000);
});

describe('StandingQueue, the rule alone', () => {
  it('sheds nothing while its target is unknown, nor before the queue stood a whole interval', () => {
    const drain = new DrainRate({ now: () => 0 });
    const unknown = new StandingQueue(drain, () => 4);
    expect(unknown.admits(10_000, 1_000, 0)).toBe(true);
    const fixed = new StandingQueue(drain, () => 4, { targetMs: 10, intervalMs: 100 });
    fixed.formed(0);
    // The oldest has waited 50 ms, but the queue formed only 50 ms ago.
    expect(fixed.admits(50, 10, 0)).toBe(true);
    // 120 ms on, nobody served within 10 ms: it stands; with the rate unknown, the oldest's age (120 ms) decides.
    expect(fixed.admits(120, 10, 0)).toBe(false);
    expect(fixed.state(120, 0)).toMatchObject({ standing: true, targetMs: 10, stood: 1, shed: 1 });
    // A caller served within the target does not let it be: only an interval drained does.
    fixed.served(130, 5);
    expect(fixed.admits(131, 0, undefined)).toBe(true);
    expect(fixed.standing).toBe(true);
    expect(fixed.admits(240, 0, undefined)).toBe(true);
    expect(fixed.standing).toBe(false);
  });

  it('lets a queue be while its slots are still growing; its interval begins once they stop', () => {
    const drain = new DrainRate({ now: () => 0 });
    let starting = true;
    const rule = new StandingQueue(
      drain,
      () => 4,
      { targetMs: 10, intervalMs: 100 },
      () => starting,
    );
    rule.formed(0);
    // Long past an interval, nobody served within the target: still let be.
    expect(rule.admits(500, 50, 0)).toBe(true);
    expect(rule.state(500, 0)).toMatchObject({ standing: false, stood: 0, shed: 0 });
    starting = false;
    // Now it must stand a whole interval from here before anyone is shed.
    expect(rule.admits(590, 50, 0)).toBe(true);
    expect(rule.admits(610, 50, 0)).toBe(false);
    expect(rule.state(610, 0)).toMatchObject({ standing: true, stood: 1, shed: 1 });
  });
});

// Priority classes through Redis: the partitioned limit holds across instances. A class takes
// what the others leave idle; once a class under its guarantee has callers waiting on any
// instance, the slots freed go to it until it holds its share; the sets Redis keeps per class
// follow every lease, its holder's crash and its instance's close. Real Redis, real timers.
import { describe, expect, it } from '@jest/globals';
import {
  AdaptiveLimiter,
  type Admission,
  CapacityExceededError,
  type LimitOptions,
  PoolConfigError,
  RedisLimiter,
} from '../../lib/index.js';
import { inspector, leasesIn, namespace, REDIS_URL, started } from '../support/redis.js';
import { VirtualClock } from '../support/virtual-clock.js';
import { sleep, until } from '../support/wait.js';

const classes = [
  { name: 'live', share: 0.7 },
  { name: 'batch', share: 0.3 },
];

const limiter = (ns: string, options: LimitOptions = {}, leaseTtlMs = 1_000) =>
  started(
    new RedisLimiter({
      global: 10,
      classes,
      ...options,
      redis: { url: REDIS_URL, namespace: ns, restartProtection: false, leaseTtlMs, pollMs: 50 },
    }),
  );

/** A caller of `cls` that waits up to `timeoutMs`: its lease once admitted, or its refusal. */
function caller(l: RedisLimiter, cls: string, timeoutMs = 10_000) {
  const c: { lease?: Admission; error?: Error } = {};
  l.admit({ pool: 'api', class: cls, timeoutMs }).then(
    (lease) => (c.lease = lease),
    (err: Error) => (c.error = err),
  );
  return c;
}

/** `n` leases of `cls`, each admitted at once (no wait). */
async function take(l: RedisLimiter | AdaptiveLimiter, cls: string, n: number): Promise<Admission[]> {
  const leases: Admission[] = [];
  for (let i = 0; i < n; i++) leases.push(await l.admit({ pool: 'api', class: cls, timeoutMs: 0 }));
  return leases;
}

const admitted = (callers: { lease?: Admission }[]) => callers.filter((c) => c.lease !== undefined).length;
const classSet = (ns: string, c: number) => inspector().zcount(`{${ns}}:c:${c}`, '-inf', '+inf');

describe('priority classes through Redis', () => {
  it('a class borrows the idle slots, and gives them back to a class under its share waiting on another instance', async () => {
    const ns = namespace();
    const a = await limiter(ns);
    const b = await limiter(ns);
    // No live caller anywhere: batch takes every slot.
    const held = await take(a, 'batch', 10);
    await expect(a.admit({ pool: 'api', class: 'batch', timeoutMs: 0 })).rejects.toBeInstanceOf(CapacityExceededError);

    // Live callers wait on b; batch callers wait on a, arrived after them and before.
    const early = Array.from({ length: 3 }, () => caller(a, 'batch'));
    await sleep(30);
    const live = Array.from({ length: 8 }, () => caller(b, 'live'));
    const late = Array.from({ length: 3 }, () => caller(a, 'batch'));
    await until(() => b.stats().waiting === 8 && a.stats().waiting === 6);

    // Each batch lease given back goes to a live caller until live holds its 7.
    for (let i = 0; i < 7; i++) {
      held.pop()!.release();
      await until(() => admitted(live) === i + 1);
      await sleep(20);
      expect(admitted(early) + admitted(late)).toBe(0);
    }
    expect(await classSet(ns, 0)).toBe(7);
    expect(await classSet(ns, 1)).toBe(3);

    // Now batch is at its 3; one more given back leaves it under: batch, not the eighth live caller, gets it.
    held.pop()!.release();
    await until(() => admitted(early) + admitted(late) === 1);
    await sleep(100);
    expect(admitted(live)).toBe(7);
    expect(admitted(early)).toBe(1); // the longest waiting batch caller
    expect(b.stats().classes!.map((c) => [c.name, c.used, c.waiting])).toEqual([
      ['live', 7, 1],
      ['batch', 0, 0],
    ]);
    expect(a.stats().classes!.map((c) => [c.name, c.used, c.waiting])).toEqual([
      ['live', 0, 0],
      ['batch', 3, 5],
    ]);
    expect(await leasesIn(inspector(), ns)).toBe(10);

    for (const lease of held) lease.release();
    for (const c of [...live, ...early, ...late]) c.lease?.release();
    await until(() => admitted(live) === 8);
    for (const c of [...live, ...early, ...late]) c.lease?.release();
    await until(() => admitted(early) + admitted(late) === 6);
    for (const c of [...early, ...late]) c.lease?.release();
    await until(async () => (await leasesIn(inspector(), ns)) === 0);
    expect([await classSet(ns, 0), await classSet(ns, 1)]).toEqual([0, 0]);
  });

  it('a higher class over its share leaves the slots a waiting lower class is guaranteed', async () => {
    const ns = namespace();
    const a = await limiter(ns);
    const b = await limiter(ns);
    const live = await take(a, 'live', 10);
    const batch = Array.from({ length: 4 }, () => caller(b, 'batch'));
    const moreLive = Array.from({ length: 4 }, () => caller(a, 'live'));
    await until(() => a.stats().waiting === 4 && b.stats().waiting === 4);
    for (let i = 0; i < 3; i++) {
      live.pop()!.release();
      await until(() => admitted(batch) === i + 1);
    }
    // Batch holds its 3; the next slot goes to live (at 7, its own guarantee), not to the fourth batch caller.
    live.pop()!.release();
    await until(() => admitted(moreLive) === 1);
    await sleep(100);
    expect(admitted(batch)).toBe(3);
    for (const l of live) l.release();
    await until(() => admitted(moreLive) === 4 && admitted(batch) === 4);
    for (const c of [...batch, ...moreLive]) c.lease!.release();
  });

  it('holds a waiting class its slots only while some instance reports its callers waiting', async () => {
    const ns = namespace();
    const a = await limiter(ns);
    const redis = inspector();
    // A caller of live waits on an instance that vanished: its demand, scored to lapse 400 ms from now.
    const [seconds, micros] = await redis.time();
    const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    await redis.zadd(`{${ns}}:cw`, now + 400, '0:ghost');
    const first: Admission[] = [];
    for (let i = 0; i < 10; i++) {
      const lease = await a.admit({ pool: 'api', class: 'batch', timeoutMs: 0 }).catch(() => undefined);
      if (lease !== undefined) first.push(lease);
    }
    expect(first).toHaveLength(3); // 7 held for live
    await sleep(450);
    const rest = await take(a, 'batch', 7);
    expect(rest).toHaveLength(7);
    for (const l of [...first, ...rest]) l.release();
  });

  it("a closed instance's waiting callers no longer hold slots; a stopped holder's class slots come back within a TTL", async () => {
    const ns = namespace();
    const a = await limiter(ns);
    const waiter = await limiter(ns);
    const held = await take(a, 'batch', 10);
    const live = caller(waiter, 'live');
    await until(() => waiter.stats().waiting === 1);
    expect(await inspector().zcard(`{${ns}}:cw`)).toBe(1);
    await waiter.close();
    expect(live.error).toBeDefined();
    expect(await inspector().zcard(`{${ns}}:cw`)).toBe(0);
    held.pop()!.release();
    held.push(await a.admit({ pool: 'api', class: 'batch', timeoutMs: 0 })); // nothing held for live

    for (const l of held) l.release();
    const frozen = await limiter(ns, { clock: new VirtualClock() }, 300); // its heartbeat never fires: a crash
    const b = await limiter(ns, {}, 300);
    await take(frozen, 'live', 7);
    expect(await classSet(ns, 0)).toBe(7);
    const batch = Array.from({ length: 4 }, () => caller(b, 'batch', 0));
    await until(() => batch.every((c) => c.lease !== undefined || c.error !== undefined)); // each answered
    expect(admitted(batch)).toBe(3);
    await sleep(350);
    const later = await b.admit({ pool: 'api', class: 'live', timeoutMs: 0 });
    expect(later).toBeDefined();
    // b's heartbeat took the stopped holder's leases out of the class's set.
    await until(async () => (await classSet(ns, 0)) === 1);
    later.release();
    for (const c of batch) c.lease?.release();
  });

  it("works in an AdaptiveLimiter shared through Redis: the shares are of the fleet's estimate", async () => {
    const ns = namespace();
    const redis = { url: REDIS_URL, namespace: ns, restartProtection: false, leaseTtlMs: 1_000 };
    const adaptive = await started(
      new AdaptiveLimiter({ classes, adaptive: { algorithm: 'vegas', initial: 10 }, redis }),
    );
    const held = await take(adaptive, 'live', 10);
    expect(await classSet(ns, 0)).toBe(10);
    expect(adaptive.stats().classes!.map((c) => [c.name, c.used])).toEqual([
      ['live', 10],
      ['batch', 0],
    ]);
    for (const lease of held) lease.release();
    await until(async () => (await classSet(ns, 0)) === 0);
  });

  it("counts as admitted only the callers served: an admission granted as its waiter timed out is nobody's", async () => {
    const ns = namespace();
    const a = await limiter(ns);
    let [served, refused] = [0, 0];
    const calls: Promise<void>[] = [];
    const arrivals = setInterval(() => {
      for (let i = 0; i < 8; i++)
        calls.push(
          a.admit({ pool: 'api', class: i % 2 === 0 ? 'live' : 'batch', timeoutMs: 300 }).then(
            async (lease) => {
              served++;
              await sleep(35);
              lease.release();
            },
            () => void refused++,
          ),
        );
    }, 10);
    await sleep(2_000);
    clearInterval(arrivals);
    await Promise.all(calls);
    const { counters, classes: byClass } = a.stats();
    expect(refused).toBeGreaterThan(0);
    expect(counters).toMatchObject({ admitted: served, released: served, refusedGlobal: refused });
    expect(byClass!.reduce((n, c) => n + c.admitted, 0)).toBe(served);
    expect(byClass!.reduce((n, c) => n + c.refused, 0)).toBe(refused);
    expect(byClass!.map((c) => c.used)).toEqual([0, 0]);
  });

  it('refuses a class it does not have, at once, and counts refusals by class', async () => {
    const ns = namespace();
    const a = await limiter(ns, { global: 1 });
    await expect(a.admit({ pool: 'api', class: 'Live', timeoutMs: 0 })).rejects.toThrow(
      new PoolConfigError(
        'api',
        'acquire.class',
        `("Live") is not a class of the limiter "limits": one of 'live', 'batch' (did you mean 'live'?)`,
      ),
    );
    const lease = await a.admit({ pool: 'api', timeoutMs: 0 }); // the default class: the last, batch
    await expect(a.admit({ pool: 'api', class: 'live', timeoutMs: 0 })).rejects.toBeInstanceOf(CapacityExceededError);
    await expect(a.admit({ pool: 'api', class: 'live', timeoutMs: 50 })).rejects.toBeInstanceOf(CapacityExceededError);
    expect(a.stats().classes).toEqual([
      { name: 'live', share: 0.7, used: 0, waiting: 0, admitted: 0, refused: 2 },
      { name: 'batch', share: 0.3, used: 1, waiting: 0, admitted: 1, refused: 0 },
    ]);
    lease.release();
  });
});

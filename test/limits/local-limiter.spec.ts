import { describe, expect, it } from '@jest/globals';
import { getEventListeners } from 'node:events';
import {
  CapacityExceededError,
  KeyLimitError,
  LocalLimiter,
  PoolClosedError,
  PoolConfigError,
  type Admission,
  type AdmissionLimiter,
  type LimiterMode,
} from '../../lib/index.js';
import { FakeConnector } from '../support/fake-connector.js';
import { makePool, track } from '../support/harness.js';
import { flush, VirtualClock } from '../support/virtual-clock.js';

const ask = (key?: string, timeoutMs = 0) => ({ pool: 'api', key, timeoutMs });

describe('LocalLimiter', () => {
  it('admits up to the global limit, then refuses with CapacityExceededError', async () => {
    const limiter = new LocalLimiter({ global: 2, retryAfterMs: 1_500 });
    const a = await limiter.admit(ask());
    await limiter.admit(ask());
    const refused = await limiter.admit(ask()).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(CapacityExceededError);
    expect(refused).toMatchObject({ limit: 2, retryAfterMs: 1_500, reason: 'limit', code: 'CAPACITY_EXCEEDED' });
    a.release();
    a.release(); // idempotent
    await expect(limiter.admit(ask())).resolves.toBeDefined();
    const mode: LimiterMode = limiter.stats().mode; // the modes are a typed union, exported from the root
    expect(mode).toBe('local');
    expect(limiter.stats()).toMatchObject({
      mode: 'local',
      used: 2,
      limit: 2,
      utilization: 1,
      health: 'exhausted',
      counters: { admitted: 3, released: 1, refusedGlobal: 1 },
    });
  });

  it('names the keys holding the most leases, most first, at most five', async () => {
    const limiter = new LocalLimiter({ perKey: 10 });
    const held: Admission[] = [];
    const take = async (key: string, n: number) => {
      for (let i = 0; i < n; i++) held.push(await limiter.admit(ask(key)));
    };
    await take('ann', 3);
    await take('bob', 5);
    await take('cy', 1);
    await take('dee', 3);
    await take('eve', 2);
    await take('fay', 1);
    await limiter.admit(ask()); // keyless: no key to name
    expect(limiter.stats().topKeys).toEqual([
      { key: 'bob', leases: 5 },
      { key: 'ann', leases: 3 },
      { key: 'dee', leases: 3 },
      { key: 'eve', leases: 2 },
      { key: 'cy', leases: 1 },
    ]);
    for (const h of held.splice(0, 8)) h.release(); // ann's three and bob's five
    expect(limiter.stats().topKeys!.map((t) => t.key)).toEqual(['dee', 'eve', 'cy', 'fay']);
  });

  it('limits each key on its own', async () => {
    const limiter = new LocalLimiter({ perKey: 1 });
    await limiter.admit(ask('ann'));
    await expect(limiter.admit(ask('ann'))).rejects.toBeInstanceOf(KeyLimitError);
    await expect(limiter.admit(ask('bob'))).resolves.toBeDefined();
  });

  it('reports health states from utilization', async () => {
    const limiter = new LocalLimiter({ global: 10 });
    const healths = [];
    for (let i = 0; i < 10; i++) {
      await limiter.admit(ask());
      healths.push(limiter.stats().health);
    }
    expect(healths).toEqual([
      'healthy',
      'healthy',
      'healthy',
      'healthy',
      'healthy',
      'healthy',
      'degraded',
      'degraded',
      'critical',
      'exhausted',
    ]);
  });

  it('with wait, hands a freed slot to waiters in arrival order, skipping those whose key is full', async () => {
    const clock = new VirtualClock();
    const limiter = new LocalLimiter({ global: 2, perKey: 1, wait: true, clock });
    const ann = await limiter.admit(ask('ann'));
    const bob = await limiter.admit(ask('bob'));
    const ann2 = track(limiter.admit(ask('ann', 1_000)));
    const cy = track(limiter.admit(ask('cy', 1_000)));
    bob.release();
    await Promise.resolve();
    expect(ann2.settled).toBe(false); // ann still holds her one slot
    expect(cy.settled).toBe(true);
    ann.release();
    await Promise.resolve();
    expect(ann2.settled).toBe(true);
    const late = track(limiter.admit(ask('dee', 100)));
    await clock.advance(100);
    expect(late.error).toBeInstanceOf(CapacityExceededError);
    expect(limiter.stats().waiting).toBe(0);
  });

  it("with wait: 'global', waits for the global limit but answers a key over its own limit at once", async () => {
    const clock = new VirtualClock();
    const limiter = new LocalLimiter({ global: 2, perKey: 1, wait: 'global', clock });
    const ann = await limiter.admit(ask('ann'));
    await expect(limiter.admit(ask('ann', 1_000))).rejects.toBeInstanceOf(KeyLimitError); // at once, not at the deadline
    const bob = await limiter.admit(ask('bob'));
    const cy = track(limiter.admit(ask('cy', 1_000)));
    await Promise.resolve();
    expect(cy.settled).toBe(false); // the global limit is full: cy waits
    bob.release();
    await Promise.resolve();
    expect(cy.settled).toBe(true);
    ann.release();
  });

  it('counts a call without a key against the global limit only, unless keyless is refuse', async () => {
    const limiter = new LocalLimiter({ global: 3, perKey: 1 });
    const held = [await limiter.admit(ask('ann')), await limiter.admit(ask()), await limiter.admit(ask())];
    await expect(limiter.admit(ask())).rejects.toBeInstanceOf(CapacityExceededError);
    expect(limiter.stats()).toMatchObject({ used: 3, held: 3 });
    for (const admission of held) admission.release();
    const strict = new LocalLimiter({ perKey: 3, keyless: 'refuse' });
    await expect(strict.admit(ask())).rejects.toThrow(
      `pool "api": option "acquire.key" is required: the limiter "limits" allows 3 leases per key and refuses calls without one (keyless: 'refuse')`,
    );
    expect(() => new LocalLimiter({ perKey: 3, keyless: 'drop' as never })).toThrow(
      `option "limits.keyless" must be 'global' or 'refuse', got "drop"`,
    );
  });

  it('takes a null key (no key on purpose) against the global limit only, even when keyless is refuse, waiting too', async () => {
    const clock = new VirtualClock();
    const strict = new LocalLimiter({ global: 2, perKey: 1, keyless: 'refuse', wait: true, clock });
    const first = await strict.admit({ ...ask(), key: null });
    const second = await strict.admit({ ...ask(), key: null }); // two keyless leases, though perKey is 1
    const third = track(strict.admit({ ...ask(undefined, 100), key: null }));
    await flush();
    expect([third.settled, strict.stats()]).toEqual([false, expect.objectContaining({ used: 2, waiting: 1 })]);
    first.release();
    await flush();
    expect(third.settled).toBe(true);
    second.release();
    (third.value as Admission).release();
    expect(strict.stats()).toMatchObject({ used: 0, waiting: 0 });
  });

  it('rejects a bad key and bad limits, saying what to change', async () => {
    const limiter = new LocalLimiter({ perKey: 3 });
    await expect(limiter.admit(ask(''))).rejects.toBeInstanceOf(PoolConfigError);
    expect(() => new LocalLimiter({ global: 0 })).toThrow(
      'option "limits.global" must be a whole number of 1 or more, got 0',
    );
    expect(() => new LocalLimiter({ perKey: 2.5 })).toThrow(
      'option "limits.perKey" must be a whole number of 1 or more, or a function (key) => limit, got 2.5',
    );
    expect(() => new LocalLimiter({ wait: 'yes' as never })).toThrow(
      `option "limits.wait" must be true, false or 'global'`,
    );
  });
});

describe('a pool with a limiter', () => {
  it('admits before checking out, and gives the slot back with the lease', async () => {
    const limiter = new LocalLimiter({ global: 2, perKey: 1 });
    const { pool } = makePool({ limiter, clientLimit: 10 }, new FakeConnector());
    const a = await pool.acquire({ key: 'ann' });
    await expect(pool.acquire({ key: 'ann' })).rejects.toBeInstanceOf(KeyLimitError);
    const b = await pool.use(async () => pool.stats(), { key: 'bob' });
    expect(b).toMatchObject({ clients: 2, admission: { used: 2 } });
    const keyless = await pool.acquire(); // no key: counted against the global limit only
    await expect(pool.acquire({ key: 'cy' })).rejects.toBeInstanceOf(CapacityExceededError);
    keyless.release();
    a.release();
    expect(limiter.stats().used).toBe(0);
    expect(pool.stats()).toMatchObject({ clients: 0, admission: { mode: 'local', used: 0, limit: 2 } });
  });

  it('counts the limiter in its health: the higher utilization wins', async () => {
    const limiter = new LocalLimiter({ global: 4 });
    const { pool } = makePool({ limiter, maxSize: 10, clientLimit: 100 });
    for (let i = 0; i < 3; i++) await pool.acquire();
    expect(pool.stats()).toMatchObject({ utilization: 0.75, health: 'degraded' });
  });

  it('gives the slot back when no connection comes in time', async () => {
    const limiter = new LocalLimiter({ global: 5 });
    const { pool, clock } = makePool({ limiter, maxSize: 1, clientLimit: 1 });
    const held = await pool.acquire();
    const waiting = track(pool.acquire({ timeoutMs: 50 }));
    await new Promise((r) => setImmediate(r));
    expect(limiter.stats().used).toBe(2);
    await clock.advance(60);
    expect(waiting.error).toMatchObject({ code: 'CONNECTIONS_EXHAUSTED' });
    expect(limiter.stats().used).toBe(1);
    held.release();
    expect(limiter.stats().used).toBe(0);
  });

  it('rejects a limiter without admit() and stats()', () => {
    expect(() => makePool({ limiter: {} as AdmissionLimiter })).toThrow(
      'option "limiter" must have admit() and stats()',
    );
  });
});

describe('LocalLimiter waits of any length', () => {
  it('a caller waiting for a slot with no deadline (Infinity) or one past 2^31-1 ms is not refused early (real timers)', async () => {
    const limiter = new LocalLimiter({ global: 1, wait: true });
    const held = await limiter.admit({ pool: 'p', timeoutMs: 1_000 });
    const waiting = [Infinity, 3e9].map((timeoutMs) => {
      const outcome: { error?: unknown; admitted?: boolean } = {};
      limiter.admit({ pool: 'p', timeoutMs }).then(
        (a) => {
          outcome.admitted = true;
          a.release();
        },
        (err: unknown) => (outcome.error = err),
      );
      return outcome;
    });
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(waiting.map((w) => w.error)).toEqual([undefined, undefined]);
    held.release();
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(waiting.map((w) => w.admitted)).toEqual([true, true]);
    expect(limiter.stats()).toMatchObject({ held: 0, waiting: 0 });
  });

  it('holds one listener on the pool’s close signal however many callers wait, and close() still ends every wait', async () => {
    // A listener per waiter made a deep queue quadratic: Node's EventTarget checks each new one against all it holds.
    const local = new LocalLimiter({ global: 1, wait: true });
    let closing: AbortSignal | undefined;
    const limiter: AdmissionLimiter = {
      admit: (request) => {
        closing ??= request.signal;
        return local.admit(request);
      },
      stats: () => local.stats(),
    };
    const { pool } = makePool({ maxSize: 1, limiter });
    const first = await pool.acquire();
    const waiting = Array.from({ length: 3_000 }, () => track(pool.acquire({ timeoutMs: 60_000 })));
    await flush();
    expect(local.stats().waiting).toBe(3_000);
    expect(closing).toBeDefined();
    expect(getEventListeners(closing!, 'abort').length).toBeLessThanOrEqual(2); // the gate's hook and the limiter's
    first.release();
    await pool.close();
    await flush();
    expect(waiting.filter((w) => w.settled).length).toBe(3_000);
    // Every one rejected as the pool closed (the one the freed slot went to, admitted as it closed, too).
    expect(waiting.filter((w) => w.error instanceof PoolClosedError).length).toBe(3_000);
    expect(local.stats()).toMatchObject({ held: 0, waiting: 0 });
  });
});

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  KeyLimitError,
  LocalLimiter,
  PoolConfigError,
  RedisLimiter,
  type Admission,
  type ConcurrencyLimiter,
} from '../../lib/index.js';
import { RecordingLogger } from '../support/harness.js';
import { inspector, leasesIn, namespace, REDIS_URL, started } from '../support/redis.js';
import { RedisServer } from '../support/redis-server.js';
import { until } from '../support/wait.js';

const ask = (key?: string, timeoutMs = 0) => ({ pool: 'api', key, timeoutMs });
const premium = new Set(['gold-1', 'gold-2']);
/** The design's tiers: 20 leases at once for a premium user, 5 for the others. */
const tiers = (key: string) => (premium.has(key) ? 20 : 5);

/** Asks `n` admissions for `key` at once; returns the leases granted and the refusals. */
async function burst(limiter: ConcurrencyLimiter, key: string, n: number) {
  const settled = await Promise.allSettled(Array.from({ length: n }, () => limiter.admit(ask(key))));
  const leases = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const refusals = settled.flatMap((s) => (s.status === 'rejected' ? [s.reason as unknown] : []));
  return { leases, refusals };
}

/** A limiter's tier behaviour, the same in process and through Redis. */
function tierCases(make: (perKey: (key: string) => number, global?: number) => Promise<ConcurrencyLimiter>) {
  it('gives a premium key its own limit while standard keys are held to theirs', async () => {
    const limiter = await make(tiers, 100);
    // Standard keys first, each asking for far more than its limit: contention from every side.
    const standard = await Promise.all(['ann', 'bob', 'cy'].map((k) => burst(limiter, k, 12)));
    const gold = await burst(limiter, 'gold-1', 30);
    for (const s of standard) {
      expect(s.leases).toHaveLength(5);
      expect(s.refusals).toHaveLength(7);
      expect(s.refusals[0]).toBeInstanceOf(KeyLimitError);
      expect(s.refusals[0]).toMatchObject({ limit: 5 });
    }
    expect(gold.leases).toHaveLength(20);
    expect(gold.refusals[0]).toMatchObject({ key: 'gold-1', limit: 20 });
    expect((gold.refusals[0] as Error).message).toContain('20');
    const top = limiter.stats().topKeys!;
    expect(top[0]).toEqual({ key: 'gold-1', leases: 20, limit: 20 });
    expect(top.find((t) => t.key === 'ann')).toEqual({ key: 'ann', leases: 5, limit: 5 });
    expect(limiter.stats().perKey).toBeNaN();
    for (const lease of [...gold.leases, ...standard.flatMap((s) => s.leases)]) lease.release();
    // Given back: each key can take its whole limit again.
    const again = await burst(limiter, 'gold-2', 20);
    expect(again.leases).toHaveLength(20);
    for (const lease of again.leases) lease.release();
  });

  it('refuses with a PoolConfigError naming the key when the function throws or gives no limit, and loses no slot', async () => {
    const answers: Record<string, () => number> = {
      boom: () => {
        throw new Error('tier table not loaded');
      },
      zero: () => 0,
      nan: () => NaN,
      negative: () => -1,
      half: () => 2.5,
      text: () => '5' as unknown as number,
    };
    const limiter = await make((key) => (answers[key] ?? (() => 1))(), 2);
    for (const key of Object.keys(answers)) {
      const err = await limiter.admit(ask(key)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PoolConfigError);
      expect(err).toMatchObject({ field: 'limits.perKey' });
      expect((err as Error).message).toContain(`"${key}"`);
    }
    expect((await limiter.admit(ask('boom')).catch((e: Error) => e.message)) as string).toContain(
      'threw (tier table not loaded)',
    );
    expect((await limiter.admit(ask('zero')).catch((e: Error) => e.message)) as string).toContain(
      'must return a whole number of 1 or more, or Infinity, but returned 0',
    );
    // Nothing was taken by the failed calls: the whole global limit is still there.
    expect(limiter.stats().held).toBe(0);
    const held = [await limiter.admit(ask('ok-1')), await limiter.admit(ask('ok-2'))];
    for (const lease of held) lease.release();
  });

  it('lets a key the function calls unlimited use the whole global limit', async () => {
    const limiter = await make((key) => (key === 'internal' ? Infinity : 1), 4);
    const all = await burst(limiter, 'internal', 4);
    expect(all.leases).toHaveLength(4);
    expect(limiter.stats().topKeys![0]).toMatchObject({ key: 'internal', leases: 4 });
    for (const lease of all.leases) lease.release();
  });
}

describe('per-key limits that depend on the key (tiers)', () => {
  describe('in process', () => {
    tierCases(async (perKey, global) => new LocalLimiter({ perKey, global }));

    it('a waiting caller is served under its own key limit, and times out against it', async () => {
      const limiter = new LocalLimiter({ perKey: tiers, wait: true });
      const held: Admission[] = [];
      for (let i = 0; i < 5; i++) held.push(await limiter.admit(ask('ann')));
      const waiting = limiter.admit(ask('ann', 5_000));
      const late = limiter.admit(ask('bob', 5_000)); // a key of its own: admitted at once
      await expect(late).resolves.toBeDefined();
      held[0]!.release();
      const served = await waiting; // ann holds 5 again
      const timedOut = await limiter.admit(ask('ann', 30)).catch((e: unknown) => e);
      expect(timedOut).toBeInstanceOf(KeyLimitError);
      expect(timedOut).toMatchObject({ limit: 5 });
      for (const lease of [...held.slice(1), served, await late]) lease.release();
      expect(limiter.stats().held).toBe(0);
    });

    it('calls the function once per admission with the call’s key, never for a keyless call', async () => {
      const asked: string[] = [];
      const limiter = new LocalLimiter({
        perKey: (key) => {
          asked.push(key);
          return 3;
        },
      });
      (await limiter.admit(ask('ann'))).release();
      (await limiter.admit(ask())).release();
      (await limiter.admit({ pool: 'api', key: null, timeoutMs: 0 })).release();
      expect(asked).toEqual(['ann']);
    });

    it('with keyless: refuse, still refuses a call without a key', async () => {
      const limiter = new LocalLimiter({ perKey: tiers, keyless: 'refuse' });
      await expect(limiter.admit(ask())).rejects.toThrow('limits leases per key and refuses calls without one');
    });

    it('refuses a perKey that is neither a whole number nor a function', () => {
      expect(() => new LocalLimiter({ perKey: 'five' as unknown as number })).toThrow(
        'a whole number of 1 or more, or a function (key) => limit',
      );
      expect(() => new LocalLimiter({ perKey: 0 })).toThrow(PoolConfigError);
    });
  });

  describe('through Redis', () => {
    const logger = new RecordingLogger();
    const redisLimiter = (ns: string, perKey: (key: string) => number, global?: number, url = REDIS_URL) =>
      started(
        new RedisLimiter({
          perKey,
          global,
          logger,
          redis: { url, namespace: ns, restartProtection: false, leaseTtlMs: 1_000 },
        }),
      );

    tierCases((perKey, global) => redisLimiter(namespace(), perKey, global));

    it('two instances hold one premium key to 20 and a standard key to 5 between them', async () => {
      const ns = namespace();
      const a = await redisLimiter(ns, tiers, 100);
      const b = await redisLimiter(ns, tiers, 100);
      const [goldA, goldB, annA, annB] = await Promise.all([
        burst(a, 'gold-1', 15),
        burst(b, 'gold-1', 15),
        burst(a, 'ann', 4),
        burst(b, 'ann', 4),
      ]);
      expect(goldA.leases.length + goldB.leases.length).toBe(20);
      expect(annA.leases.length + annB.leases.length).toBe(5);
      expect(await leasesIn(inspector(), ns)).toBe(25);
      for (const s of [goldA, goldB, annA, annB]) for (const lease of s.leases) lease.release();
      await until(async () => (await leasesIn(inspector(), ns)) === 0);
    });

    describe('while Redis is away', () => {
      let server: RedisServer;
      beforeAll(async () => {
        server = await RedisServer.start();
      });
      afterAll(async () => {
        await server.stop();
      });

      it('holds each key to its share of its own limit in the local fallback', async () => {
        const limiter = await started(
          new RedisLimiter({
            perKey: tiers,
            logger,
            redis: {
              url: server.url,
              namespace: namespace(server.url),
              leaseTtlMs: 1_000,
              commandTimeoutMs: 200,
              fallbackAfterMs: 0,
              instances: 2,
            },
          }),
        );
        await until(() => limiter.stats().mode === 'redis');
        await server.stop();
        await until(() => limiter.stats().mode === 'fallback', 10_000);
        const gold = await burst(limiter, 'gold-1', 15);
        const ann = await burst(limiter, 'ann', 5);
        expect(gold.leases).toHaveLength(10); // 20 over 2 instances
        expect(ann.leases).toHaveLength(2); // 5 over 2, rounded down
        expect(ann.refusals[0]).toMatchObject({ limit: 2 });
        for (const lease of [...gold.leases, ...ann.leases]) lease.release();
        await server.start();
        await until(() => limiter.stats().mode !== 'fallback', 10_000);
        await limiter.close();
      }, 30_000);
    });
  });
});

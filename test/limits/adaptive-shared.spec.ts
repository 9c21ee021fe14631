// One adaptive limit shared by every instance through real Redis: an overload seen by one cuts
// the fleet's limit once per round, successes anywhere grow one limit as one instance seeing them
// all would, a Retry-After pauses every instance, the per-key limit holds while the limit moves,
// and Redis faults (a stall, a restart that forgets every key) never raise the limit.
import { describe, expect, it } from '@jest/globals';
import { AdaptiveLimiter, type AdaptiveLimiterOptions } from '../../lib/limits/index.js';
import { limitAlgorithm } from '../../lib/limits/adaptive/limit-algorithms.js';
import type { Admission, CallResult } from '../../lib/index.js';
import { RecordingLogger } from '../support/harness.js';
import { inspector, namespace, onCleanup, REDIS_URL, started } from '../support/redis.js';
import { RedisServer } from '../support/redis-server.js';
import { sleep, until } from '../support/wait.js';

const ask = (key?: string) => ({ pool: 'api', key, timeoutMs: 0 });
const ok: CallResult = { ok: true, value: { status: 200 } };
const tooMany = (retryAfter?: string): CallResult => ({
  ok: true,
  value: { status: 429, headers: retryAfter === undefined ? {} : { 'retry-after': retryAfter } },
});

/** An adaptive limiter sharing `ns` on `url`, started, closed after the test. */
function shared(ns: string, options: Partial<AdaptiveLimiterOptions> = {}, url = REDIS_URL): Promise<AdaptiveLimiter> {
  const { redis, ...rest } = options;
  return started(
    new AdaptiveLimiter({
      name: 'llm',
      logger: new RecordingLogger(),
      adaptive: { algorithm: 'aimd', initial: 10, max: 40, backoff: 0.5 },
      ...rest,
      redis: { url, namespace: ns, leaseTtlMs: 2_000, restartProtection: false, ...redis },
    }),
  );
}

/** Admits `n` at once on `limiter`, ends each with `result`, releases them. */
async function calls(limiter: AdaptiveLimiter, n: number, result: CallResult): Promise<void> {
  const held = await Promise.all(Array.from({ length: n }, () => limiter.admit(ask())));
  for (const h of held) end(h, result);
}

function end(admission: Admission, result: CallResult): void {
  admission.ended!(result);
  admission.release();
}

/** The estimate Redis keeps for `ns`. */
async function estimateIn(ns: string, url = REDIS_URL): Promise<number> {
  return Number(await inspector(url).hget(`{${ns}}:meta`, 'alimit'));
}

describe('AdaptiveLimiter shared through Redis', () => {
  it('an overload on one instance cuts the limit every instance admits by', async () => {
    const ns = namespace();
    const a = await shared(ns);
    const b = await shared(ns);
    await calls(a, 1, tooMany());
    expect(a.limit).toBe(5); // its own view at once
    await until(async () => (await estimateIn(ns)) === 5); // reported without waiting for an admission
    await calls(b, 1, ok); // b learns it with its next call
    expect(b.limit).toBe(5);
    // The limit holds across both: 5 leases, then a refusal on either.
    const held = [
      ...(await Promise.all([1, 2, 3].map(() => a.admit(ask())))),
      ...(await Promise.all([1, 2].map(() => b.admit(ask())))),
    ];
    await expect(a.admit(ask())).rejects.toMatchObject({ code: 'CAPACITY_EXCEEDED', reason: 'limit', limit: 5 });
    await expect(b.admit(ask())).rejects.toMatchObject({ code: 'CAPACITY_EXCEEDED', reason: 'limit' });
    for (const h of held) h.release();
    expect(b.stats()).toMatchObject({
      mode: 'redis',
      limit: 5,
      adaptive: { shared: true, limit: 5, algorithm: 'aimd' },
    });
  });

  it('cuts once per round: overloads of leases admitted before the cut, on any instance, do not cut again', async () => {
    const ns = namespace();
    const a = await shared(ns);
    const b = await shared(ns);
    const before = [
      ...(await Promise.all([1, 2, 3].map(() => a.admit(ask())))),
      ...(await Promise.all([1, 2, 3].map(() => b.admit(ask())))),
    ];
    end(before[0]!, tooMany());
    await until(async () => (await estimateIn(ns)) === 5);
    for (const h of before.slice(1)) end(h, tooMany());
    await sleep(100); // both report what they saw
    await calls(a, 1, ok);
    await calls(b, 1, ok);
    expect(await estimateIn(ns)).toBeCloseTo(5, 0);
    expect([a.limit, b.limit]).toEqual([5, 5]);
    // A lease admitted after the cut that ends in overload is a new round.
    await calls(b, 1, tooMany());
    await until(async () => (await estimateIn(ns)) < 5);
    expect(Math.floor(await estimateIn(ns))).toBe(2);
  });

  it('grows one limit from every instance’s successes, as one instance seeing them all would', async () => {
    const ns = namespace();
    // Blind to latency: the calls' real latencies (a Redis round trip's noise) would cut it, as they should.
    const aimd = { algorithm: 'aimd', initial: 4, max: 40, tolerance: Infinity } as const;
    const a = await shared(ns, { adaptive: aimd });
    const b = await shared(ns, { adaptive: aimd });
    // One instance seeing every call: the same algorithm told each success, at the load it had.
    const alone = limitAlgorithm(aimd);
    let t = 0;
    // Rounds of calls filling the limit, split between the two instances.
    for (let round = 0; round < 12; round++) {
      const n = b.limit;
      const half = Math.ceil(n / 2);
      const held = [
        ...(await Promise.all(Array.from({ length: half }, () => a.admit(ask())))),
        ...(await Promise.all(Array.from({ length: n - half }, () => b.admit(ask())))),
      ];
      for (const h of held) end(h, ok);
      for (let i = 0; i < n; i++) alone.sample({ startedAt: t++, durationMs: 1, inflight: n, outcome: 'success' });
      await calls(a, 1, ok); // both views brought up to date (a lone call is too few to grow the limit)
      await calls(b, 1, ok);
    }
    const fleet = await estimateIn(ns);
    expect(Math.abs(fleet - alone.estimate)).toBeLessThanOrEqual(1.5);
    expect(fleet).toBeGreaterThan(12); // it did grow: about one per round
    expect(fleet).toBeLessThan(20); // two instances each growing it as their own would double that
    expect(Math.abs(a.limit - b.limit)).toBeLessThanOrEqual(1);
  });

  it('a Retry-After seen by one instance pauses every instance for that long', async () => {
    const ns = namespace();
    const a = await shared(ns);
    const b = await shared(ns);
    await calls(a, 1, tooMany('2'));
    await until(async () => Number(await inspector().hget(`{${ns}}:meta`, 'apause')) > 0);
    const err = await b.admit(ask()).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'CAPACITY_EXCEEDED', reason: 'paused' });
    const left = (err as { retryAfterMs: number }).retryAfterMs;
    expect(left).toBeGreaterThan(1_000);
    expect(left).toBeLessThanOrEqual(2_000);
    expect(b.stats().adaptive!.pausedMs).toBeGreaterThan(1_000); // b now refuses without asking Redis
    await sleep(left + 50);
    await expect(b.admit(ask()).then((h) => h.release())).resolves.toBeUndefined();
  });

  it('caps the pause the fleet takes at maxPauseMs, however long the Retry-After, and whichever instance hears it', async () => {
    const ns = namespace();
    const a = await shared(ns, { maxPauseMs: 1_500 });
    const b = await shared(ns, { maxPauseMs: 1_500 });
    await calls(a, 1, tooMany('99999999'));
    await until(async () => Number(await inspector().hget(`{${ns}}:meta`, 'apause')) > 0);
    const err = await b.admit(ask()).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'CAPACITY_EXCEEDED', reason: 'paused' });
    expect((err as { retryAfterMs: number }).retryAfterMs).toBeLessThanOrEqual(1_500);
    expect(a.stats().adaptive!.pausedMs).toBeLessThanOrEqual(1_500);
    await sleep(1_600);
    await expect(b.admit(ask()).then((h) => h.release())).resolves.toBeUndefined();
    await expect(a.admit(ask()).then((h) => h.release())).resolves.toBeUndefined();
  });

  it('lets each instance probe through the fleet’s pause: the first success ends it in Redis, the others end theirs with their own probe', async () => {
    const ns = namespace();
    const a = await shared(ns, { pauseProbeMs: 300 });
    const b = await shared(ns, { pauseProbeMs: 300 });
    const c = await shared(ns, { pauseProbeMs: Infinity });
    await calls(a, 1, tooMany('20'));
    await until(async () => Number(await inspector().hget(`{${ns}}:meta`, 'apause')) > 0);
    await expect(b.admit(ask())).rejects.toMatchObject({ reason: 'paused' }); // b hears of it from Redis
    await expect(c.admit(ask())).rejects.toMatchObject({ reason: 'paused' }); // and c, before any probe ends it
    await expect(a.admit(ask())).rejects.toMatchObject({ reason: 'paused' }); // no probe before pauseProbeMs
    await sleep(320);
    // a's probe goes through the pause in Redis; its overload renews the pause (capped).
    const renewed = await a.admit(ask());
    end(renewed, tooMany('20'));
    await expect(a.admit(ask())).rejects.toMatchObject({ reason: 'paused' });
    await sleep(320);
    const probe = await a.admit(ask());
    end(probe, ok);
    expect(a.stats().adaptive!.pausedMs).toBe(0);
    await until(async () => (await inspector().hget(`{${ns}}:meta`, 'apause')) === null); // the fleet's pause is over
    await expect(a.admit(ask()).then((h) => end(h, ok))).resolves.toBeUndefined();
    // b ends its own pause with its next probe; c, which sends none, keeps the pause it heard of (capped) to its end.
    await expect(c.admit(ask())).rejects.toMatchObject({ reason: 'paused' });
    await sleep(320);
    await expect(b.admit(ask()).then((h) => end(h, ok))).resolves.toBeUndefined();
    expect(b.stats().adaptive!.pausedMs).toBe(0);
  });

  it('keeps the per-key limit across instances while the global limit moves', async () => {
    const ns = namespace();
    const a = await shared(ns, { perKey: 2 });
    const b = await shared(ns, { perKey: 2 });
    const mine = [await a.admit(ask('user-1')), await b.admit(ask('user-1'))];
    await expect(a.admit(ask('user-1'))).rejects.toMatchObject({ code: 'KEY_LIMIT' });
    await calls(b, 1, tooMany()); // the global limit halves meanwhile
    await until(async () => (await estimateIn(ns)) === 5);
    await expect(b.admit(ask('user-1'))).rejects.toMatchObject({ code: 'KEY_LIMIT' });
    const others = await Promise.all(['user-2', 'user-3', 'user-3'].map((k) => a.admit(ask(k))));
    await expect(a.admit(ask('user-4'))).rejects.toMatchObject({ code: 'CAPACITY_EXCEEDED', limit: 5 });
    for (const h of [...mine, ...others]) h.release();
  });

  it('hands out each lease’s fencing token, and lets a lease held too long lapse (expire)', async () => {
    const a = await shared(namespace());
    const first = await a.admit(ask());
    const second = await a.admit(ask());
    expect(first.fence).toBeGreaterThan(0);
    expect(second.fence).toBeGreaterThan(first.fence!);
    second.expire!('held past maxHoldMs');
    expect(second.signal.aborted).toBe(true); // no longer refreshed: its holder must stop
    expect(first.signal.aborted).toBe(false);
    first.release();
    second.release();
  });

  it("refuses a perKey above adaptive.max, and a wait that is not true, false or 'global', naming the option", () => {
    expect(
      () => new AdaptiveLimiter({ adaptive: { algorithm: 'aimd', max: 5 }, perKey: 6, redis: { url: REDIS_URL } }),
    ).toThrow(/"limits.perKey" \(6\) must not exceed limits.adaptive.max \(5\)/);
    expect(
      () => new AdaptiveLimiter({ redis: { url: REDIS_URL }, wait: 1 } as never as AdaptiveLimiterOptions),
    ).toThrow(/"limits.wait" must be true, false or 'global', got 1/);
    expect(() => new AdaptiveLimiter({ redis: { url: REDIS_URL, leaseTtlMs: -1 } })).toThrow(/leaseTtlMs/);
  });

  it('a stalled Redis never raises the limit: successes while it does not answer are not counted', async () => {
    const server = await RedisServer.start();
    onCleanup(() => server.stop());
    const ns = namespace(server.url);
    const a = await shared(ns, { redis: { commandTimeoutMs: 200, fallbackAfterMs: 0, instances: 1 } }, server.url);
    await calls(a, 5, ok);
    const before = a.limit;
    server.pause();
    try {
      const first = await a.admit(ask()); // the call times out: admitted under the fallback at once (fallbackAfterMs: 0)
      expect(first.fence).toBeUndefined();
      end(first, ok);
      expect(a.stats().mode).toBe('fallback');
      // Full rounds of successes under the fallback: they would grow the limit, were Redis answering.
      for (let round = 0; round < 20; round++) await calls(a, a.limit, ok);
      expect(a.limit).toBe(before);
      await calls(a, 1, tooMany()); // an overload still cuts, here and, once Redis is back, there
      expect(a.limit).toBe(Math.floor(before / 2));
    } finally {
      server.resume();
    }
    await until(() => a.stats().mode === 'redis', 10_000);
    await until(async () => (await estimateIn(ns, server.url)) <= before / 2 + 0.5, 5_000);
    expect(a.limit).toBeLessThanOrEqual(Math.floor(before / 2) + 1);
  }, 30_000);

  it('a Redis restart that forgets the limit starts it again from where the instances saw it, not from initial', async () => {
    const server = await RedisServer.start();
    onCleanup(() => server.stop());
    const ns = namespace(server.url);
    const a = await shared(
      ns,
      {
        adaptive: { algorithm: 'aimd', initial: 20, max: 40, backoff: 0.5 },
        redis: { commandTimeoutMs: 300, restartProtection: true },
      },
      server.url,
    );
    await until(() => a.stats().mode === 'redis', 5_000); // a namespace never used starts with a quarantine
    await calls(a, 1, tooMany());
    await until(async () => (await estimateIn(ns, server.url)) === 10);
    await server.stop();
    await server.start(); // every key is gone
    await until(() => a.stats().mode !== 'unreachable' && a.stats().mode !== 'fallback', 10_000);
    await until(async () => (await inspector(server.url).hget(`{${ns}}:meta`, 'alimit')) !== null, 10_000);
    expect(await estimateIn(ns, server.url)).toBe(10);
    expect(a.limit).toBe(10);
  }, 30_000);
});

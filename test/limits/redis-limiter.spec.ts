import { describe, expect, it } from '@jest/globals';
import {
  CapacityExceededError,
  ConnectionPool,
  KeyLimitError,
  LeaseLostError,
  LocalLimiter,
  PoolConfigError,
  RedisLimiter,
  type Admission,
  type RedisLimiterOptions,
} from '../../lib/index.js';
import { RecordingLogger } from '../support/harness.js';
import { inspector, leasesIn, namespace, REDIS_URL, started } from '../support/redis.js';
import { VirtualClock } from '../support/virtual-clock.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ask = (key?: string, timeoutMs = 0) => ({ pool: 'api', key, timeoutMs });

/** Timers on virtual time, and a clock that can be moved past them before they fire: a freeze. */
class JumpClock extends VirtualClock {
  jump = 0;
  override now(): number {
    return super.now() + this.jump;
  }
}

function limiter(ns: string, options: Partial<RedisLimiterOptions> = {}, redis: RedisLimiterOptions['redis'] = {}) {
  return started(
    new RedisLimiter({
      logger: new RecordingLogger(),
      ...options,
      redis: { url: REDIS_URL, namespace: ns, restartProtection: false, leaseTtlMs: 1_000, ...redis },
    }),
  );
}

describe('RedisLimiter on a real Redis', () => {
  it('admits exactly up to the global limit, and again after a release', async () => {
    const ns = namespace();
    const a = await limiter(ns, { global: 3 });
    const b = await limiter(ns, { global: 3 });
    const held = [await a.admit(ask()), await b.admit(ask()), await a.admit(ask())];
    await expect(b.admit(ask())).rejects.toBeInstanceOf(CapacityExceededError);
    await expect(a.admit(ask())).rejects.toThrow(
      'pool "api": the global limit of 3 concurrent leases is reached; retry later',
    );
    held[0].release();
    await sleep(20);
    const again = await b.admit(ask());
    expect(await leasesIn(inspector(), ns)).toBe(3);
    again.release();
    held[1].release();
    held[2].release();
    await sleep(20);
    expect(await leasesIn(inspector(), ns)).toBe(0);
    expect(a.stats()).toMatchObject({
      mode: 'redis',
      limit: 3,
      held: 0,
      counters: { admitted: 2, released: 2, refusedGlobal: 1 },
    });
  });

  it('counts a refusal once per caller: a waiter tried many times and refused at its deadline is one, one served is none', async () => {
    const ns = namespace();
    const a = await limiter(ns, { global: 1, wait: true }, { pollMs: 20 });
    const held = await a.admit(ask());
    await expect(a.admit({ ...ask(), timeoutMs: 300 })).rejects.toBeInstanceOf(CapacityExceededError);
    expect(a.stats().counters).toMatchObject({ refusedGlobal: 1, refusedKey: 0 });
    const served = a.admit({ ...ask(), timeoutMs: 5_000 });
    await sleep(150); // tried again by several polls meanwhile
    held.release();
    (await served).release();
    expect(a.stats().counters).toMatchObject({ admitted: 2, refusedGlobal: 1 });
    const local = new LocalLimiter({ global: 1, wait: true });
    const lease = await local.admit(ask());
    const waited = local.admit({ ...ask(), timeoutMs: 5_000 });
    lease.release();
    (await waited).release();
    expect(local.stats().counters).toMatchObject({ admitted: 2, refusedGlobal: 0 });
  });

  it('an admission asked for right after a release on the same instance gets the slot given back', async () => {
    const ns = namespace();
    const a = await limiter(ns, { global: 1, perKey: 1 });
    let lease = await a.admit(ask('ann'));
    for (let i = 0; i < 5; i++) {
      lease.release();
      lease = await a.admit(ask('ann')); // same tick: the release must reach Redis first
    }
    expect(await leasesIn(inspector(), ns)).toBe(1);
    lease.release();
  });

  it('keeps per-key limits apart: one key full does not block another', async () => {
    const ns = namespace();
    const a = await limiter(ns, { perKey: 2 });
    await a.admit(ask('ann'));
    await a.admit(ask('ann'));
    const refused = await a.admit(ask('ann')).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(KeyLimitError);
    expect(refused).toMatchObject({ key: 'ann', limit: 2, retryAfterMs: 1_000 });
    await expect(a.admit(ask('bob'))).resolves.toBeDefined();
    expect(await inspector().zcard(`{${ns}}:k:ann`)).toBe(2);
    expect(await inspector().zcard(`{${ns}}:k:bob`)).toBe(1);
  });

  it('gives every admission a fresh lease id', async () => {
    const ns = namespace();
    const a = await limiter(ns, { global: 10 });
    for (let i = 0; i < 3; i++) (await a.admit(ask())).release();
    const held = [await a.admit(ask()), await a.admit(ask())];
    const members = await inspector().zrangebyscore(`{${ns}}:g`, '-inf', '(+inf');
    expect(new Set(members).size).toBe(2);
    expect(held).toHaveLength(2);
  });

  it('gives every admission a fencing token that grows across instances and batches, and through a Redis that lost its data', async () => {
    const ns = namespace();
    const a = await limiter(ns, { global: 100 });
    const b = await limiter(ns, { global: 100 });
    const tokens: number[] = [];
    for (let round = 0; round < 3; round++) {
      // Admissions asked for together go in one call: each still gets its own token.
      const batch = await Promise.all([a, b, a, b, a].map((l) => l.admit(ask())));
      const fences = batch.map((l) => l.fence!);
      expect(fences.every((f) => Number.isSafeInteger(f))).toBe(true);
      tokens.push(...fences.sort((x, y) => x - y));
      for (const l of batch) l.release();
    }
    expect(new Set(tokens).size).toBe(tokens.length);
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]!).toBeGreaterThan(tokens[i - 1]!);
    // The namespace's keys gone (a restart without persistence, a FLUSHALL): tokens still grow.
    const redis = inspector();
    await redis.del(`{${ns}}:meta`, `{${ns}}:g`);
    await sleep(5);
    const after = await a.admit(ask());
    expect(after.fence!).toBeGreaterThan(tokens.at(-1)!);
    after.release();
  });

  it('passes the fencing token to the pool lease, in use() through pool.currentLease', async () => {
    const ns = namespace();
    const l = await limiter(ns, { global: 5 });
    const pool = new ConnectionPool(
      { create: async () => ({}) },
      { name: 'fenced', limiter: l, logger: new RecordingLogger() },
    );
    const lease = await pool.acquire();
    const inUse = await pool.use(() => pool.currentLease.fence);
    expect(lease.fence).toEqual(expect.any(Number));
    expect(inUse!).toBeGreaterThan(lease.fence!);
    expect(() => pool.currentLease).toThrow('read pool.currentLease only inside pool.use()');
    lease.release();
    await pool.close();
  });

  it('keeps a held lease alive past its TTL with the heartbeat', async () => {
    const ns = namespace();
    const a = await limiter(ns, { global: 1 }, { leaseTtlMs: 300, heartbeatMs: 100 });
    const b = await limiter(ns, { global: 1 }, { leaseTtlMs: 300, heartbeatMs: 100 });
    const lease = await a.admit(ask());
    for (let i = 0; i < 5; i++) {
      await sleep(200);
      await expect(b.admit(ask())).rejects.toBeInstanceOf(CapacityExceededError);
    }
    expect(lease.signal.aborted).toBe(false);
  });

  it('frees the slots of a holder that stopped (no heartbeat) within one TTL', async () => {
    const ns = namespace();
    const frozen = new VirtualClock(); // its heartbeat never fires: a crashed instance
    const a = await limiter(ns, { global: 2, clock: frozen }, { leaseTtlMs: 300 });
    const b = await limiter(ns, { global: 2 }, { leaseTtlMs: 300, heartbeatMs: 100 });
    await a.admit(ask());
    await a.admit(ask());
    await expect(b.admit(ask())).rejects.toBeInstanceOf(CapacityExceededError);
    await sleep(350);
    await expect(b.admit(ask())).resolves.toBeDefined();
  });

  it('loses a lease past its local expiry though its heartbeat runs first after a freeze and Redis, in a quarantine, would keep it', async () => {
    const ns = namespace();
    const clock = new JumpClock();
    const a = await limiter(ns, { global: 1, clock }, { leaseTtlMs: 300, heartbeatMs: 100, restartProtection: true });
    // A new namespace starts a quarantine: heartbeats (virtual time moved with real time) until it ends.
    let lease: Admission | undefined;
    for (let i = 0; i < 40 && lease === undefined; i++) {
      lease = await a.admit(ask()).catch(() => undefined);
      if (lease === undefined) await Promise.all([clock.advance(100), sleep(100)]);
    }
    expect(lease).toBeDefined();
    // Frozen: no call for longer than the TTL, so Redis begins a quarantine at the next one; the
    // clock past the lease's expiry, and the heartbeat's timer first to run (the expiry's is later).
    await sleep(400);
    clock.jump = 400;
    clock.advanceNow(100);
    await sleep(100); // the heartbeat's reply
    expect(a.stats().counters.lost).toBe(1);
    expect(lease!.signal.aborted).toBe(true);
    lease!.release();
  });

  it('frees the per-key slots of a stopped holder too, and a heartbeat elsewhere removes its leases from every set', async () => {
    const ns = namespace();
    const frozen = new VirtualClock();
    const a = await limiter(ns, { perKey: 1, clock: frozen }, { leaseTtlMs: 300 });
    const b = await limiter(ns, { perKey: 1 }, { leaseTtlMs: 300, heartbeatMs: 100 });
    const long = 'k'.repeat(300); // hashed in the set's name
    await a.admit(ask('ann'));
    await a.admit(ask(long));
    await expect(b.admit(ask('ann'))).rejects.toBeInstanceOf(KeyLimitError);
    await expect(b.admit(ask(long))).rejects.toBeInstanceOf(KeyLimitError);
    await sleep(350);
    // Expired: left out of the counts at once...
    const held = [await b.admit(ask('ann')), await b.admit(ask(long))];
    // ...and removed by b's heartbeats: only b's leases remain, in the global and the key sets.
    await sleep(250);
    const redis = inspector();
    const keySets = await redis.keys(`{${ns}}:k:*`);
    expect(keySets).toHaveLength(2);
    for (const set of keySets) expect(await redis.zcard(set)).toBe(1);
    expect(await leasesIn(redis, ns)).toBe(2);
    for (const h of held) h.release();
    await sleep(50);
    expect(await redis.keys(`{${ns}}:k:*`)).toEqual([]); // empty key sets are gone: no TTL needed
    expect(await leasesIn(redis, ns)).toBe(0);
  });

  it('tells a holder whose lease lapsed: the lease signal aborts with LeaseLostError', async () => {
    const ns = namespace();
    const clock = new VirtualClock();
    const logger = new RecordingLogger();
    const a = await limiter(ns, { global: 1, clock, logger }, { leaseTtlMs: 200, heartbeatMs: 50 });
    const lease: Admission = await a.admit(ask());
    await sleep(250); // the TTL lapses in Redis: the heartbeat was late
    clock.advance(50);
    for (let i = 0; i < 50 && !lease.signal.aborted; i++) await sleep(10);
    expect(lease.signal.reason).toBeInstanceOf(LeaseLostError);
    expect(a.stats().counters.lost).toBe(1);
    expect(logger.warnings[0]).toMatch(/admission lease .* was lost/);
    lease.release();
    expect(a.stats().held).toBe(0);
  });

  it('survives a flushed script cache (NOSCRIPT)', async () => {
    const ns = namespace();
    const a = await limiter(ns, { global: 5 });
    (await a.admit(ask())).release();
    await inspector().script('FLUSH');
    await expect(a.admit(ask())).resolves.toBeDefined();
  });

  it('after a restart (new run id), refuses admissions for one TTL while holders re-register', async () => {
    const ns = namespace();
    const redis = inspector();
    const a = await limiter(ns, { global: 2 }, { leaseTtlMs: 400, heartbeatMs: 100, restartProtection: true });
    await sleep(450); // a namespace never used starts with a quarantine too
    const held = await a.admit(ask());
    // What a restart without persistence looks like: another run id, and the leases gone.
    await redis.hset(`{${ns}}:meta`, 'run_id', 'a-previous-run');
    await redis.del(`{${ns}}:g`);
    const refused = await a.admit(ask()).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(CapacityExceededError);
    expect(refused).toMatchObject({ reason: 'quarantine' });
    expect(a.stats().mode).toBe('quarantine');
    await sleep(150); // a heartbeat re-registers the lease still held
    expect(await leasesIn(redis, ns)).toBe(1);
    await sleep(350);
    await expect(a.admit(ask())).resolves.toBeDefined();
    await expect(a.admit(ask())).rejects.toMatchObject({ reason: 'limit' });
    expect(held.signal.aborted).toBe(false);
  });

  it('lets a refused caller wait for a slot, woken by a release on another instance', async () => {
    const ns = namespace();
    const a = await limiter(ns, { global: 1, wait: true }, { pollMs: 5_000 });
    const b = await limiter(ns, { global: 1, wait: true }, { pollMs: 5_000 });
    const first = await a.admit(ask());
    const begun = Date.now();
    const waiting = b.admit(ask(undefined, 2_000));
    await sleep(100);
    first.release();
    await expect(waiting).resolves.toBeDefined();
    expect(Date.now() - begun).toBeLessThan(1_000); // pub/sub, not the 5 s poll
    await expect(b.admit(ask(undefined, 50))).rejects.toBeInstanceOf(CapacityExceededError);
  });

  it('gives back, before its close resolves, a slot Redis granted a waiter as it closed', async () => {
    // Waiters on b are served when a releases; b closes in the middle of serving them. Before,
    // b's waiting went on asking Redis after the close had sent its releases, and the slot granted
    // then stayed in Redis until its TTL.
    for (let round = 0; round < 5; round++) {
      const ns = namespace();
      const a = await limiter(ns, { global: 2, wait: true }, { pollMs: 5_000 });
      const b = await limiter(ns, { global: 2, wait: true }, { pollMs: 5_000 });
      const held = [await a.admit(ask()), await a.admit(ask())];
      const waiting = Array.from({ length: 6 }, () =>
        b.admit(ask(undefined, 5_000)).catch((err: unknown) => err as Error),
      );
      await sleep(50);
      for (const h of held) h.release();
      await sleep(round); // the pub/sub wake-up lands before, during or after the close below
      await b.close();
      for (const outcome of await Promise.all(waiting)) if (!(outcome instanceof Error)) outcome.release();
      await a.close();
      expect(await leasesIn(inspector(), ns)).toBe(0);
    }
  });

  it('counts a call without a key against the global limit only', async () => {
    const a = await limiter(namespace(), { global: 3, perKey: 1 });
    const held = [await a.admit(ask('ann')), await a.admit(ask()), await a.admit(ask())];
    await expect(a.admit(ask())).rejects.toBeInstanceOf(CapacityExceededError);
    expect(a.stats()).toMatchObject({ mode: 'redis', used: 3, held: 3 });
    for (const admission of held) admission.release();
  });

  it('takes a null key (no key on purpose) against the global limit only, even when keyless is refuse', async () => {
    const a = await limiter(namespace(), { global: 2, perKey: 1, keyless: 'refuse' });
    const held = [await a.admit({ ...ask(), key: null }), await a.admit({ ...ask(), key: null })];
    await expect(a.admit({ ...ask(), key: null })).rejects.toBeInstanceOf(CapacityExceededError);
    expect(a.stats()).toMatchObject({ mode: 'redis', used: 2, held: 2 });
    for (const admission of held) admission.release();
  });

  it('rejects bad input clearly', async () => {
    const ns = namespace();
    const a = await limiter(ns, { perKey: 2, keyless: 'refuse' });
    await expect(a.admit(ask())).rejects.toThrow(
      'option "acquire.key" is required: the limiter "limits" allows 2 leases per key and refuses calls without one',
    );
    await expect(a.admit({ pool: 'api', key: 7 as unknown as string, timeoutMs: 0 })).rejects.toBeInstanceOf(
      PoolConfigError,
    );
    const make = (o: Partial<RedisLimiterOptions>) => () => new RedisLimiter({ redis: { url: REDIS_URL }, ...o });
    expect(make({ global: 0 })).toThrow('option "limits.global" must be a whole number of 1 or more, got 0');
    expect(make({ perKey: -1 })).toThrow(
      'option "limits.perKey" must be a whole number of 1 or more, or a function (key) => limit, got -1',
    );
    expect(make({ redis: { url: 'localhost:6379' } })).toThrow(
      'option "limits.redis.url" must be a redis:// or rediss:// URL',
    );
    expect(make({ redis: {} })).toThrow(
      'option "limits.redis" needs exactly one of url, client, options or cluster, got none',
    );
    expect(make({ redis: { url: REDIS_URL, leaseTtlMs: 100, heartbeatMs: 100 } })).toThrow('must be below leaseTtlMs');
  });

  it('starts against an unreachable Redis without hanging, then serves under local limits', async () => {
    const a = await limiter(
      namespace(),
      { global: 4, perKey: 2 },
      { url: 'redis://127.0.0.1:1', fallbackAfterMs: 200, commandTimeoutMs: 200, instances: 2 },
    );
    expect(a.stats().mode).toBe('unreachable');
    await expect(a.admit(ask('ann'))).rejects.toMatchObject({ reason: 'unavailable' });
    await sleep(220);
    expect(a.stats().mode).toBe('fallback');
    await a.admit(ask('ann')); // this instance's share: 4 / 2 = 2 globally, 2 / 2 = 1 per key
    await expect(a.admit(ask('ann'))).rejects.toBeInstanceOf(KeyLimitError);
    await a.admit(ask('bob'));
    await expect(a.admit(ask('cy'))).rejects.toBeInstanceOf(CapacityExceededError);
  });

  it('lets the global slot of a lease held past maxHoldMs lapse at its TTL, so other instances get it back', async () => {
    const ns = namespace();
    const a = await limiter(ns, { global: 1 });
    const b = await limiter(ns, { global: 1 });
    const redis = inspector();
    for (let i = 0; i < 100 && a.stats().mode !== 'redis'; i++) await sleep(20);
    const pool = new ConnectionPool(
      { create: async () => ({}) },
      { name: 'api', limiter: a, maxHoldMs: 200, reapIntervalMs: 50, logger: new RecordingLogger() },
    );
    const stuck = await pool.acquire(); // and never released in time
    expect(await leasesIn(redis, ns)).toBe(1);
    await sleep(300);
    expect(stuck.signal.reason).toMatchObject({ code: 'LEASE_HELD_TOO_LONG' });
    // No longer refreshed: gone from Redis within one TTL (1 s), though the caller still holds it.
    for (let i = 0; i < 100 && (await leasesIn(redis, ns)) > 0; i++) await sleep(20);
    expect(await leasesIn(redis, ns)).toBe(0);
    expect(a.stats().counters.lost).toBe(1);
    const other = await b.admit(ask()); // the other instance gets the slot
    other.release();
    stuck.release();
    await pool.close();
  }, 10_000);
});

// The Redis limiter under the faults of the hostile review, each on a redis-server of the test's own:
// a holder stops counting on a lease once its last confirmation is a TTL old, Redis treats a long
// silence like a restart, timed-out admissions leave no phantom, close() aborts held leases.
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import {
  CapacityExceededError,
  ConnectionPool,
  LeaseLostError,
  PoolConfigError,
  RedisLimiter,
  systemClock,
  type Admission,
} from '../../lib/index.js';
import { RecordingLogger } from '../support/harness.js';
import { inspector, leasesIn, namespace, onCleanup, started } from '../support/redis.js';
import { RedisServer } from '../support/redis-server.js';
import { sleep, until } from '../support/wait.js';

const ask = { pool: 'api', timeoutMs: 0 };

/** When `signal` aborts, on performance.now(). */
function abortedAt(signal: AbortSignal): { at?: number } {
  const seen: { at?: number } = {};
  signal.addEventListener('abort', () => (seen.at = performance.now()), { once: true });
  return seen;
}

/** One redis-server of this file's own, for the tests that need no server of their own. */
let server: RedisServer;
beforeAll(async () => {
  server = await RedisServer.start(['--enable-debug-command', 'yes']);
});
afterAll(async () => {
  server.resume();
  await server.stop();
});

describe('RedisLimiter through stalls', () => {
  /** Stalls the server for `ms` in one of three ways; resolves when it answers again. */
  const stalls: Record<string, (ms: number) => Promise<void>> = {
    'SIGSTOP of the server': async (ms) => {
      server.pause();
      await sleep(ms);
      server.resume();
    },
    'CLIENT PAUSE': async (ms) => {
      await inspector(server.url).call('CLIENT', 'PAUSE', String(ms), 'ALL');
      await sleep(ms);
    },
    'DEBUG SLEEP': async (ms) => {
      const sleeper = inspector(server.url);
      await sleeper.ping();
      void sleeper.call('DEBUG', 'SLEEP', String(ms / 1000)).catch(() => {});
      await sleep(ms);
    },
  };

  const limiter = (ns: string, redis: Record<string, unknown> = {}, global = 1) =>
    started(
      new RedisLimiter({
        global,
        logger: new RecordingLogger(),
        redis: {
          url: server.url,
          namespace: ns,
          leaseTtlMs: 600,
          heartbeatMs: 200,
          commandTimeoutMs: 100,
          fallback: 'fail-closed',
          ...redis,
        },
      }),
    );

  it('a holder stops counting on its lease once its last confirmation is a TTL old, while Redis is frozen', async () => {
    const ns = namespace(server.url);
    const a = await limiter(ns);
    await until(() => a.stats().mode === 'redis');
    const sentBefore = performance.now();
    const lease = await a.admit(ask);
    const lost = abortedAt(lease.signal);
    // The last heartbeat that could confirm the lease was sent at the latest now.
    await sleep(5);
    const lastChance = performance.now();
    server.pause();
    try {
      await until(() => lost.at !== undefined, 2_000);
    } finally {
      server.resume();
    }
    // Redis keeps the lease for a TTL from the last call that confirmed it, which was sent after sentBefore.
    expect(lost.at! - sentBefore).toBeGreaterThan(0);
    expect(lost.at! - lastChance).toBeLessThan(600);
    expect(lease.signal.reason).toBeInstanceOf(LeaseLostError);
    expect(a.stats().counters.lost).toBe(1);
    lease.release();
  });

  it.each(Object.keys(stalls))(
    'after a stall longer than the TTL (%s), no instance is admitted while another may still run on its lease',
    async (kind) => {
      const ns = namespace(server.url);
      const [a, b] = [await limiter(ns), await limiter(ns)];
      await until(() => a.stats().mode === 'redis' && b.stats().mode === 'redis');
      const lease = await a.admit(ask);
      const lost = abortedAt(lease.signal);
      await stalls[kind]!(1_000);
      // B asks as soon as Redis answers again, and keeps asking.
      let admitted: Admission | undefined;
      let admittedAt = 0;
      const end = performance.now() + 3_000;
      while (admitted === undefined && performance.now() < end) {
        try {
          admitted = await b.admit(ask);
          admittedAt = performance.now();
        } catch {
          await sleep(10);
        }
      }
      expect(admitted).toBeDefined();
      expect(lost.at).toBeDefined();
      expect(admittedAt).toBeGreaterThan(lost.at!);
      admitted!.release();
      lease.release();
    },
  );

  it('Redis treats a silence longer than a TTL like a restart: admissions pause for a TTL while holders re-register', async () => {
    const ns = namespace(server.url);
    const a = await limiter(ns, {}, 5);
    await until(() => a.stats().mode === 'redis');
    (await a.admit(ask)).release();
    server.pause();
    await sleep(1_000);
    server.resume();
    await until(() => a.stats().mode !== 'fail-closed' && a.stats().mode !== 'unreachable', 3_000);
    await expect(a.admit(ask)).rejects.toMatchObject({ code: 'CAPACITY_EXCEEDED', reason: 'quarantine' });
    await until(() => a.stats().mode === 'redis', 3_000);
    (await a.admit(ask)).release();
  });

  it.each([1, 30])(
    '%i admission(s) timed out in one call during a stall leave no phantom lease once Redis answers again',
    async (n) => {
      const ns = namespace(server.url);
      const a = await limiter(
        ns,
        { leaseTtlMs: 2_000, heartbeatMs: 600, commandTimeoutMs: 150, fallbackAfterMs: 10_000 },
        n,
      );
      await until(() => a.stats().mode === 'redis', 3_000);
      server.pause();
      const refused = await Promise.allSettled(
        Array.from({ length: n }, (_, i) => a.admit({ ...ask, key: `k${i % 3}` })),
      );
      expect(refused.map((r) => r.status === 'rejected' && (r.reason as { reason?: string }).reason)).toEqual(
        Array(n).fill('unavailable'),
      );
      await sleep(300);
      server.resume();
      const redis = inspector(server.url);
      await until(() => a.stats().mode === 'redis', 3_000);
      await sleep(100);
      expect(await leasesIn(redis, ns)).toBe(0);
      expect(await redis.keys(`{${ns}}:k:*`)).toEqual([]);
      const all = await Promise.all(Array.from({ length: n }, () => a.admit(ask))); // a phantom would refuse one of these for a TTL
      for (const lease of all) lease.release();
    },
    15_000,
  );

  it('admissions asked for together share calls, and still keep the global and per-key limits exactly', async () => {
    const ns = namespace(server.url);
    const make = () =>
      started(
        new RedisLimiter({
          global: 25,
          perKey: 4,
          logger: new RecordingLogger(),
          redis: { url: server.url, namespace: ns, restartProtection: false },
        }),
      );
    const [a, b] = [await make(), await make()];
    const redis = inspector(server.url);
    const calls = async () => Number(/cmdstat_evalsha:calls=(\d+)/.exec(await redis.info('commandstats'))?.[1] ?? 0);
    const before = await calls();
    const asks = Array.from({ length: 80 }, (_, i) => ({ limiter: i % 2 === 0 ? a : b, key: `user-${i % 10}` }));
    const outcomes = await Promise.allSettled(asks.map(({ limiter, key }) => limiter.admit({ ...ask, key })));
    const admittedCalls = (await calls()) - before;
    const admitted = asks.filter((_, i) => outcomes[i]!.status === 'fulfilled');
    expect(admitted).toHaveLength(25);
    const perKey = new Map<string, number>();
    for (const { key } of admitted) perKey.set(key, (perKey.get(key) ?? 0) + 1);
    expect(Math.max(...perKey.values())).toBeLessThanOrEqual(4);
    // Each limiter sent its first admission alone and the rest together: far fewer calls than admissions.
    expect(admittedCalls).toBeLessThan(10);
    const refusedCodes = new Set(
      outcomes.flatMap((o) => (o.status === 'rejected' ? [(o.reason as { code: string }).code] : [])),
    );
    expect([...refusedCodes].filter((c) => c !== 'CAPACITY_EXCEEDED' && c !== 'KEY_LIMIT')).toEqual([]);
    expect(await leasesIn(redis, ns)).toBe(25);
    for (const o of outcomes) if (o.status === 'fulfilled') o.value.release();
    await until(async () => (await leasesIn(redis, ns)) === 0);
  });

  it('a heartbeat of many leases is split into calls of at most 200, and keeps every lease', async () => {
    const ns = namespace(server.url);
    const a = await limiter(ns, { leaseTtlMs: 600, heartbeatMs: 150 }, 1_000);
    await until(() => a.stats().mode === 'redis');
    const held = await Promise.all(Array.from({ length: 450 }, (_, i) => a.admit({ ...ask, key: `user-${i % 7}` })));
    const redis = inspector(server.url);
    await redis.config('SET', 'slowlog-log-slower-than', '0');
    await redis.config('SET', 'slowlog-max-len', '10000');
    await redis.slowlog('RESET');
    await sleep(1_000); // past the TTL: only the heartbeats keep the leases
    const log = (await redis.slowlog('GET', 10_000)) as [number, number, number, string[]][];
    await redis.config('SET', 'slowlog-log-slower-than', '10000');
    const beats = log.filter((e) => String(e[3][0]).toLowerCase() === 'evalsha');
    expect(beats.length).toBeGreaterThanOrEqual(3 * 3); // three calls a beat, several beats
    // A call's arguments: sha, numkeys, 3 keys + one per lease, 6 arguments + 2 per lease (SLOWLOG cuts the list at 32).
    for (const e of beats) expect(Number(e[3][2]) - 3).toBeLessThanOrEqual(200);
    expect(held.every((h) => !h.signal.aborted)).toBe(true);
    expect(await leasesIn(redis, ns)).toBe(450);
    for (const h of held) h.release();
    await until(async () => (await leasesIn(redis, ns)) === 0);
  });

  it('close() aborts the signal of every lease still held before giving the slots back', async () => {
    const ns = namespace(server.url);
    const a = await limiter(ns, {}, 2);
    await until(() => a.stats().mode === 'redis');
    const [x, y] = [await a.admit(ask), await a.admit(ask)];
    await a.close();
    for (const lease of [x, y]) {
      expect(lease.signal.aborted).toBe(true);
      expect((lease.signal.reason as Error).message).toMatch(/the limiter closed/);
    }
    expect(await leasesIn(inspector(server.url), ns)).toBe(0);
  });

  it('an admission answered after its TTL had passed here is given back and asked for again, never handed out lapsed', async () => {
    const ns = namespace(server.url);
    // A clock that jumps, as performance.now() does across a blocked event loop.
    let skew = 0;
    let jumpEveryRead = false;
    const clock = { ...systemClock, now: () => performance.now() + (jumpEveryRead ? (skew += 700) : skew) };
    const redis = { url: server.url, namespace: ns, leaseTtlMs: 600, heartbeatMs: 200, commandTimeoutMs: 100 };
    const a = await started(new RedisLimiter({ global: 2, clock, logger: new RecordingLogger(), redis }));
    await until(() => a.stats().mode === 'redis');

    const pending = a.admit(ask); // sent now, answered after the jump
    skew += 700;
    const lease = await pending;
    expect(lease.signal.aborted).toBe(false);
    await until(async () => (await leasesIn(inspector(server.url), ns)) === 1); // the late one was given back
    expect(a.stats().counters).toMatchObject({ admitted: 1, lost: 0 });

    // Late twice in a row: refused, saying why, and nothing is left held in Redis.
    jumpEveryRead = true;
    const refused = (await a.admit(ask).catch((e: unknown) => e)) as CapacityExceededError;
    jumpEveryRead = false;
    expect(refused).toBeInstanceOf(CapacityExceededError);
    expect(refused.reason).toBe('unavailable');
    expect(refused.message).toMatch(/after the lease TTL had passed here.*blocked for longer than leaseTtlMs/);
    await until(async () => (await leasesIn(inspector(server.url), ns)) === 1);
    lease.release();
    await until(async () => (await leasesIn(inspector(server.url), ns)) === 0);
  });

  it('a lease read first thing after a freeze is lost at once, before any timer of the limiter ran', async () => {
    const ns = namespace(server.url);
    let skew = 0; // performance.now() across a SIGSTOP: time passed, and no timer had its turn yet
    const clock = { ...systemClock, now: () => performance.now() + skew };
    const redis = { url: server.url, namespace: ns, leaseTtlMs: 600, heartbeatMs: 200 };
    const logger = new RecordingLogger();
    const a = await started(new RedisLimiter({ global: 2, clock, logger, redis }));
    await until(() => a.stats().mode === 'redis');
    const lease = await a.admit(ask);
    const pool = new ConnectionPool(
      { create: async () => ({}) },
      { name: 'frozen', limiter: a, logger: new RecordingLogger() },
    );
    const pooled = await pool.acquire();
    expect([lease.signal.aborted, pooled.signal.aborted]).toEqual([false, false]);
    skew += 1_200; // two TTLs
    expect(lease.signal.aborted).toBe(true); // synchronously: the read itself checked the local clock
    expect(pooled.signal.aborted).toBe(true);
    expect((lease.signal.reason as Error).message).toMatch(/no heartbeat confirmed it within its TTL/);
    expect(a.stats().counters.lost).toBe(2);
    lease.release();
    pooled.release();
    await pool.close();
  });

  it('a holder whose event loop was blocked past the TTL sees its lease lost before its own timers run', async () => {
    const ns = namespace(server.url);
    const a = await limiter(ns, { leaseTtlMs: 300, heartbeatMs: 100 });
    await until(() => a.stats().mode === 'redis');
    const lease = await a.admit(ask);
    const seenByWork = new Promise<boolean>((resolve) =>
      setTimeout(() => {
        resolve(lease.signal.aborted);
        lease.release();
      }, 650),
    );
    const blockedUntil = Date.now() + 700;
    while (Date.now() < blockedUntil) {
      // a blocked event loop: no timer, no socket
    }
    expect(await seenByWork).toBe(true);
    expect(a.stats().counters.lost).toBe(1);
  });
});

describe('RedisLimiter settings', () => {
  it.each([
    [{ leaseTtlMs: 1000.25 }, /leaseTtlMs" must be a whole number of ms from 10 to 86400000/],
    [{ leaseTtlMs: 1e16 }, /leaseTtlMs" must be a whole number of ms from 10 to 86400000/],
  ])('refuses %j with a PoolConfigError', (redis, message) => {
    const make = () => new RedisLimiter({ global: 2, redis: { url: 'redis://127.0.0.1:1', ...redis } });
    expect(make).toThrow(PoolConfigError);
    expect(make).toThrow(message);
  });

  it('refuses a per-key limit above the global one', () => {
    expect(() => new RedisLimiter({ global: 2, perKey: 3, redis: { url: 'redis://127.0.0.1:1' } })).toThrow(
      /option "limits.perKey" \(3\) must not exceed limits.global \(2\)/,
    );
  });
});

describe('RedisLimiter keys, namespaces and first contact', () => {
  const make = (ns: string | undefined, global: number, extra: Record<string, unknown> = {}, name?: string) =>
    new RedisLimiter({
      global,
      ...(name === undefined ? {} : { name }),
      logger: new RecordingLogger(),
      redis: {
        url: server.url,
        ...(ns === undefined ? {} : { namespace: ns }),
        leaseTtlMs: 600,
        heartbeatMs: 200,
        commandTimeoutMs: 100,
        ...extra,
      },
    });

  it('a deleted global set (DEL, an eviction) is noticed like a restart: no admission past the limit', async () => {
    const ns = namespace(server.url);
    const [a, b] = [await started(make(ns, 2)), await started(make(ns, 2))];
    await until(() => a.stats().mode === 'redis' && b.stats().mode === 'redis');
    const held = [await a.admit(ask), await a.admit(ask)];
    await inspector(server.url).del(`{${ns}}:g`);
    await expect(b.admit(ask)).rejects.toMatchObject({ code: 'CAPACITY_EXCEEDED', reason: 'quarantine' });
    await sleep(700); // a's heartbeats re-register what it holds during the quarantine
    await expect(b.admit(ask)).rejects.toMatchObject({ code: 'CAPACITY_EXCEEDED', reason: 'limit' });
    expect(held.some((l) => l.signal.aborted)).toBe(false);
    for (const l of held) l.release();
  });

  it('long keys are hashed in Redis key names, so a huge key is never sent to Redis', async () => {
    const ns = namespace(server.url);
    const limited = await started(
      new RedisLimiter({
        global: 5,
        perKey: 2,
        logger: new RecordingLogger(),
        redis: { url: server.url, namespace: `${ns}k`, leaseTtlMs: 600 },
      }),
    );
    await until(() => limited.stats().mode === 'redis');
    const huge = 'k'.repeat(1 << 20);
    const lease = await limited.admit({ ...ask, key: huge });
    const names = await inspector(server.url).keys(`{${ns}k}:k:*`);
    expect(names).toHaveLength(1);
    expect(names[0]!.length).toBeLessThan(100);
    await expect(limited.admit({ ...ask, key: huge })).resolves.toBeDefined(); // the same key, the same set
    await expect(limited.admit({ ...ask, key: huge })).rejects.toMatchObject({ code: 'KEY_LIMIT' });
    lease.release();
  });

  it('limiters without a namespace get one of their own name; two with different limits on one namespace are refused', async () => {
    const [x, y] = [make(undefined, 2, {}, 'orders'), make(undefined, 2, {}, 'billing')];
    await started(x);
    await started(y);
    await until(() => x.stats().mode === 'redis' && y.stats().mode === 'redis');
    const held = [await x.admit(ask), await x.admit(ask)];
    await expect(y.admit(ask)).resolves.toBeDefined(); // its own budget, not orders'
    for (const l of held) l.release();
    const ns = namespace(server.url);
    await started(make(ns, 2));
    await expect(make(ns, 4).start()).rejects.toThrow(
      /already used on this Redis by limiter "limits" with other limits/,
    );
    await expect(started(make(ns, 2))).resolves.toBeDefined(); // the same limits: sharing on purpose
  });

  it('instances that never reached Redis do not each take the whole limit; with instances set they take a share', async () => {
    const down = await RedisServer.start();
    await down.stop();
    const at = (extra: Record<string, unknown>) =>
      started(
        new RedisLimiter({
          global: 4,
          logger: new RecordingLogger(),
          redis: {
            url: down.url,
            namespace: 'never',
            leaseTtlMs: 600,
            commandTimeoutMs: 100,
            fallbackAfterMs: 0,
            ...extra,
          },
        }),
      );
    const blind = [await at({}), await at({}), await at({})];
    expect(blind.map((l) => l.stats().mode)).toEqual(['fail-closed', 'fail-closed', 'fail-closed']);
    const admitted = await Promise.allSettled(blind.flatMap((l) => [l.admit(ask), l.admit(ask)]));
    expect(admitted.filter((r) => r.status === 'fulfilled')).toHaveLength(0);
    for (const l of blind) await l.close();
    const told = [await at({ instances: 3 }), await at({ instances: 3 }), await at({ instances: 3 })];
    const shares = await Promise.allSettled(told.flatMap((l) => [l.admit(ask), l.admit(ask)]));
    expect(shares.filter((r) => r.status === 'fulfilled')).toHaveLength(3); // floor(4 / 3) each
    for (const r of shares) if (r.status === 'fulfilled') r.value.release();
  });
});

describe('RedisLimiter where users run Redis', () => {
  const servers: RedisServer[] = [];
  afterAll(async () => {
    for (const s of servers) await s.stop();
  });
  const server = async (args: string[] = []) => {
    const s = await RedisServer.start(args);
    servers.push(s);
    return s;
  };
  const make = (url: string, extra: Record<string, unknown> = {}) =>
    started(
      new RedisLimiter({
        global: 2,
        logger: new RecordingLogger(),
        redis: { url, namespace: 'deploy', leaseTtlMs: 600, commandTimeoutMs: 300, ...extra },
      }),
    );

  it('works for a hardened ACL user that may not run @dangerous commands (no INFO), without ioredis warning on the console', async () => {
    const warn = jest.spyOn(console, 'warn');
    onCleanup(async () => warn.mockRestore());
    const s = await server();
    const admin = inspector(s.url);
    await admin.call('ACL', 'SETUSER', 'app', 'on', '>app-secret', '~*', '&*', '+@all', '-@dangerous');
    const url = `redis://app:app-secret@127.0.0.1:${s.port}`;
    const a = await make(url);
    await until(() => a.stats().mode === 'redis', 3_000);
    const held = [await a.admit(ask), await a.admit(ask)];
    await expect(a.admit(ask)).rejects.toMatchObject({ code: 'CAPACITY_EXCEEDED', reason: 'limit' });
    for (const l of held) l.release();
    // A deleted set is still noticed without INFO.
    await admin.del('{deploy}:g');
    await expect(a.admit(ask)).rejects.toMatchObject({ reason: 'quarantine' });
    expect(warn).not.toHaveBeenCalled(); // ioredis's ready check ("Skipping the ready check because INFO command fails")
  });

  it('says so when the URL points at a read-only replica', async () => {
    const primary = await server();
    const replica = await server(['--replicaof', '127.0.0.1', String(primary.port)]);
    const a = await make(replica.url, { fallbackAfterMs: 0, fallback: 'fail-closed' });
    const refused = await a.admit(ask).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'CAPACITY_EXCEEDED', reason: 'unavailable' });
    expect((refused as Error).message).toMatch(/read-only replica.*point it at the primary/);
    expect(a.stats().lastError).toMatch(/READONLY/);
  });

  it('says so when Redis refuses the password, keeping the cause', async () => {
    const s = await server(['--requirepass', 'right']);
    const a = await make(`redis://:wrong@127.0.0.1:${s.port}`, { fallbackAfterMs: 0, fallback: 'fail-closed' });
    await until(() => a.stats().lastError !== undefined, 3_000);
    await sleep(200); // later generic failures must not hide it
    expect(a.stats().lastError).toMatch(/refused the credentials .*(WRONGPASS|NOAUTH|invalid)/);
    const refused = (await a.admit(ask).catch((e: unknown) => e)) as Error;
    expect(((refused.cause as Error).cause as Error).message).toMatch(/WRONGPASS|NOAUTH|invalid/);
  });
});

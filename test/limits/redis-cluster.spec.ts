// The Redis limiter on a Redis Cluster of the test's own (three masters, each with a replica):
// the limits hold, a stopped master fails admissions fast, and a failover brings the limiter back.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Cluster } from 'ioredis';
import { PoolConfigError, RedisLimiter, type Admission, type RedisLimiterOptions } from '../../lib/index.js';
import { RecordingLogger } from '../support/harness.js';
import { leasesIn, started } from '../support/redis.js';
import { RedisCluster } from '../support/redis-server.js';
import { sleep, until } from '../support/wait.js';

const ask = (key?: string) => ({ pool: 'api', key, timeoutMs: 0 });
let nsCount = 0;

describe('RedisLimiter on a Redis Cluster', () => {
  let cluster: RedisCluster;
  let inspector: Cluster;
  beforeAll(async () => {
    cluster = await RedisCluster.start();
    inspector = new Cluster(cluster.nodes, { redisOptions: { maxRetriesPerRequest: 1 } });
    inspector.on('error', () => {});
  }, 60_000);
  afterAll(async () => {
    inspector.disconnect();
    await cluster.stop();
  });

  const limiter = (
    ns: string,
    redis: Partial<RedisLimiterOptions['redis']> = {},
    limits: Partial<RedisLimiterOptions> = {},
  ) =>
    started(
      new RedisLimiter({
        global: 5,
        perKey: 2,
        logger: new RecordingLogger(),
        ...limits,
        redis: {
          cluster: { nodes: cluster.nodes },
          namespace: ns,
          leaseTtlMs: 2_000,
          restartProtection: false,
          commandTimeoutMs: 300,
          ...redis,
        },
      }),
    );

  it('keeps the global and per-key limits across instances, with every key on one slot', async () => {
    const ns = `cl-${nsCount++}`;
    const a = await limiter(ns);
    // A Cluster client given as `client` is duplicated the same way.
    const b = await limiter(ns, { cluster: undefined, client: inspector });
    await until(() => a.stats().mode === 'redis' && b.stats().mode === 'redis');
    const keys = Array.from({ length: 12 }, (_, i) => `user-${i < 4 ? 0 : i % 3}`);
    const outcomes = await Promise.allSettled(keys.map((key, i) => (i % 2 ? a : b).admit(ask(key))));
    const held = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
    expect(held).toHaveLength(5);
    const perKey = new Map<string, number>();
    outcomes.forEach((o, i) => o.status === 'fulfilled' && perKey.set(keys[i]!, (perKey.get(keys[i]!) ?? 0) + 1));
    expect(Math.max(...perKey.values())).toBe(2);
    const codes = new Set(
      outcomes.flatMap((o) => (o.status === 'rejected' ? [(o.reason as { code: string }).code] : [])),
    );
    expect([...codes].filter((c) => c !== 'CAPACITY_EXCEEDED' && c !== 'KEY_LIMIT')).toEqual([]);
    expect(await leasesIn(inspector, ns)).toBe(5);
    for (const h of held) h.release();
    await until(async () => (await leasesIn(inspector, ns)) === 0);
    await a.admit(ask('user-9'));
    await b.admit(ask('user-9'));
    await expect(a.admit(ask('user-9'))).rejects.toMatchObject({ code: 'KEY_LIMIT' });
  });

  it('a plain URL to one node says to pass the cluster', async () => {
    const node = cluster.servers[0]!;
    let ns = `cl-url-${nsCount++}`;
    while ((await cluster.masterOf(`{${ns}}:g`)) === node) ns = `cl-url-${nsCount++}`; // a slot another node serves: MOVED
    const a = await limiter(ns, { cluster: undefined, url: node.url, fallback: 'fail-closed', fallbackAfterMs: 0 });
    const err = await a.admit(ask('u')).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'CAPACITY_EXCEEDED', reason: 'unavailable' });
    expect(String(a.stats().lastError)).toMatch(/Redis Cluster node .*pass the cluster as redis\.cluster/);
  });

  it('a cluster whose startup nodes do not answer says so', async () => {
    const a = await limiter(`cl-${nsCount++}`, {
      cluster: { nodes: [{ host: '127.0.0.1', port: 1 }] },
      fallback: 'fail-closed',
      fallbackAfterMs: 0,
    });
    await expect(a.admit(ask('u'))).rejects.toMatchObject({ code: 'CAPACITY_EXCEEDED', reason: 'unavailable' });
    expect(String(a.stats().lastError)).toMatch(
      /no startup node of the Redis Cluster answered .*check redis\.cluster\.nodes/,
    );
  });

  it('refuses a cluster without nodes, and two ways of connecting at once', () => {
    expect(() => new RedisLimiter({ redis: { cluster: { nodes: [] } } })).toThrow(PoolConfigError);
    expect(
      () => new RedisLimiter({ redis: { cluster: { nodes: cluster.nodes }, url: 'redis://127.0.0.1:6379' } }),
    ).toThrow(/needs exactly one of url, client, options or cluster, got url and cluster/);
  });

  it('a stopped master fails admissions within the command timeout; after the failover the limits hold again', async () => {
    const ns = `cl-${nsCount++}`;
    const a = await limiter(
      ns,
      { fallback: 'fail-closed', fallbackAfterMs: 0, restartProtection: true, leaseTtlMs: 1_500 },
      { global: 3, perKey: undefined },
    );
    const b = await limiter(
      ns,
      { fallback: 'fail-closed', fallbackAfterMs: 0, restartProtection: true, leaseTtlMs: 1_500 },
      { global: 3, perKey: undefined },
    );
    await until(() => a.stats().mode === 'redis' && b.stats().mode === 'redis', 5_000);
    const held: Admission[] = [await a.admit(ask()), await b.admit(ask())];
    const master = await cluster.masterOf(`{${ns}}:g`);
    master.pause();
    try {
      const t0 = performance.now();
      const err = await a.admit(ask()).catch((e: unknown) => e);
      const took = performance.now() - t0;
      expect(err).toMatchObject({ code: 'CAPACITY_EXCEEDED', reason: 'unavailable' });
      expect(took).toBeLessThan(300 * 3); // the command timeout, not the Cluster's own retries
      // The replica takes over (node timeout 1 s); both limiters come back by themselves.
      await until(async () => (await cluster.masterOf(`{${ns}}:g`)) !== master, 20_000);
      // Admit until the global limit refuses with 3 live leases. The leases held through the
      // failover were kept (re-registered) or lost (their signal aborted); a lost one may still
      // count in Redis until its TTL lapses, so a refusal may come early for a moment, but never
      // are more than 3 live at once.
      const admitted: Admission[] = [];
      const live = () => [...held, ...admitted].filter((h) => !h.signal.aborted).length;
      let settled = false;
      let mostLive = 0;
      const end = performance.now() + 15_000;
      while (!settled && performance.now() < end) {
        try {
          admitted.push(await (admitted.length % 2 ? a : b).admit(ask()));
        } catch (err) {
          settled = (err as { reason?: string }).reason === 'limit' && live() === 3;
          if (!settled) await sleep(50); // unavailable, the quarantine after the silence, or a lost lease not lapsed yet
        }
        mostLive = Math.max(mostLive, live());
      }
      expect(mostLive).toBeLessThanOrEqual(3);
      expect(settled).toBe(true);
      for (const h of [...held, ...admitted]) h.release();
    } finally {
      master.resume();
    }
  }, 60_000);
});

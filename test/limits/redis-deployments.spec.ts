// The Redis limiter where users run Redis behind Sentinel or TLS, each on servers of the test's own:
// a Sentinel failover to the replica keeps the limits and the limiter follows the new master;
// a TLS server is reached with the CA given, and a certificate it cannot verify is reported as such.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { RedisLimiter, type Admission } from '../../lib/index.js';
import { RecordingLogger } from '../support/harness.js';
import { leasesIn, started } from '../support/redis.js';
import { certificates, RedisSentinel, RedisServer, type Certificates } from '../support/redis-server.js';
import { sleep, until } from '../support/wait.js';

const ask = { pool: 'api', timeoutMs: 0 };

describe('RedisLimiter behind Redis Sentinel', () => {
  let master: RedisServer;
  let replica: RedisServer;
  let sentinel: RedisSentinel;

  beforeAll(async () => {
    master = await RedisServer.start();
    replica = await RedisServer.start(['--replicaof', '127.0.0.1', String(master.port)]);
    sentinel = await RedisSentinel.start(master);
    // The sentinel learns the replica from the master; a failover needs it known and in sync.
    await until(async () => (await sentinel.ask('REPLICAS', sentinel.name)).includes(String(replica.port)), 15_000);
  }, 30_000);

  afterAll(async () => {
    await sentinel.stop();
    await replica.stop();
    await master.stop();
  });

  const make = (logger = new RecordingLogger()) =>
    started(
      new RedisLimiter({
        global: 2,
        logger,
        redis: {
          options: { sentinels: sentinel.sentinels, name: sentinel.name },
          namespace: 'sentinel',
          leaseTtlMs: 1_000,
          commandTimeoutMs: 300,
        },
      }),
    );

  it('keeps the limit through a failover to the replica, then admits on the new master', async () => {
    const a = await make();
    const b = await make();
    await until(() => a.stats().mode === 'redis' && b.stats().mode === 'redis', 3_000);
    const held = [await a.admit(ask), await a.admit(ask)];
    await expect(b.admit(ask)).rejects.toMatchObject({ code: 'CAPACITY_EXCEEDED', reason: 'limit' });

    await master.stop(); // gone at once, like a crash; Sentinel promotes the replica
    // Throughout the failover, b is admitted only into slots a no longer counts on.
    const admittedToB: Admission[] = [];
    const end = Date.now() + 6_000;
    while (Date.now() < end) {
      const lease = await b.admit(ask).catch(() => undefined);
      if (lease !== undefined) {
        admittedToB.push(lease);
        const stillHeldByA = held.filter((l) => !l.signal.aborted).length;
        expect(stillHeldByA + admittedToB.filter((l) => !l.signal.aborted).length).toBeLessThanOrEqual(2);
      }
      if (
        (await replica.role()) === 'master' &&
        a.stats().mode === 'redis' &&
        b.stats().mode === 'redis' &&
        admittedToB.length === 0
      )
        break;
      await sleep(50);
    }
    expect(await replica.role()).toBe('master');
    expect(await sentinel.ask('GET-MASTER-ADDR-BY-NAME', sentinel.name)).toContain(String(replica.port));

    // On the new master the limits hold as before (after a quarantine, if the replica lagged).
    for (const l of [...held, ...admittedToB]) l.release();
    const again: Admission[] = [];
    await until(async () => {
      const lease = await b.admit(ask).catch(() => undefined);
      if (lease !== undefined) again.push(lease);
      return again.length === 2;
    }, 5_000);
    await expect(a.admit(ask)).rejects.toMatchObject({ code: 'CAPACITY_EXCEEDED', reason: 'limit' });
    const onNewMaster = new Redis(replica.url);
    try {
      expect(await leasesIn(onNewMaster, 'sentinel')).toBe(2);
    } finally {
      onNewMaster.disconnect();
    }
    for (const l of again) l.release();
  }, 30_000);
});

describe('RedisLimiter over TLS', () => {
  let tls: Certificates;
  let server: RedisServer;

  beforeAll(async () => {
    tls = await certificates();
    server = await RedisServer.start([], tls);
  }, 30_000);

  afterAll(async () => {
    await server.stop();
  });

  it('admits up to the limit over TLS, with the CA given in the ioredis options', async () => {
    const a = await started(
      new RedisLimiter({
        global: 2,
        perKey: 1,
        logger: new RecordingLogger(),
        redis: {
          options: { host: '127.0.0.1', port: server.port, tls: { ca: tls.ca } },
          namespace: 'tls',
          leaseTtlMs: 1_000,
        },
      }),
    );
    await until(() => a.stats().mode === 'redis', 3_000);
    const held = [await a.admit({ ...ask, key: 'ann' }), await a.admit({ ...ask, key: 'bob' })];
    await expect(a.admit({ ...ask, key: 'cy' })).rejects.toMatchObject({ code: 'CAPACITY_EXCEEDED', reason: 'limit' });
    held[0]!.release();
    await expect(a.admit({ ...ask, key: 'bob' })).rejects.toMatchObject({ code: 'KEY_LIMIT' });
    const again = await a.admit({ ...ask, key: 'ann' });
    for (const l of [again, held[1]!]) l.release();
  });

  it('says the TLS connection failed, with what to check, when the server certificate cannot be verified', async () => {
    const a = await started(
      new RedisLimiter({
        global: 2,
        logger: new RecordingLogger(),
        redis: { url: server.url, namespace: 'tls', leaseTtlMs: 1_000, fallbackAfterMs: 0, fallback: 'fail-closed' },
      }),
    );
    await until(() => a.stats().lastError !== undefined, 3_000);
    await sleep(200); // later generic failures must not hide it
    expect(a.stats().lastError).toMatch(
      /the TLS connection to Redis failed \(.*(certificate|CERT|SELF_SIGNED|UNABLE_TO).*\); check rediss:\/\/ and the certificates/,
    );
    const refused = (await a.admit(ask).catch((e: unknown) => e)) as Error;
    expect(refused).toMatchObject({ code: 'CAPACITY_EXCEEDED', reason: 'unavailable' });
    expect(refused.message).toMatch(/TLS connection to Redis failed/);
  });

  it('says so when a plain redis:// URL points at a TLS-only port', async () => {
    const a = await started(
      new RedisLimiter({
        global: 2,
        logger: new RecordingLogger(),
        redis: {
          url: `redis://127.0.0.1:${server.port}`,
          namespace: 'tls',
          leaseTtlMs: 1_000,
          commandTimeoutMs: 300,
          fallbackAfterMs: 0,
          fallback: 'fail-closed',
        },
      }),
    );
    const refused = (await a.admit(ask).catch((e: unknown) => e)) as Error;
    expect(refused).toMatchObject({ code: 'CAPACITY_EXCEEDED', reason: 'unavailable' });
    expect(refused.message).toMatch(
      /Redis closed the connection \(.*ECONNRESET\); if it takes TLS connections only, use rediss:\/\//,
    );
  });
});

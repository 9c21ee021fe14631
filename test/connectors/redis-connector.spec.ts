// The ioredis connectors against the real Redis: an exclusive client comes back clean (its
// database, a WATCH, a MULTI), at no command when there is nothing to clean, and one that cannot be
// cleaned (subscribed, blocked) is retired; a shared client refuses what would change or hold the
// connection for everyone; a killed client or a restart retires what broke.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { ConnectionPool, PoolConfigError, type PoolLogger, type PoolOptions } from '../../lib/index.js';
import { redisConnector, sharedRedisConnector } from '../../lib/connectors/ioredis/index.js';
import { throughOutage } from '../support/connector-runs.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { monitorRedis } from '../support/redis-monitor.js';
import { sleep, until } from '../support/wait.js';

const URL = 'redis://127.0.0.1:6379/0';
const KEY = `nsp:redis-connector:${process.pid}`;
const quiet: PoolLogger = { warn: () => {}, error: () => {} };

let observer: Redis;

beforeAll(async () => {
  observer = new Redis(URL);
  await observer.ping();
});

afterAll(async () => {
  const keys = [
    ...(await observer.keys(`${KEY}:*`)),
    ...(await observer.select(9).then(() => observer.keys(`${KEY}:*`))),
  ];
  if (keys.length > 0) await observer.del(...keys);
  await observer.select(0);
  await observer.del(...(await observer.keys(`${KEY}:*`)), `${KEY}:none`);
  await observer.quit();
  observer.disconnect(); // QUIT answered: the socket need not linger
});

function exclusive(options: PoolOptions = {}, url = URL) {
  return new ConnectionPool(redisConnector(url), { name: 'redis', maxSize: 1, logger: quiet, ...options });
}

describe('redisConnector: an exclusive client comes back clean', () => {
  it('a caller that SELECTs another database and throws leaves the next caller in the home database', async () => {
    const pool = exclusive();
    await expect(
      pool.use(async (client) => {
        await client.select(9);
        throw new Error('a bug');
      }),
    ).rejects.toThrow('a bug');
    await pool.use((client) => client.set(`${KEY}:home`, 'yes'));
    expect(await observer.get(`${KEY}:home`)).toBe('yes');
    expect(pool.stats().counters).toMatchObject({ resets: 1, resetFailures: 0, retired: 0 });
    await pool.close();
  });

  it('a WATCH left pending would abort the next caller’s transaction; the reset ends it', async () => {
    const pool = exclusive();
    await pool.use((client) => client.watch(`${KEY}:watched`));
    await observer.set(`${KEY}:watched`, 'changed by someone else');
    const result = await pool.use((client) => client.multi().set(`${KEY}:tx`, '1').exec());
    expect(result).toEqual([[null, 'OK']]); // not null: the transaction ran
    await pool.close();
  });

  it('an interactive MULTI left open would swallow the next caller’s commands; the reset DISCARDs it', async () => {
    const pool = exclusive();
    await expect(
      pool.use(async (client) => {
        await client.multi({ pipeline: false });
        await client.set(`${KEY}:queued`, 'never');
        throw new Error('a bug before EXEC');
      }),
    ).rejects.toThrow('a bug before EXEC');
    await pool.use((client) => client.set(`${KEY}:after-multi`, 'now'));
    expect(await observer.get(`${KEY}:after-multi`)).toBe('now');
    expect(await observer.get(`${KEY}:queued`)).toBeNull();
    await pool.close();
  });

  it('clean callers cost no command beyond their own', async () => {
    const pool = exclusive({ minSize: 1 });
    await pool.warmup();
    let current!: Redis;
    await pool.use((client) => void (current = client));
    const { seen, stop } = await monitorRedis(() => current.stream.localPort ?? 0);
    await sleep(50);
    for (let i = 0; i < 20; i++) await pool.use((client) => client.incr(`${KEY}:count`));
    await pool.use((client) => client.multi().incr(`${KEY}:count`).exec()); // a pipelined MULTI ends itself
    await pool.use(async (client) => {
      await client.select(9);
      await client.get(`${KEY}:x`);
    });
    await until(() => pool.stats().clients === 0);
    await sleep(100);
    stop();
    const own = 20 + 3 + 2; // 20 INCR, MULTI INCR EXEC, SELECT GET
    expect(seen.length).toBe(own + 1); // and the SELECT 0 the reset sent
    expect(seen[seen.length - 1]).toBe('select 0');
    await pool.close();
  });

  it('a subscribed client, or one blocked by a command still waiting, is retired, not handed out', async () => {
    const pool = exclusive({ maxSize: 1, acquireTimeoutMs: 2_000 });
    await pool.use((client) => client.subscribe(`${KEY}:channel`));
    const started = Date.now();
    await pool.use((client) => void client.blpop(`${KEY}:never`, 5).catch(() => {}));
    expect(await pool.use((client) => client.ping())).toBe('PONG');
    expect(pool.stats().counters).toMatchObject({ resetFailures: 2, retiredBy: { reset: 2 } });
    expect(String(pool.stats().lastError)).toMatch(/a blocking command was still waiting on the client/);
    await pool.close();
    expect(Date.now() - started).toBeLessThan(2_000); // not behind the BLPOP's five seconds, nor its close
  });

  it('without a reset the same WATCH aborts the next transaction: the check can fail', async () => {
    const connector = { ...redisConnector(URL), reset: undefined };
    const pool = new ConnectionPool(connector, { name: 'redis-no-reset', maxSize: 1, logger: quiet });
    await pool.use((client) => client.watch(`${KEY}:watched2`));
    await observer.set(`${KEY}:watched2`, 'changed');
    expect(await pool.use((client) => client.multi().set(`${KEY}:tx2`, '1').exec())).toBeNull();
    await pool.close();
  });
});

describe('sharedRedisConnector: plain commands shared, the rest refused', () => {
  it('100 callers share one client; pipelined MULTI works; blocking and state-changing commands are refused', async () => {
    const pool = new ConnectionPool(sharedRedisConnector(URL), { name: 'redis-shared', maxSize: 1, logger: quiet });
    expect(pool.options.clientLimit).toBe(100);
    const values = await Promise.all(
      Array.from({ length: 100 }, (_, i) => pool.use((client) => client.incr(`${KEY}:shared`).then(() => i))),
    );
    expect(values.length).toBe(100);
    expect(await observer.get(`${KEY}:shared`)).toBe('100');
    expect(pool.stats().counters.opened).toBe(1);
    expect(await pool.use((client) => client.multi().incr(`${KEY}:shared`).incr(`${KEY}:shared`).exec())).toEqual([
      [null, 101],
      [null, 102],
    ]);
    for (const [what, run] of [
      ['BLPOP', (c: Redis) => c.blpop(`${KEY}:x`, 1)],
      ['XREAD', (c: Redis) => c.xread('BLOCK', 10, 'STREAMS', `${KEY}:s`, '$')],
      ['SELECT', (c: Redis) => c.select(3)],
      ['WATCH', (c: Redis) => c.watch(`${KEY}:x`)],
      ['SUBSCRIBE', (c: Redis) => c.subscribe(`${KEY}:c`)],
      ['CLIENT', (c: Redis) => c.client('SETNAME', 'mine')],
    ] as const) {
      await expect(pool.use(run as (c: Redis) => Promise<unknown>)).rejects.toThrow(
        new RegExp(
          `^${what} .*not on a shared connection \\(sharedRedisConnector\\); run it on an exclusive one \\(redisConnector\\)`,
        ),
      );
    }
    await expect(pool.use((c) => c.multi({ pipeline: false }))).rejects.toThrow(
      /multi\(\{ pipeline: false \}\) .* \(redisConnector\)/,
    );
    // Nothing refused reached the connection: it is still in its database, serving.
    expect(await pool.use((client) => client.get(`${KEY}:shared`))).toBe('102');
    expect(pool.stats().counters.retired).toBe(0);
    await pool.close();
  });

  it('bad arguments are refused, saying what to change', () => {
    expect(() => sharedRedisConnector(URL, { clientLimit: 0 })).toThrow(PoolConfigError);
    expect(() => sharedRedisConnector(URL, { clientLimt: 5 } as never)).toThrow(/did you mean "clientLimit"/);
    expect(() => redisConnector(5 as unknown as string)).toThrow(
      /must be a redis:\/\/ URL \(rediss:\/\/ for TLS\), a socket path or ioredis options, got 5/,
    );
    expect(() => new ConnectionPool(redisConnector(URL), { name: 'x', clientLimit: 5 })).toThrow(
      /must be 1 for a connector with reset/,
    );
  });
});

describe('Redis connectors: broken connections', () => {
  it('a killed client is retired, idle or in use; callers go on', async () => {
    const name = `nsp-kill-${process.pid}`;
    const pool = new ConnectionPool(redisConnector({ host: '127.0.0.1', port: 6379, connectionName: name }), {
      name: 'redis-kill',
      maxSize: 2,
      minSize: 2,
      logger: quiet,
    });
    await pool.warmup();
    const holding = pool.use((client) => client.blpop(`${KEY}:never`, 2));
    await sleep(50);
    const list = (await observer.client('LIST')) as string;
    for (const line of list.split('\n').filter((l) => l.includes(`name=${name}`)))
      await observer.client('KILL', 'ID', /id=(\d+)/.exec(line)![1]!);
    await expect(holding).rejects.toThrow();
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        pool.use((client) => client.incr(`${KEY}:after-kill`).then(() => i), { retry: { attempts: 3 } }),
      ),
    );
    expect(results.length).toBe(20);
    expect(pool.stats().counters.retired).toBeGreaterThanOrEqual(2);
    await pool.close();
    await until(async () => !((await observer.client('LIST')) as string).includes(`name=${name}`));
  });

  it.each([
    ['exclusive', (url: string) => redisConnector(url)],
    ['shared', (url: string) => sharedRedisConnector(url, { clientLimit: 20 })],
  ])(
    'a restart mid-run (%s): connections cut, connects refused, then served again; nothing hangs or leaks',
    async (_, make) => {
      const proxy = await TcpProxy.start({ host: '127.0.0.1', port: 6379 });
      const pool = new ConnectionPool(make(`redis://127.0.0.1:${proxy.port}/0`), {
        name: 'redis-restart',
        maxSize: 4,
        minSize: 1,
        logger: quiet,
        acquireTimeoutMs: 3_000,
        createTimeoutMs: 1_000,
      });
      try {
        await pool.warmup();
        await throughOutage(proxy, () =>
          pool.use((client) => client.incr(`${KEY}:restart`), { retry: { attempts: 3, baseDelayMs: 20 } }),
        );
        expect(pool.stats().counters.retired).toBeGreaterThanOrEqual(1);
        expect(pool.stats().counters.createFailures).toBeGreaterThan(0);
        expect(pool.stats()).toMatchObject({ clients: 0, waiting: 0 });
        expect(await pool.use((client) => client.ping())).toBe('PONG');
      } finally {
        await pool.close();
        await until(() => proxy.sessions === 0);
        await proxy.close();
      }
    },
  );
});

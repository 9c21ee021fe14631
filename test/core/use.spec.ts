import { describe, expect, it } from '@jest/globals';
import { PoolContextError, type Lease } from '../../lib/index.js';
import type { FakeConnection } from '../support/fake-connector.js';
import { makePool, track } from '../support/harness.js';
import { flush } from '../support/virtual-clock.js';
import { checkedOnce } from '../../lib/core/options/call-options.js';

type L = Lease<FakeConnection>;

describe('use() and pool.current', () => {
  it('runs the callback with a connection and releases it on return and on throw', async () => {
    const { pool } = makePool();
    expect(await pool.use((c) => c.id)).toBe(1);
    await expect(pool.use(() => Promise.reject(new Error('query failed')))).rejects.toThrow('query failed');
    expect(pool.stats()).toMatchObject({ clients: 0, counters: { acquired: 2, released: 2, retired: 0 } });
    await pool.close();
  });

  it('exposes the scope’s connection as pool.current, across awaits', async () => {
    const { pool } = makePool();
    const seen = await pool.use(async (conn) => {
      await new Promise((r) => setImmediate(r));
      return pool.current === conn;
    });
    expect(seen).toBe(true);
    expect(() => pool.current).toThrow(PoolContextError);
    await pool.close();
  });

  it('a nested use() of the same pool reuses the outer lease: no self-deadlock at clientLimit 1', async () => {
    const { pool } = makePool({ clientLimit: 1, maxSize: 1 });
    const ids = await pool.use(async (outer) => [outer.id, await pool.use((inner) => inner.id)]);
    expect(ids).toEqual([1, 1]);
    expect(pool.stats().counters.acquired).toBe(1);
    await pool.close();
  });

  it('propagation "new" takes a second lease', async () => {
    const { pool } = makePool({ clientLimit: 1, maxSize: 2, growAt: 1 });
    const ids = await pool.use(async (outer) => [
      outer.id,
      await pool.use((inner) => inner.id, { propagation: 'new' }),
    ]);
    expect(ids).toEqual([1, 2]);
    await pool.close();
  });

  it("propagation 'none' takes its own lease and opens no scope: the connection is only the argument", async () => {
    const { pool } = makePool({ clientLimit: 1, maxSize: 3 });
    const alone = await pool.use(
      async (conn) => {
        expect(() => pool.current).toThrow(PoolContextError);
        // A nested use() does not see this lease: it takes its own.
        return [conn.id, await pool.use((c) => c.id)];
      },
      { propagation: 'none' },
    );
    expect(alone).toEqual([1, 2]);
    // Inside an enclosing scope, pool.current and nested calls keep seeing that scope's lease.
    const within = await pool.use(async (outer) =>
      pool.use(async (conn) => [outer.id, conn.id, pool.current.id, await pool.use((c) => c.id)], {
        propagation: 'none',
      }),
    );
    expect(within).toEqual([1, 2, 1, 1]);
    expect(pool.stats()).toMatchObject({ clients: 0, counters: { acquired: 4, released: 4 } });
    await expect(pool.use(() => 1, { propagation: 'always' as never })).rejects.toThrow(
      `pool "test": option "propagation" must be 'reuse' or 'new' or 'none', got "always"`,
    );
    await pool.close();
  });

  it('scopes of different pools nest without hiding each other', async () => {
    const a = makePool({ name: 'a' }).pool;
    const b = makePool({ name: 'b' }).pool;
    await a.use(() => b.use(() => expect(a.current).not.toBe(b.current)));
    await Promise.all([a.close(), b.close()]);
  });

  it('retires the connection when the connector says an error is fatal', async () => {
    const { pool, connector } = makePool();
    connector.fatal = (err) => (err as Error).message === 'ECONNRESET';
    await expect(pool.use(() => Promise.reject(new Error('ECONNRESET')))).rejects.toThrow('ECONNRESET');
    await flush();
    expect(connector.live.size).toBe(0);
    expect(pool.stats().lastError).toBe('ECONNRESET');
    await pool.close();
  });

  it('retry: a fatal error retires the connection and the next try runs on a new one, after a backoff', async () => {
    const { pool, connector, clock } = makePool();
    connector.fatal = () => true;
    const tries: number[] = [];
    const result = track(
      pool.use(
        (conn) => {
          tries.push(conn.id);
          if (tries.length < 3) throw new Error('ECONNRESET');
          return 'ok';
        },
        { retry: { attempts: 3, baseDelayMs: 100 } },
      ),
    );
    await clock.advance(99);
    expect(tries).toEqual([1]);
    await clock.advance(1 + 200);
    expect(result.value).toBe('ok');
    expect(tries).toEqual([1, 2, 3]);
    expect(pool.stats().counters.retired).toBe(2);
    await pool.close();
  });

  it('retry: errors neither fatal nor accepted by retryOn are thrown at once', async () => {
    const { pool } = makePool();
    let tries = 0;
    const fail = () => {
      tries++;
      throw new Error('constraint violation');
    };
    await expect(
      pool.use(fail, { retry: { attempts: 5, retryOn: (e) => (e as Error).message === 'timeout' } }),
    ).rejects.toThrow('constraint violation');
    expect(tries).toBe(1);
    await pool.close();
  });

  it('retry: gives up after the last attempt with the last error', async () => {
    const { pool, clock } = makePool();
    let tries = 0;
    const result = track(
      pool.use(
        () => {
          throw new Error(`timeout ${++tries}`);
        },
        { retry: { attempts: 2, retryOn: () => true, baseDelayMs: 5 } },
      ),
    );
    await clock.advance(10);
    expect((result.error as Error).message).toBe('timeout 2');
    await pool.close();
  });
});

describe('arguments of the wrong type', () => {
  it('reject use() and acquire() with an error naming the call and what it got, never a synchronous throw, and take no connection', async () => {
    const { pool } = makePool();
    for (const options of [null, 5, 'fast']) {
      const using = pool.use(() => 1, options as never);
      const acquiring = pool.acquire(options as never);
      await expect(using).rejects.toThrow(
        `pool "test": option "use" options must be an object, got ${options === null ? 'null' : typeof options === 'number' ? '5' : '"fast"'}`,
      );
      await expect(acquiring).rejects.toThrow(`pool "test": option "acquire" options must be an object`);
    }
    await expect(pool.use(undefined as never)).rejects.toThrow(
      'pool "test": use() takes the function to run with a connection first, got undefined',
    );
    await expect(pool.use({ propagation: 'none' } as never)).rejects.toThrow(TypeError);
    expect(pool.stats()).toMatchObject({ clients: 0, counters: { acquired: 0 } });
    expect(await pool.use((c) => c.id, { propagation: 'none' })).toBe(1);
    await pool.close();
  });
});

describe('options checked once', () => {
  it('are refused as use() would refuse them, and frozen, retry included', () => {
    expect(() => checkedOnce('db', { timeoutMs: 0 })).toThrow(
      'pool "db": option "acquire.timeoutMs" must be a number above 0, got 0',
    );
    const retry = { attempts: 2 };
    const options = checkedOnce('db', { retry, propagation: 'new' });
    expect(Object.isFrozen(options) && Object.isFrozen(options.retry)).toBe(true);
    retry.attempts = 0; // the caller's own object stays theirs; the checked copy does not follow it
    expect(options.retry).toEqual({ attempts: 2 });
  });

  it('run use() as given, with a retry on another connection', async () => {
    const { pool, connector, clock } = makePool({ clientLimit: 1 });
    connector.fatal = () => true;
    const options = checkedOnce(pool.name, { retry: { attempts: 2, baseDelayMs: 10 } });
    const tries: number[] = [];
    const result = track(
      pool.use((conn) => {
        tries.push(conn.id);
        if (tries.length === 1) throw new Error('ECONNRESET');
        return 'ok';
      }, options),
    );
    await clock.advance(10);
    expect({ value: result.value, tries }).toEqual({ value: 'ok', tries: [1, 2] });
    await pool.close();
  });
});

describe('leases', () => {
  it('release is idempotent: a double release never corrupts counts', async () => {
    const { pool } = makePool({ clientLimit: 2, maxSize: 1 });
    const a = await pool.acquire();
    const b = await pool.acquire();
    a.release();
    a.release();
    a.fail(new Error('late'));
    expect(pool.stats()).toMatchObject({ clients: 1, counters: { released: 1, retired: 0 } });
    expect(a.released).toBe(true);
    b.release();
    await pool.close();
  });

  it('fail() retires the connection; it closes when its last client leaves', async () => {
    const { pool, connector } = makePool({ clientLimit: 2, maxSize: 1 });
    const a = await pool.acquire();
    const b = await pool.acquire();
    a.fail(new Error('protocol error'));
    await flush();
    expect(b.connection.closed).toBe(false);
    const c = await pool.acquire();
    expect(c.connection.id).toBe(2);
    b.release();
    await flush();
    expect(connector.liveIds()).toEqual([2]);
    c.release();
    await pool.close();
  });

  it('supports `await using`', async () => {
    const { pool } = makePool();
    {
      await using lease = await pool.acquire();
      expect(lease.connection.id).toBe(1);
      expect(pool.stats().clients).toBe(1);
    }
    expect(pool.stats().clients).toBe(0);
    await pool.close();
  });
});

describe('stats and health', () => {
  it('moves healthy → degraded → critical → exhausted with utilization, and failing when creates fail', async () => {
    const { pool, connector, clock } = makePool({ clientLimit: 10, maxSize: 1 });
    const leases: L[] = [];
    const take = async (n: number) => {
      for (let i = 0; i < n; i++) leases.push(await pool.acquire());
    };
    await take(6);
    expect(pool.health()).toBe('healthy');
    await take(1);
    expect(pool.health()).toBe('degraded');
    await take(2);
    expect(pool.health()).toBe('critical');
    await take(1);
    expect(pool.stats()).toMatchObject({ health: 'exhausted', utilization: 1, clients: 10 });
    leases.forEach((l) => l.release());
    pool.refresh();
    connector.createSteps.push({ kind: 'fail' });
    const waiter = track(pool.acquire({ timeoutMs: 5 }));
    await flush();
    expect(pool.health()).toBe('failing');
    await clock.advance(5);
    expect(waiter.error).toBeDefined();
    await pool.close();
  });

  it('reports one row per connection with its state, clients and age', async () => {
    const { pool, clock } = makePool({ clientLimit: 4 });
    const lease = await pool.acquire();
    await clock.advance(1_500);
    const { connections, size, ready, idle } = pool.stats();
    expect({ size, ready, idle }).toEqual({ size: 1, ready: 1, idle: 0 });
    expect(connections).toEqual([
      {
        id: lease.connectionId,
        state: 'ready',
        clients: 1,
        clientLimit: 4,
        uses: 1,
        ageMs: 1_500,
        idleMs: 0,
        validating: false,
        resetting: false,
        rotating: false,
      },
    ]);
    lease.release();
    await pool.close();
  });
});

import { describe, expect, it, jest } from '@jest/globals';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import {
  ConnectionsExhaustedError,
  POOL_CHANNELS,
  PoolClosedError,
  QueueFullError,
  SelfDeadlockError,
  type AcquireOptions,
  type Lease,
} from '../../lib/index.js';
import { FakeConnector, type FakeConnection } from '../support/fake-connector.js';
import { makePool, track } from '../support/harness.js';
import { flush } from '../support/virtual-clock.js';

type L = Lease<FakeConnection>;

describe('sharing and selection', () => {
  it('shares one connection between up to clientLimit callers', async () => {
    const { pool, connector } = makePool({ clientLimit: 3, maxSize: 1, growAt: 1 });
    const leases = await Promise.all([pool.acquire(), pool.acquire(), pool.acquire()]);
    expect(new Set(leases.map((l) => l.connection.id)).size).toBe(1);
    expect(connector.created).toBe(1);
    expect(pool.stats().connections[0]).toMatchObject({ clients: 3, clientLimit: 3 });
    leases.forEach((l) => l.release());
    expect(pool.stats().clients).toBe(0);
    await pool.close();
  });

  it('spread puts each new caller on the connection with the fewest clients', async () => {
    const { pool } = makePool({ clientLimit: 4, maxSize: 3, minSize: 3 });
    await pool.warmup();
    const leases = await Promise.all(Array.from({ length: 6 }, () => pool.acquire()));
    expect(pool.stats().connections.map((c) => c.clients)).toEqual([2, 2, 2]);
    leases.forEach((l) => l.release());
    await pool.close();
  });

  it('pack fills the busiest connection that still has room', async () => {
    const { pool } = makePool({ clientLimit: 4, maxSize: 3, minSize: 3, strategy: 'pack', growAt: 1 });
    await pool.warmup();
    const leases = await Promise.all(Array.from({ length: 6 }, () => pool.acquire()));
    expect(
      pool
        .stats()
        .connections.map((c) => c.clients)
        .sort(),
    ).toEqual([0, 2, 4]);
    leases.forEach((l) => l.release());
    await pool.close();
  });

  it('breaks ties by the most recently used connection, so surplus ones idle out', async () => {
    const { pool } = makePool({ clientLimit: 1, maxSize: 3, minSize: 3 });
    await pool.warmup();
    const a = await pool.acquire();
    const b = await pool.acquire();
    const lastReleased = b.connection.id;
    a.release();
    b.release();
    const c = await pool.acquire();
    expect(c.connection.id).toBe(lastReleased);
    c.release();
    await pool.close();
  });

  it('honours a connector-lowered client limit (e.g. an HTTP/2 peer’s max streams)', async () => {
    const { pool, connector } = makePool({ clientLimit: 10, maxSize: 1 });
    const first = await pool.acquire();
    first.connection.ctx.setClientLimit(2);
    const second = await pool.acquire();
    const third = track(pool.acquire({ timeoutMs: 50 }));
    await Promise.resolve();
    expect(third.settled).toBe(false);
    expect(pool.stats().connections[0]).toMatchObject({ clients: 2, clientLimit: 2 });
    first.release();
    await Promise.resolve();
    expect((third.value as L).connection.id).toBe(second.connection.id);
    second.release();
    (third.value as L).release();
    expect(connector.created).toBe(1);
    await pool.close();
  });
});

describe('the one-step acquire', () => {
  // acquire() with no options takes a ready connection in one step when nothing is queued, timed,
  // traced or limited; acquire({}) takes the general path. Driven alike, both keep the same books.
  it('hands out the same connections and keeps the same counts as the general path, validation included', async () => {
    for (const [validates, validateAfterIdleMs] of [
      [true, 10],
      [true, 0],
      [false, 0],
    ] as const) {
      const connector = () =>
        validates ? new FakeConnector() : Object.assign(new FakeConnector(), { validate: undefined });
      const one = makePool({ clientLimit: 2, maxSize: 3, minSize: 2, validateAfterIdleMs }, connector());
      const general = makePool({ clientLimit: 2, maxSize: 3, minSize: 2, validateAfterIdleMs }, connector());
      await Promise.all([one.pool.warmup(), general.pool.warmup()]);
      const held: [L, L][] = [];
      // Take up to four, give some back, let them idle past the validation age, and again.
      for (const step of [4, -2, 'idle', 3, -5, 'idle', 2, -2] as const) {
        if (step === 'idle') {
          await Promise.all([one.clock.advance(20), general.clock.advance(20)]);
        } else if (step > 0) {
          for (let i = 0; i < step; i++) {
            const pair = await Promise.all([one.pool.acquire(), general.pool.acquire({})]);
            expect(pair[0].connectionId).toBe(pair[1].connectionId);
            held.push(pair);
          }
        } else for (const pair of held.splice(0, -step)) for (const lease of pair) lease.release();
        const [x, y] = [one.pool.stats(), general.pool.stats()];
        expect(x.counters).toEqual(y.counters);
        expect(x.connections.map((c) => [c.id, c.clients, c.uses])).toEqual(
          y.connections.map((c) => [c.id, c.clients, c.uses]),
        );
      }
      expect(one.connector.validateCalls).toBe(general.connector.validateCalls);
      // The idle connections were validated before reuse (each time they idled past 10 ms; with 0, after each release).
      if (validates) expect(one.connector.validateCalls).toBeGreaterThan(0);
      for (const lease of held.flat()) lease.release();
      await Promise.all([one.pool.close(), general.pool.close()]);
    }
  });
});

describe('waiting', () => {
  it('dates a queued caller on the pool clock, not on a timer outside it, and times it out exactly', async () => {
    const { pool, clock } = makePool({ clientLimit: 1, maxSize: 1 });
    const held = await pool.acquire();
    await clock.advance(0); // every earlier batch dated
    const immediate = jest.spyOn(globalThis, 'setImmediate');
    const waiter = track(pool.acquire({ timeoutMs: 100 }));
    const calls = immediate.mock.calls.length; // read before mockRestore() clears it
    immediate.mockRestore();
    expect(calls).toBe(0); // the batch's clock read waits on the pool's clock, not on setImmediate
    await clock.advance(99);
    expect(waiter.settled).toBe(false);
    await clock.advance(1);
    expect(waiter.error).toBeInstanceOf(ConnectionsExhaustedError);
    held.release();
    await pool.close();
    expect(clock.pending).toBe(0);
  });

  it('serves waiters in FIFO order by direct hand-off on release', async () => {
    const { pool } = makePool({ clientLimit: 1, maxSize: 1 });
    const held = await pool.acquire();
    const order: number[] = [];
    const waiters = [1, 2, 3].map((n) =>
      pool.acquire().then((l) => {
        order.push(n);
        return l;
      }),
    );
    held.release();
    const first = await waiters[0]!;
    first.release();
    const second = await waiters[1]!;
    second.release();
    (await waiters[2]!).release();
    expect(order).toEqual([1, 2, 3]);
    expect(pool.stats().counters.createsStarted).toBe(1);
    await pool.close();
  });

  it('a caller never waits for its own create: whatever frees first serves the head of the queue', async () => {
    const { pool, connector } = makePool({ clientLimit: 1, maxSize: 2, growAt: 1 });
    const held = await pool.acquire();
    connector.createSteps.push({ kind: 'hold' });
    const waiter = track(pool.acquire());
    await Promise.resolve();
    expect(pool.stats().opening).toBe(1);
    held.release();
    await Promise.resolve();
    expect((waiter.value as L).connection.id).toBe(held.connection.id);
    connector.releaseCreate();
    await new Promise((r) => setImmediate(r));
    expect(pool.stats()).toMatchObject({ ready: 2, idle: 1, waiting: 0 });
    (waiter.value as L).release();
    await pool.close();
  });

  it('fails a waiter at its deadline with ConnectionsExhaustedError saying every connection was busy', async () => {
    const { pool, clock } = makePool({ clientLimit: 1, maxSize: 1 });
    const held = await pool.acquire();
    const waiter = track(pool.acquire({ timeoutMs: 250 }));
    await clock.advance(249);
    expect(waiter.settled).toBe(false);
    await clock.advance(1);
    expect(waiter.error).toBeInstanceOf(ConnectionsExhaustedError);
    expect(waiter.error).toMatchObject({
      reason: 'all-busy',
      timeoutMs: 250,
      code: 'CONNECTIONS_EXHAUSTED',
      pool: 'test',
    });
    expect(pool.stats()).toMatchObject({ waiting: 0, counters: { timeouts: 1 } });
    held.release();
    await pool.close();
  });

  it('each waiter keeps its own deadline, whatever order they were queued in', async () => {
    const { pool, clock } = makePool({ clientLimit: 1, maxSize: 1 });
    const held = await pool.acquire();
    const slow = track(pool.acquire({ timeoutMs: 300 }));
    const fast = track(pool.acquire({ timeoutMs: 100 }));
    await clock.advance(100);
    expect([slow.settled, fast.settled]).toEqual([false, true]);
    await clock.advance(200);
    expect(slow.error).toBeInstanceOf(ConnectionsExhaustedError);
    held.release();
    await pool.close();
  });

  it('an aborted waiter leaves the queue at once with the signal’s reason and takes no slot', async () => {
    const { pool } = makePool({ clientLimit: 1, maxSize: 1 });
    const held = await pool.acquire();
    const ac = new AbortController();
    const aborted = track(pool.acquire({ signal: ac.signal }));
    const next = track(pool.acquire());
    ac.abort(new Error('client went away'));
    // Out of the queue in the abort itself; its promise rejects within the same run of microtasks.
    expect(pool.stats().waiting).toBe(1);
    for (let tick = 0; tick < 4; tick++) await Promise.resolve();
    expect((aborted.error as Error).message).toBe('client went away');
    held.release();
    await Promise.resolve();
    expect(next.value).toBeDefined();
    (next.value as L).release();
    expect(pool.stats()).toMatchObject({ clients: 0, counters: { aborted: 1 } });
    await pool.close();
  });

  it('rejects at once when the signal is already aborted', async () => {
    const { pool } = makePool({ clientLimit: 1, maxSize: 1 });
    const held = await pool.acquire();
    await expect(pool.acquire({ signal: AbortSignal.abort(new Error('gone')) })).rejects.toThrow('gone');
    held.release();
    await pool.close();
  });

  it('rejects past maxWaiting with QueueFullError', async () => {
    const { pool } = makePool({ clientLimit: 1, maxSize: 1, maxWaiting: 1 });
    const held = await pool.acquire();
    const queued = track(pool.acquire());
    await expect(pool.acquire()).rejects.toBeInstanceOf(QueueFullError);
    held.release();
    await Promise.resolve();
    (queued.value as L).release();
    await pool.close();
  });
});

describe('acquire() without options (the one-step paths)', () => {
  /** Two busy connections, five callers queued behind them; the oldest lease out is given back in turn, every third one failed: who got which connection, and the counters. */
  async function queueRun(options: AcquireOptions | undefined) {
    const { pool } = makePool({ clientLimit: 1, maxSize: 2, growAt: 1 });
    const out = [await pool.acquire(options), await pool.acquire(options)];
    const queued = Array.from({ length: 5 }, () => track(pool.acquire(options)));
    expect(pool.stats().waiting).toBe(5);
    const served: string[] = [];
    for (let turn = 0; out.length > 0; turn++) {
      const lease = out.shift()!;
      if (turn % 3 === 2) lease.fail(new Error('broken'));
      else lease.release();
      await flush();
      queued.forEach((q, i) => {
        const got = q.value as L | undefined;
        if (got !== undefined && !served.some((s) => s.startsWith(`${i}:`))) {
          served.push(`${i}:${got.connectionId}`);
          out.push(got);
        }
      });
    }
    const { counters, waiting, clients, ready } = pool.stats();
    await pool.close();
    return { served, counters, waiting, clients, ready };
  }

  it('queue callers, hand them connections in order and count them as acquire({}) does', async () => {
    const plain = await queueRun(undefined);
    expect(plain.served.map((s) => s.split(':')[0])).toEqual(['0', '1', '2', '3', '4']);
    expect(plain).toMatchObject({ waiting: 0, clients: 0, counters: { acquired: 7, released: 7 } });
    expect(plain).toEqual(await queueRun({}));
  });

  it('behind a queued caller, from inside use() holding every slot, fails with SelfDeadlockError instead of queueing', async () => {
    const { pool } = makePool({ clientLimit: 1, maxSize: 1 });
    let go!: () => void;
    const gate = new Promise<void>((resolve) => (go = resolve));
    const inner = track(
      pool.use(async () => {
        await gate;
        return pool.acquire();
      }),
    );
    await flush();
    // Queued from outside the scope: it waits for the scope's connection.
    const queued = track(pool.acquire({ timeoutMs: 1_000 }));
    expect(pool.stats()).toMatchObject({ clients: 1, waiting: 1 });
    go();
    await flush();
    expect(inner.error).toBeInstanceOf(SelfDeadlockError);
    expect(queued.value).toBeDefined();
    (queued.value as L).release();
    expect(pool.stats()).toMatchObject({ clients: 0, waiting: 0 });
    await pool.close();
  });

  // Past maxWaiting it is refused: 'rejects past maxWaiting with QueueFullError' above calls acquire() without options behind a queued caller.
  it('with a caller queued when close() began, is rejected, and so is the queued caller', async () => {
    const { pool } = makePool({ clientLimit: 1, maxSize: 1 });
    const held = await pool.acquire();
    const queued = track(pool.acquire());
    const closing = pool.close();
    await expect(pool.acquire()).rejects.toBeInstanceOf(PoolClosedError);
    expect(queued.error).toBeInstanceOf(PoolClosedError);
    held.release();
    await closing;
  });

  it('a release while callers wait is published when the release channel has a subscriber, and serves the head', async () => {
    const seen: unknown[] = [];
    const onRelease = (message: unknown) => seen.push(message);
    subscribe(POOL_CHANNELS.release, onRelease);
    try {
      const { pool } = makePool({ clientLimit: 1, maxSize: 1 });
      const held = await pool.acquire();
      const queued = track(pool.acquire());
      held.release();
      await flush();
      expect(seen).toEqual([{ pool: 'test', connectionId: held.connectionId, failed: false }]);
      expect((queued.value as L).connectionId).toBe(held.connectionId);
      (queued.value as L).release();
      expect(seen).toHaveLength(2);
      await pool.close();
    } finally {
      unsubscribe(POOL_CHANNELS.release, onRelease);
    }
  });
});

describe('opening connections', () => {
  it('opens in parallel, as many creates as the waiters need, bounded by maxConcurrentCreates', async () => {
    const { pool, connector } = makePool({ clientLimit: 2, maxSize: 10, maxConcurrentCreates: 3 });
    for (let i = 0; i < 3; i++) connector.createSteps.push({ kind: 'hold' });
    const waiters = Array.from({ length: 5 }, () => track(pool.acquire()));
    await Promise.resolve();
    expect(pool.stats().opening).toBe(3); // ceil(5 / 2) creates
    expect(connector.heldCreates.length).toBe(3);
    for (let i = 0; i < 3; i++) connector.releaseCreate();
    await new Promise((r) => setImmediate(r));
    expect(waiters.every((w) => w.value)).toBe(true);
    waiters.forEach((w) => (w.value as L).release());
    await pool.close();
  });

  it('grows before saturation: opens one more connection in the background past growAt', async () => {
    const { pool, connector } = makePool({ clientLimit: 10, maxSize: 3, growAt: 0.5 });
    const leases = await Promise.all(Array.from({ length: 5 }, () => pool.acquire()));
    await new Promise((r) => setImmediate(r));
    expect(connector.created).toBe(2);
    expect(pool.stats()).toMatchObject({ ready: 2, waiting: 0 });
    leases.forEach((l) => l.release());
    await pool.close();
  });

  it('never opens more than maxSize connections', async () => {
    const { pool, connector, clock } = makePool({ clientLimit: 1, maxSize: 3 });
    const leases = Array.from({ length: 20 }, () => track(pool.acquire({ timeoutMs: 10 })));
    await clock.advance(20);
    expect(connector.created).toBe(3);
    expect(leases.filter((l) => l.value).length).toBe(3);
    expect(leases.filter((l) => l.error instanceof ConnectionsExhaustedError).length).toBe(17);
    // The 17 expire in one sweep and share one snapshot of the pool as the deadline found it.
    const errors = leases.filter((l) => l.error).map((l) => l.error as ConnectionsExhaustedError);
    expect(errors[0]!.stats).toMatchObject({
      size: 3,
      clients: 3,
      waiting: 17,
      health: 'exhausted',
      counters: { timeouts: 0 },
    });
    expect(errors.every((e) => e.stats === errors[0]!.stats)).toBe(true);
    leases.forEach((l) => (l.value as L | undefined)?.release());
    await pool.close();
  });

  it('acquire after close rejects at once with PoolClosedError', async () => {
    const { pool } = makePool();
    await pool.close();
    await expect(pool.acquire()).rejects.toBeInstanceOf(PoolClosedError);
    await expect(pool.use(() => 1)).rejects.toBeInstanceOf(PoolClosedError);
  });
});

import { describe, expect, it } from '@jest/globals';
import {
  ConnectionFailedError,
  ConnectionPool,
  ConnectionsExhaustedError,
  PoolClosedError,
  systemClock,
  type Lease,
} from '../../lib/index.js';
import type { FakeConnection } from '../support/fake-connector.js';
import { makePool, track } from '../support/harness.js';
import { flush } from '../support/virtual-clock.js';

type L = Lease<FakeConnection>;

describe('opening and readiness', () => {
  it('concurrent first callers share one single-flight create', async () => {
    const { pool, connector } = makePool({ clientLimit: 50, maxSize: 5, growAt: 1 });
    connector.createSteps.push({ kind: 'hold' });
    const callers = Array.from({ length: 50 }, () => track(pool.acquire()));
    await flush();
    expect(connector.heldCreates.length).toBe(1);
    connector.releaseCreate();
    await flush();
    expect(callers.every((c) => (c.value as L).connection.id === 1)).toBe(true);
    expect(connector.created).toBe(1);
    callers.forEach((c) => (c.value as L).release());
    await pool.close();
  });

  it('runs ready() before the first caller gets the connection', async () => {
    const { pool, connector } = makePool();
    connector.readySteps.push({ kind: 'hold' });
    const caller = track(pool.acquire());
    await flush();
    expect(caller.settled).toBe(false);
    expect(pool.stats().connections[0]!.state).toBe('establishing');
    connector.releaseReady(true);
    await flush();
    expect(caller.value).toBeDefined();
    (caller.value as L).release();
    await pool.close();
  });

  it.each([
    ['ready() returns false', { ready: { kind: 'nothing' } }, /ready\(\) returned false/],
    ['ready() throws', { ready: { kind: 'fail' } }, /ready\(\) failed: handshake failed/],
    ['create() resolves to nothing', { create: { kind: 'nothing' } }, /create\(\) resolved to undefined/],
    ['create() rejects', { create: { kind: 'fail' } }, /create failed: connect ECONNREFUSED/],
  ] as const)('%s: ConnectionFailedError, no connection handed out, none leaked', async (_, steps, text) => {
    // Callers wait through the failure here (the blocking period has its own tests).
    const { pool, connector, clock } = makePool({ minSize: 1, maxSize: 1, blockingPeriod: false });
    if ('ready' in steps) connector.readySteps.push(steps.ready);
    if ('create' in steps) connector.createSteps.push(steps.create);
    const warm = track(pool.warmup());
    await flush();
    expect(warm.error).toBeInstanceOf(ConnectionFailedError);
    expect((warm.error as Error).message).toMatch(text);
    expect(pool.stats()).toMatchObject({ ready: 0, size: 0, health: 'failing' });
    expect(connector.live.size).toBe(0);

    // A caller that arrives now gets the next (good) connection once the backoff ends.
    const caller = track(pool.acquire({ timeoutMs: 1_000 }));
    await clock.advance(20);
    expect((caller.value as L).connection.closed).toBe(false);
    (caller.value as L).release();
    await pool.close();
    expect(connector.live.size).toBe(0);
  });

  it('times out a slow create and closes the connection when it finally arrives', async () => {
    const { pool, connector, clock } = makePool({ createTimeoutMs: 100, blockingPeriod: false });
    connector.createSteps.push({ kind: 'hold' });
    const caller = track(pool.acquire({ timeoutMs: 5_000 }));
    await clock.advance(100);
    expect(pool.stats()).toMatchObject({ opening: 0, counters: { createFailures: 1 } });
    expect(pool.stats().lastError).toMatch(/createTimeoutMs \(100 ms\)/);
    // Past the backoff, a new create serves the caller.
    await clock.advance(20);
    // Ids are given as connections are made: the held create has made none yet.
    expect((caller.value as L).connection.id).toBe(1);
    connector.releaseCreate(); // the slow one lands late
    await flush();
    expect(connector.created).toBe(2);
    expect(connector.liveIds()).toEqual([(caller.value as L).connection.id]);
    (caller.value as L).release();
    await pool.close();
    expect(connector.live.size).toBe(0);
  });

  it('aborts the create signal when the create times out', async () => {
    const { pool, connector, clock } = makePool({ createTimeoutMs: 50, minSize: 1 });
    connector.createSteps.push({ kind: 'hold' });
    void pool.warmup().catch(() => {});
    await flush();
    const { signal } = connector.heldCreates[0]!.ctx!;
    expect(signal.aborted).toBe(false);
    await clock.advance(50);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(ConnectionFailedError);
    connector.releaseCreate(new Error('aborted'));
    await flush();
    expect(pool.stats().counters.createFailures).toBe(1);
    await pool.close();
  });
});

describe('create failures', () => {
  it('backs off exponentially from createBackoffMs up to maxCreateBackoffMs', async () => {
    const { pool, connector, clock } = makePool({ createBackoffMs: 10, maxCreateBackoffMs: 40, blockingPeriod: false });
    for (let i = 0; i < 100; i++) connector.createSteps.push({ kind: 'fail' });
    const caller = track(pool.acquire({ timeoutMs: 1_000 }));
    await clock.advance(999);
    // Attempts at 0, 10, 30, 70, then every 40 ms: 4 + floor((999 - 70) / 40) = 27.
    expect(pool.stats().counters.createsStarted).toBe(27);
    await clock.advance(1);
    expect(caller.error).toBeInstanceOf(ConnectionsExhaustedError);
    expect(caller.error).toMatchObject({ reason: 'creates-failing' });
    expect((caller.error as Error).cause).toBeInstanceOf(ConnectionFailedError);
    expect(((caller.error as Error).cause as Error).cause).toMatchObject({ message: 'connect ECONNREFUSED' });
    await pool.close();
  });

  it('recovers once creates succeed again and resets the failure streak', async () => {
    const { pool, connector, clock } = makePool({ blockingPeriod: false });
    connector.createSteps.push({ kind: 'fail' }, { kind: 'fail' });
    const caller = track(pool.acquire({ timeoutMs: 1_000 }));
    await clock.advance(50);
    expect(caller.value).toBeDefined();
    expect(pool.stats()).toMatchObject({ failureStreak: 0, health: 'healthy' });
    (caller.value as L).release();
    await pool.close();
  });
});

describe('idle expiry, lifetime and minSize', () => {
  it.each([
    [1_000, 1_000],
    [100, 500],
  ])(
    'with reapIntervalMs %i, a 500 ms lifetime ends at the first check after it: %i ms',
    async (reapIntervalMs, rotatedAt) => {
      const { pool, clock } = makePool({ maxSize: 1, minSize: 1, maxLifetimeMs: 500, reapIntervalMs });
      await pool.warmup();
      await clock.advance(rotatedAt - 1);
      expect(pool.stats().counters.createsStarted).toBe(1);
      await clock.advance(1);
      expect(pool.stats().counters.createsStarted).toBe(2); // the replacement opens at the check
      await pool.close();
    },
  );

  it('closes a connection idle for maxIdleMs, counting from when its last client left', async () => {
    const { pool, connector, clock } = makePool({ maxIdleMs: 5_000, reapIntervalMs: 1_000 });
    const lease = await pool.acquire();
    await clock.advance(10_000); // in use: never idle-expired
    expect(connector.live.size).toBe(1);
    lease.release();
    await clock.advance(4_000);
    expect(connector.live.size).toBe(1);
    await clock.advance(2_000);
    expect(connector.live.size).toBe(0);
    expect(pool.stats().counters.retired).toBe(1);
    await pool.close();
  });

  it('dates an idle connection from its release, read once at the end of the turn: idle 0 ms until then', async () => {
    const { pool, clock } = makePool({ maxIdleMs: 5_000, reapIntervalMs: 1_000 });
    await clock.advance(250);
    const lease = await pool.acquire();
    lease.release();
    expect(pool.stats().connections[0]!.idleMs).toBe(0); // not dated yet: idle for no time, never less
    await clock.advance(1_500);
    expect(pool.stats().connections[0]!.idleMs).toBe(1_500); // from the release, not from the stamp
    await pool.close();
  });

  it('reads the clock once for every connection idled in one turn of the event loop, not once per release', async () => {
    let reads = 0;
    const counting = { ...systemClock, now: () => (reads++, performance.now()) };
    // No validate(): nothing else reads the clock on this path.
    const pool = new ConnectionPool(
      { create: async () => ({}) },
      { name: 'reads', clock: counting, maxSize: 4, minSize: 4 },
    );
    await pool.warmup();
    const before = reads;
    for (let i = 0; i < 1_000; i++) {
      const leases = await Promise.all([pool.acquire(), pool.acquire(), pool.acquire()]);
      for (const lease of leases) lease.release();
    }
    expect(reads - before).toBeLessThanOrEqual(1); // 3,000 releases to idle, one turn (the stamp may not have run yet)
    await new Promise((resolve) => setImmediate(resolve));
    expect(reads - before).toBe(1);
    expect(pool.stats().connections.filter((c) => c.idleMs >= 0 && c.clients === 0)).toHaveLength(4);
    await pool.close();
  });

  it('keeps minSize connections open through idle expiry and tops up after a close', async () => {
    const { pool, connector, clock } = makePool({ minSize: 2, maxIdleMs: 1_000 });
    await pool.warmup();
    expect(connector.created).toBe(2);
    await clock.advance(5_000);
    expect(connector.live.size).toBe(2);
    const lease = await pool.acquire();
    lease.fail(new Error('broken pipe'));
    await flush();
    expect(connector.created).toBe(3);
    expect(pool.stats().ready).toBe(2);
    await pool.close();
  });

  it('rotates a connection past its lifetime by opening the replacement first', async () => {
    const { pool, connector, clock } = makePool({
      maxLifetimeMs: 10_000,
      reapIntervalMs: 1_000,
      clientLimit: 5,
      maxSize: 1,
    });
    const lease = await pool.acquire();
    connector.createSteps.push({ kind: 'hold' });
    await clock.advance(10_000);
    // The old connection keeps serving while its replacement opens, even at maxSize 1.
    expect(pool.stats()).toMatchObject({ opening: 1, ready: 1, size: 1 });
    const meanwhile = await pool.acquire();
    expect(meanwhile.connection.id).toBe(1);
    connector.releaseCreate();
    await flush();
    expect(pool.stats()).toMatchObject({ ready: 1, draining: 1 });
    const next = await pool.acquire();
    expect(next.connection.id).toBe(2);
    lease.release();
    meanwhile.release();
    await flush();
    expect(connector.liveIds()).toEqual([2]);
    next.release();
    await pool.close();
  });

  it('an idle connection past its lifetime in a pool above minSize is let go, not replaced: no churn while nobody calls', async () => {
    const { pool, connector, clock } = makePool({
      maxSize: 3,
      clientLimit: 1,
      maxLifetimeMs: 1_000,
      maxIdleMs: 30_000,
      reapIntervalMs: 100,
    });
    const leases = await Promise.all([pool.acquire(), pool.acquire(), pool.acquire()]);
    for (const lease of leases) lease.release();
    await clock.advance(12_000);
    expect(connector.created).toBe(3);
    expect(connector.live.size).toBe(0);
    expect(pool.stats().counters.retiredBy).toMatchObject({ lifetime: 3, idle: 0 });
    await pool.close();
  });

  it('past its lifetime, one kept for minSize is replaced first, and the rest let go', async () => {
    const { pool, connector, clock } = makePool({
      maxSize: 3,
      minSize: 1,
      clientLimit: 1,
      maxLifetimeMs: 1_000,
      maxIdleMs: 30_000,
      reapIntervalMs: 100,
    });
    const leases = await Promise.all([pool.acquire(), pool.acquire(), pool.acquire()]);
    for (const lease of leases) lease.release();
    await clock.advance(1_100);
    await flush();
    expect(pool.stats()).toMatchObject({ ready: 1 });
    // Over 12 lifetimes, one connection at a time: one replacement each, never none open.
    for (let i = 0; i < 12; i++) {
      await clock.advance(1_000);
      await flush();
      expect(pool.stats().ready).toBeGreaterThanOrEqual(1);
    }
    expect(connector.created).toBeLessThanOrEqual(3 + 13);
    expect(connector.live.size).toBe(1);
    await pool.close();
  });

  it.each([1, 3])(
    'maxUses %i: a connection is retired after serving that many checkouts, and the next caller gets a fresh one',
    async (maxUses) => {
      const { pool, connector } = makePool({ maxSize: 1, clientLimit: 1, maxUses });
      const served: number[] = [];
      for (let i = 0; i < 2 * maxUses; i++) {
        const lease = await pool.acquire();
        served.push(lease.connection.id);
        lease.release();
        await flush();
      }
      expect(served).toEqual([...Array(maxUses).fill(1), ...Array(maxUses).fill(2)]);
      expect(pool.stats().counters.retiredBy.lifetime).toBe(2);
      expect(connector.liveIds()).toEqual([]);
      await pool.close();
    },
  );

  it('maxUses with waiters queued: the retired connection serves none of them, a new one does', async () => {
    const { pool } = makePool({ maxSize: 1, clientLimit: 1, maxUses: 1 });
    const first = await pool.acquire();
    const next = pool.acquire();
    first.release();
    const second = await next;
    expect(second.connection.id).toBe(2);
    second.release();
    await pool.close();
  });

  it('jitters lifetimes by ±lifetimeJitter', async () => {
    const { pool, clock } = makePool({
      maxLifetimeMs: 100_000,
      lifetimeJitter: 0.025,
      minSize: 40,
      maxSize: 40,
      reapIntervalMs: 100,
    });
    await pool.warmup();
    await clock.advance(97_400);
    expect(pool.stats().counters.retired).toBe(0);
    await clock.advance(5_300);
    expect(pool.stats().counters.retired).toBe(40);
    await pool.close();
  });
});

describe('validation', () => {
  it('validates a connection idle past validateAfterIdleMs before handing it out', async () => {
    const { pool, connector, clock } = makePool({ validateAfterIdleMs: 1_000 });
    (await pool.acquire()).release();
    await clock.advance(500);
    (await pool.acquire()).release();
    expect(connector.validateCalls).toBe(0);
    await clock.advance(1_000);
    const lease = await pool.acquire();
    expect(connector.validateCalls).toBe(1);
    expect(lease.connection.id).toBe(1);
    lease.release();
    await pool.close();
  });

  it('retires a connection that fails validation and serves the caller from a new one', async () => {
    const { pool, connector, clock } = makePool({ validateAfterIdleMs: 1_000 });
    (await pool.acquire()).release();
    await clock.advance(2_000);
    connector.validateResult = new Error('socket hang up');
    const lease = await pool.acquire();
    expect(lease.connection.id).toBe(2);
    expect(pool.stats().counters.validationFailures).toBe(1);
    expect(connector.live.size).toBe(1);
    lease.release();
    await pool.close();
  });
});

describe('refresh and close', () => {
  it('refresh retires every connection; in-use ones close when their last client leaves', async () => {
    const { pool, connector } = makePool({ clientLimit: 1, maxSize: 2, growAt: 1 });
    const held = await pool.acquire();
    (await pool.acquire()).release();
    pool.refresh();
    await flush();
    expect(connector.live.size).toBe(1);
    expect(held.connection.closed).toBe(false);
    const fresh = await pool.acquire();
    expect(fresh.connection.id).toBe(3);
    held.release();
    await flush();
    expect(connector.liveIds()).toEqual([3]);
    fresh.release();
    await pool.close();
  });

  it('close rejects queued waiters, lets leases finish within graceMs, then closes everything', async () => {
    const { pool, connector } = makePool({ clientLimit: 1, maxSize: 1 });
    const held = await pool.acquire();
    const waiter = track(pool.acquire());
    const closed = track(pool.close({ graceMs: 1_000 }));
    await flush();
    expect(waiter.error).toBeInstanceOf(PoolClosedError);
    expect(held.connection.closed).toBe(false);
    held.release();
    await flush();
    expect(closed.settled).toBe(true);
    expect(connector.live.size).toBe(0);
  });

  it('close force-closes connections still leased after graceMs; a late release is harmless', async () => {
    const { pool, connector, clock } = makePool({ clientLimit: 1, maxSize: 1 });
    const held = await pool.acquire();
    const closed = track(pool.close({ graceMs: 1_000 }));
    await clock.advance(1_000);
    expect(closed.settled).toBe(true);
    expect(connector.live.size).toBe(0);
    held.release();
    held.release();
    expect(pool.stats()).toMatchObject({ clients: 0, counters: { closed: 1 } });
  });

  it('close is idempotent', async () => {
    const { pool } = makePool();
    const a = pool.close();
    expect(pool.close()).toBe(a);
    await a;
  });
});

// Reset on return: a connection goes back clean or not at all.
import { describe, expect, it } from '@jest/globals';
import { ConnectionPool, PoolConfigError, type Connector, type ResetContext } from '../../lib/index.js';
import { configError, RecordingLogger, track } from '../support/harness.js';
import { flush, VirtualClock } from '../support/virtual-clock.js';

/** A connection that remembers what its callers left on it. */
interface Conn {
  readonly id: number;
  /** State a caller left behind (an open transaction, a session setting). */
  dirty: boolean;
  closed: number;
}

type ResetFn = (conn: Conn, ctx: ResetContext) => boolean | void | Promise<boolean | void>;

/** An exclusive connector whose reset() the test writes; it records every reset call. */
function resettingConnector(reset: ResetFn) {
  const made: Conn[] = [];
  const calls: { id: number; failed: boolean }[] = [];
  const connector: Connector<Conn> = {
    clientLimit: 1,
    create: async () => {
      const conn = { id: made.length + 1, dirty: false, closed: 0 };
      made.push(conn);
      return conn;
    },
    close: (conn) => void conn.closed++,
    isFatal: (err) => err instanceof Error && err.message === 'socket broke',
    reset: (conn, ctx) => {
      calls.push({ id: conn.id, failed: ctx.failed });
      return reset(conn, ctx);
    },
  };
  return { connector, made, calls };
}

function poolOf(
  reset: ResetFn,
  options: { maxSize?: number; resetTimeoutMs?: number; leakDetectionMs?: number } = {},
  clock = new VirtualClock(),
) {
  const logger = new RecordingLogger();
  const { connector, made, calls } = resettingConnector(reset);
  const pool = new ConnectionPool(connector, {
    name: 'reset',
    clock,
    logger,
    maxSize: options.maxSize ?? 1,
    ...options,
  });
  return { pool, clock, logger, made, calls };
}

/** A reset that answers at once from what the connection knows of itself. */
const cleanAtOnce: ResetFn = (conn) => {
  conn.dirty = false;
};

/** A reset that needs a round trip (a ROLLBACK) when the connection is dirty, and none when it is clean. */
function roundTrip(clock: VirtualClock, ms: number): ResetFn {
  return (conn) => {
    if (!conn.dirty) return true;
    return new Promise<boolean>((resolve) => clock.setTimeout(() => resolve(!(conn.dirty = false)), ms));
  };
}

describe('reset on return', () => {
  it('cleans an exclusive connection before its next caller, told whether the caller threw', async () => {
    const { pool, calls } = poolOf(cleanAtOnce);
    await pool.use((conn) => void (conn.dirty = true));
    await expect(
      pool.use((conn) => {
        expect(conn.dirty).toBe(false);
        conn.dirty = true;
        throw new Error('a plain bug before COMMIT');
      }),
    ).rejects.toThrow('a plain bug');
    const lease = await pool.acquire();
    expect(lease.connection.dirty).toBe(false);
    lease.release();
    expect(calls).toEqual([
      { id: 1, failed: false },
      { id: 1, failed: true },
      { id: 1, failed: false },
    ]);
    expect(pool.stats().counters).toMatchObject({ resets: 0, resetFailures: 0, released: 3 });
    await pool.close();
  });

  it('a reset answered at once hands the connection to the queued caller in the same turn', async () => {
    const { pool } = poolOf(cleanAtOnce);
    const first = await pool.acquire();
    const second = track(pool.acquire());
    await flush();
    first.release();
    await Promise.resolve();
    await Promise.resolve();
    expect(second.settled).toBe(true);
    expect(pool.stats().counters.resets).toBe(0);
    (second.value as { release(): void }).release();
    await pool.close();
  });

  it('a reset with a round trip keeps the connection from the next caller until it is clean', async () => {
    const clock = new VirtualClock();
    const { pool } = poolOf(roundTrip(clock, 50), {}, clock);
    const first = await pool.acquire();
    first.connection.dirty = true;
    const second = track(pool.acquire());
    first.release();
    await flush();
    expect(second.settled).toBe(false);
    expect(pool.stats().connections).toEqual([expect.objectContaining({ clients: 1, resetting: true })]);
    expect(pool.stats().clients).toBe(1); // the reset holds the caller's slot
    await clock.advance(50);
    expect(second.settled).toBe(true);
    const lease = second.value as { connection: Conn; release(): void };
    expect(lease.connection).toMatchObject({ id: 1, dirty: false });
    expect(pool.stats().counters).toMatchObject({ resets: 1, resetFailures: 0 });
    lease.release(); // clean: answered at once
    expect(pool.stats().counters.resets).toBe(1);
    expect(pool.stats().connections).toEqual([expect.objectContaining({ clients: 0, resetting: false })]);
    await pool.close();
  });

  it.each([
    ['returns false', (() => false) as ResetFn],
    [
      'throws',
      (() => {
        throw new Error('ROLLBACK failed: connection terminated');
      }) as ResetFn,
    ],
    ['rejects', (() => Promise.reject(new Error('ROLLBACK failed'))) as ResetFn],
    ['resolves false', (() => Promise.resolve(false)) as ResetFn],
    ['rejects with nothing', (() => Promise.reject(undefined)) as ResetFn],
  ])('a reset that %s retires the connection: it is closed and never handed out again', async (_, reset) => {
    const { pool, made, logger } = poolOf(reset);
    const first = await pool.acquire();
    first.connection.dirty = true;
    const next = track(pool.acquire());
    first.release();
    await flush();
    expect(next.settled).toBe(true);
    const lease = next.value as { connection: Conn; release(): void };
    expect(lease.connection.id).toBe(2);
    expect(made[0]!.closed).toBe(1);
    const { counters } = pool.stats();
    expect(counters.resetFailures).toBe(1);
    expect(counters.retiredBy.reset).toBe(1);
    expect(logger.warnings.join('\n')).toMatch(/connection 1 retired, not reset/);
    lease.release();
    await pool.close();
    expect(made.map((c) => c.closed)).toEqual([1, 1]);
  });

  it('a reset that hangs is given up at resetTimeoutMs: its connection is retired, the pool serves on', async () => {
    const { pool, clock, made } = poolOf(() => new Promise<boolean>(() => {}), { resetTimeoutMs: 1_000 });
    const first = await pool.acquire();
    const next = track(pool.acquire({ timeoutMs: 5_000 }));
    first.release();
    await clock.advance(999);
    expect(next.settled).toBe(false);
    await clock.advance(1);
    expect(next.settled).toBe(true);
    expect((next.value as { connection: Conn }).connection.id).toBe(2);
    expect(made[0]!.closed).toBe(1);
    expect(pool.stats().counters).toMatchObject({ resets: 1, resetFailures: 1 });
    (next.value as { release(): void }).release();
    await pool.close();
  });

  it('a reset that settles after its timeout changes nothing', async () => {
    let settle!: (clean: boolean) => void;
    const { pool, clock, made } = poolOf(() => new Promise<boolean>((resolve) => (settle = resolve)), {
      resetTimeoutMs: 100,
    });
    (await pool.acquire()).release();
    await clock.advance(100);
    settle(true);
    await flush();
    expect(made[0]!.closed).toBe(1);
    expect(pool.stats()).toMatchObject({ clients: 0, size: 0, counters: { resetFailures: 1, retired: 1 } });
    await pool.close();
  });

  it('close() does not wait for a reset: the connection closes once, close() settles at once', async () => {
    const { pool, clock, made } = poolOf(() => new Promise<boolean>(() => {}), { resetTimeoutMs: 60_000 });
    (await pool.acquire()).release();
    const closing = track(pool.close({ graceMs: 30_000 }));
    await flush();
    expect(closing.settled).toBe(true);
    expect(made[0]!.closed).toBe(1);
    expect(pool.stats()).toMatchObject({ clients: 0, size: 0 });
    await clock.advance(60_000);
    expect(made[0]!.closed).toBe(1);
  });

  it('a failed lease and a fatal error retire the connection without a reset', async () => {
    const { pool, calls, made } = poolOf(cleanAtOnce, { maxSize: 2 });
    (await pool.acquire()).fail(new Error('broken'));
    await expect(pool.use(() => Promise.reject(new Error('socket broke')))).rejects.toThrow('socket broke');
    expect(calls).toEqual([]);
    await flush();
    expect(made.slice(0, 2).map((c) => c.closed)).toEqual([1, 1]); // a third may have opened ahead of demand
    await pool.close();
  });

  it('a connection retired while in use (refresh) is closed on return, not reset', async () => {
    const { pool, calls, made } = poolOf(cleanAtOnce);
    const lease = await pool.acquire();
    pool.refresh();
    lease.release();
    await flush();
    expect(calls).toEqual([]);
    expect(made[0]!.closed).toBe(1);
    await pool.close();
  });

  it('reset failures never open the breaker of failing creates', async () => {
    const { pool } = poolOf(() => false);
    for (let i = 0; i < 20; i++) await pool.use(() => undefined);
    expect(pool.stats()).toMatchObject({
      breaker: 'closed',
      failureStreak: 0,
      counters: { resetFailures: 20, opened: 20 },
    });
    await pool.close();
  });

  it("the reset's time is not the lease's: leak detection sees no lease held", async () => {
    const clock = new VirtualClock();
    const env = poolOf(roundTrip(clock, 10_000), { leakDetectionMs: 1_000, resetTimeoutMs: 20_000 }, clock);
    await env.pool.use((conn) => void (conn.dirty = true));
    await clock.advance(5_000);
    expect(env.pool.stats()).toMatchObject({ oldestLeaseMs: 0, counters: { leaks: 0 } });
    await clock.advance(5_000);
    expect(env.pool.stats().counters).toMatchObject({ resets: 1, resetFailures: 0 });
    await env.pool.close();
  });
});

describe('reset options', () => {
  const connector = (extra: object = {}) => ({ ...resettingConnector(cleanAtOnce).connector, ...extra });

  it('a connector with reset() refuses a shared clientLimit, saying what to change', () => {
    const err = configError(() => new ConnectionPool(connector(), { name: 'shared', clientLimit: 20 }));
    expect(err.message).toMatch(/clientLimit.*\(20\) must be 1 for a connector with reset\(\).*Set clientLimit: 1/);
    expect(configError(() => new ConnectionPool(connector({ clientLimit: 5 }), { name: 'declared' })).message).toMatch(
      /\(5\) must be 1/,
    );
  });

  it.each([0, -1, Infinity, Number.NaN, '5000'])('resetTimeoutMs %p is refused', (value) => {
    const err = configError(() => new ConnectionPool(connector(), { name: 'bad', resetTimeoutMs: value as number }));
    expect(err.message).toMatch(/resetTimeoutMs/);
  });

  it('a reset that is not a function is refused', () => {
    expect(() => new ConnectionPool(connector({ reset: 'ROLLBACK' }), { name: 'bad' })).toThrow(PoolConfigError);
  });
});

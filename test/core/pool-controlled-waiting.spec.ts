// Controlled waiting in the pool's own queue (`waiting: { mode: 'controlled' }`): once the pool is
// at maxSize and every connection is busy, a queue that stands (its shortest wait above the mean
// hold for a whole interval) refuses a newcomer at once with QueueFullError, reason `standing`,
// unless it would serve it within the target; a burst that drains is served whole. The default
// stays FIFO to the deadline, as pg-pool, HikariCP, generic-pool and tarn. On virtual time.
import { describe, expect, it } from '@jest/globals';
import { ConnectionPool, PoolClosedError, PoolConfigError, type PoolOptions, QueueFullError } from '../../lib/index.js';
import { FakeConnector } from '../support/fake-connector.js';
import { VirtualClock } from '../support/virtual-clock.js';

const quiet = { info() {}, warn() {}, error() {} };

interface Caller {
  readonly arrived: number;
  at: number;
  served: boolean;
  error?: unknown;
}

/** Acquires within `timeoutMs`; once served, holds the connection `holdMs` and releases it. */
function call<T>(pool: ConnectionPool<T>, clock: VirtualClock, holdMs: number, timeoutMs: number): Caller {
  const caller: Caller = { arrived: clock.now(), at: NaN, served: false };
  pool.acquire({ timeoutMs }).then(
    (lease) => {
      Object.assign(caller, { at: clock.now(), served: true });
      clock.setTimeout(() => lease.release(), holdMs);
    },
    (error: unknown) => Object.assign(caller, { at: clock.now(), error }),
  );
  return caller;
}

/** A warm pool of 4 exclusive connections, callers every `everyMs` holding one `holdMs`, for `untilMs`. */
async function overload(options: PoolOptions, { everyMs = 2.5, holdMs = 20, timeoutMs = 1_000, untilMs = 6_000 } = {}) {
  const clock = new VirtualClock();
  const pool = new ConnectionPool(new FakeConnector(), {
    maxSize: 4,
    clientLimit: 1,
    clock,
    logger: quiet,
    ...options,
  });
  await pool.warmup();
  const callers: Caller[] = [];
  for (let t = 0; t < untilMs; t += everyMs) {
    callers.push(call(pool, clock, holdMs, timeoutMs));
    await clock.advance(everyMs);
  }
  const during = pool.stats();
  await clock.advance(timeoutMs + holdMs);
  await pool.close();
  return { callers, during };
}

/** A warm pool of `size` exclusive connections with controlled waiting, on virtual time. */
async function warmControlled(size: number) {
  const clock = new VirtualClock();
  const pool = new ConnectionPool(new FakeConnector(), {
    maxSize: size,
    minSize: size,
    clientLimit: 1,
    clock,
    logger: quiet,
    waiting: { mode: 'controlled' },
  });
  await pool.warmup();
  return { clock, pool };
}

const waits = (callers: Caller[], from: number) =>
  callers.filter((c) => c.served && c.arrived >= from).map((c) => c.at - c.arrived);
const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(0.99 * (xs.length - 1))]!;

describe("controlled waiting in the pool's queue", () => {
  it('at twice the capacity, serves callers within about a hold where FIFO makes them wait the whole deadline', async () => {
    // 4 connections held 20 ms: 200 a second; callers at 400 a second, a 1 s deadline.
    const fifo = await overload({});
    const controlled = await overload({ waiting: { mode: 'controlled' } });
    expect(Math.min(...waits(fifo.callers, 2_000))).toBeGreaterThan(900);
    expect(p99(waits(controlled.callers, 2_000))).toBeLessThanOrEqual(25);
    // As many served while callers arrive: the capacity is not given up. (After, FIFO still
    // serves its standing backlog of a second's callers, for as long again.)
    const served = (cs: Caller[]) => cs.filter((c) => c.served && c.at < 6_000).length;
    expect(served(controlled.callers)).toBeGreaterThanOrEqual(0.97 * served(fifo.callers));
    // Refused at once, never at the deadline, with what to tell the caller.
    const refused = controlled.callers.filter((c) => !c.served);
    expect(refused.length).toBeGreaterThan(0);
    for (const c of refused) {
      expect(c.error).toBeInstanceOf(QueueFullError);
      expect((c.error as QueueFullError).reason).toBe('standing');
      expect(c.at - c.arrived).toBe(0);
    }
    const error = refused[refused.length - 1]!.error as QueueFullError;
    expect(error.retryAfterMs).toBeGreaterThan(0);
    expect(error.retryAfterMs).toBeLessThan(1_000);
    expect(error.message).toMatch(/queue stands .* target of 20 ms/);
    expect(controlled.during.standing).toMatchObject({ standing: true, targetMs: 20, stood: 1 });
    expect(controlled.during.standing!.shed).toBe(refused.length);
    // FIFO reports no standing state, and times its callers out at their deadline.
    expect(fifo.during.standing).toBeUndefined();
    expect(fifo.callers.filter((c) => !c.served).every((c) => c.at - c.arrived >= 1_000)).toBe(true);
  });

  it('absorbs a burst after a calm: every caller served, none refused', async () => {
    const { clock, pool } = await warmControlled(4);
    // 40 callers at once on 4 connections, 20 ms each: the last is served after 180 ms, within the interval.
    const callers = Array.from({ length: 40 }, () => call(pool, clock, 20, 1_000));
    await clock.advance(1_000);
    expect(callers.every((c) => c.served)).toBe(true);
    expect(pool.stats().standing).toMatchObject({ standing: false, stood: 0, shed: 0 });
    await pool.close();
  });

  it('sheds nothing while the pool may still open connections: callers wait for them', async () => {
    const clock = new VirtualClock();
    const connector = new FakeConnector();
    const pool = new ConnectionPool(connector, {
      maxSize: 4,
      clientLimit: 1,
      clock,
      logger: quiet,
      waiting: { mode: 'controlled', targetMs: 1, intervalMs: 10 },
    });
    // Every create hangs: 4 open, none ready, and callers queue for them for 2 s.
    for (let i = 0; i < 4; i++) connector.createSteps.push({ kind: 'hold' });
    const callers: Caller[] = [];
    for (let t = 0; t < 2_000; t += 10) {
      callers.push(call(pool, clock, 20, 5_000));
      await clock.advance(10);
    }
    expect(callers.some((c) => c.error !== undefined)).toBe(false);
    expect(pool.stats().waiting).toBe(callers.length);
    await pool.close();
    expect(callers.every((c) => c.error instanceof PoolClosedError)).toBe(true);
  });

  it('closes in the middle of a standing queue: every waiter gets PoolClosedError, every caller an answer', async () => {
    const { clock, pool } = await warmControlled(2);
    const callers: Caller[] = [];
    for (let t = 0; t < 3_000; t += 2) {
      callers.push(call(pool, clock, 20, 60_000));
      await clock.advance(2);
    }
    expect(pool.stats().standing?.standing).toBe(true);
    const closing = pool.close({ graceMs: 100 });
    await clock.advance(200);
    await closing;
    const unanswered = callers.filter((c) => !c.served && c.error === undefined);
    expect(unanswered).toEqual([]);
    const errors = new Set(callers.filter((c) => !c.served).map((c) => (c.error as Error).constructor.name));
    expect([...errors].sort()).toEqual(['PoolClosedError', 'QueueFullError']);
  });

  it.each([
    [{ mode: 'lifo' }, 'waiting.mode'],
    [{ targetMs: 0 }, 'waiting.targetMs'],
    [{ intervalMs: Infinity }, 'waiting.intervalMs'],
    [{ target: 5 }, 'target'],
  ])('refuses waiting %j with a PoolConfigError naming %s', (waiting, field) => {
    const make = () => new ConnectionPool(new FakeConnector(), { waiting: waiting as PoolOptions['waiting'] });
    expect(make).toThrow(PoolConfigError);
    expect(make).toThrow(field);
  });
});

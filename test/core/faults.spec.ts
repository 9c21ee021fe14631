// One test per engine bug the hostile review found, named after the behaviour it protects.
import { describe, expect, it } from '@jest/globals';
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  CapacityExceededError,
  ConnectionFailedError,
  ConnectionPool,
  ConnectionsExhaustedError,
  LocalLimiter,
  PoolClosedError,
  PoolConfigError,
  PoolContextError,
  QueueFullError,
  SelfDeadlockError,
  systemClock,
  type Admission,
  type AdmissionLimiter,
  type AdmissionStats,
  type AdmissionRequest,
  type Clock,
  type Connector,
  type Lease,
} from '../../lib/index.js';
import { FakeConnector, type FakeConnection } from '../support/fake-connector.js';
import { makePool, RecordingLogger, track } from '../support/harness.js';
import { flush, VirtualClock } from '../support/virtual-clock.js';
import { sleep } from '../support/wait.js';

/** What a hand-made limiter of these tests reports: one slot, none used. */
const idleLimiterStats: AdmissionStats = {
  mode: 'local',
  used: 0,
  limit: 1,
  perKey: Infinity,
  utilization: 0,
  health: 'healthy',
  held: 0,
  waiting: 0,
  counters: { admitted: 0, released: 0, refusedGlobal: 0, refusedKey: 0, lost: 0 },
};

type L = Lease<FakeConnection>;

/** A pool behind a limiter (by default a LocalLimiter of one slot whose callers wait), on virtual time. */
function limitedPool<Lim extends AdmissionLimiter = LocalLimiter>(
  make: (clock: VirtualClock) => Lim = (clock) => new LocalLimiter({ global: 1, wait: true, clock }) as unknown as Lim,
) {
  const clock = new VirtualClock();
  const limiter = make(clock);
  const pool = new ConnectionPool(new FakeConnector(), { name: 'test', clock, logger: new RecordingLogger(), limiter });
  return { pool, clock, limiter };
}

describe('validation', () => {
  it('validateAfterIdleMs 0 validates a used connection once before its next caller, never one just opened or validated', async () => {
    const connector = new FakeConnector();
    let calls = 0;
    // Past a few calls, validate() yields to timers so that a validation loop cannot starve the test.
    connector.validate = () => (++calls > 20 ? sleep(1).then(() => true) : true);
    const { pool } = makePool({ validateAfterIdleMs: 0 }, connector);
    const first = track(pool.acquire());
    await flush();
    expect(first.settled).toBe(true);
    expect(calls).toBe(0);
    const lease = first.value as L;
    lease.release();
    const second = track(pool.acquire());
    await flush();
    expect((second.value as L).connectionId).toBe(lease.connectionId);
    expect(calls).toBe(1);
    (second.value as L).release();
    await pool.close();
  });

  it('setClientLimit during validate never files the connection twice: callers stay within the limit and a retired one is never handed out', async () => {
    const { pool, connector, clock } = makePool({ clientLimit: 2, maxSize: 2, validateAfterIdleMs: 10 });
    const a = await pool.acquire();
    const conn = a.connection;
    a.release();
    await clock.advance(20);
    connector.holdValidation = true;
    // The caller is served by a new connection while the old one is being validated.
    const b = await pool.acquire();
    expect(b.connection).not.toBe(conn);
    expect(connector.heldValidations).toHaveLength(1);
    conn.ctx.setClientLimit(2);
    connector.releaseValidation(true);
    await flush();
    expect(connector.validateCalls).toBe(1);
    const more = [
      track(pool.acquire()),
      track(pool.acquire()),
      track(pool.acquire()),
      track(pool.acquire({ timeoutMs: 50 })),
    ];
    await flush();
    expect(more.map((m) => m.value !== undefined)).toEqual([true, true, true, false]);
    for (const c of pool.stats().connections) expect(c.clients).toBeLessThanOrEqual(c.clientLimit);
    await clock.advance(50);
    expect(more[3]!.error).toBeInstanceOf(ConnectionsExhaustedError);
    for (const m of more.slice(0, 3)) (m.value as L).release();
    b.release();
    conn.ctx.retire('broken');
    await flush();
    expect(conn.closed).toBe(true);
    const held = [await pool.acquire(), await pool.acquire(), await pool.acquire()];
    expect(held.every((l) => l.connection !== conn)).toBe(true);
    for (const l of held) l.release();
    await pool.close();
  });

  it('close() closes a connection whose validate() hangs, and resolves', async () => {
    const { pool, connector, clock } = makePool({ validateAfterIdleMs: 10, maxSize: 1, clientLimit: 1 });
    (await pool.acquire()).release();
    await clock.advance(20);
    connector.holdValidation = true;
    const caller = track(pool.acquire());
    await flush();
    expect(connector.heldValidations).toHaveLength(1);
    const closing = track(pool.close({ graceMs: 100 }));
    await clock.advance(100);
    expect(closing.settled).toBe(true);
    expect(caller.error).toBeInstanceOf(PoolClosedError);
    expect(connector.live.size).toBe(0);
    connector.releaseValidation(true);
    await flush();
    expect(connector.closedCount).toBe(1);
    expect(clock.pending).toBe(0);
  });

  it('a validate() that never settles counts as a failed validation after validateTimeoutMs', async () => {
    const { pool, connector, clock } = makePool({ validateAfterIdleMs: 10, validateTimeoutMs: 500 });
    const first = await pool.acquire();
    const id = first.connectionId;
    first.release();
    await clock.advance(20);
    connector.holdValidation = true;
    const caller = track(pool.acquire());
    await clock.advance(500);
    expect(pool.stats().counters.validationFailures).toBe(1);
    expect((caller.value as L).connectionId).not.toBe(id);
    (caller.value as L).release();
    await pool.close();
  });
});

describe('scopes end with their use()', () => {
  it('a task that outlives its use() takes its own lease and has no pool.current', async () => {
    const { pool } = makePool({ clientLimit: 1, maxSize: 2 });
    let later!: Promise<number>;
    await pool.use(async () => {
      later = sleep(5).then(() => {
        expect(() => pool.current).toThrow(PoolContextError);
        return pool.use(() => pool.stats().clients);
      });
    });
    expect(await later).toBe(1);
    expect(pool.stats()).toMatchObject({ clients: 0, counters: { acquired: 2, released: 2 } });
    await pool.close();
  });

  it('a task that outlives its use() cannot reach a closed pool through the stale scope', async () => {
    const { pool } = makePool();
    let later!: Promise<unknown>;
    await pool.use(async () => {
      later = sleep(5).then(() => pool.use(() => 'ran'));
    });
    await pool.close();
    await expect(later).rejects.toBeInstanceOf(PoolClosedError);
  });

  it('a scope whose connection was force-closed by close() is over', async () => {
    const { pool, clock } = makePool();
    let inside!: () => unknown;
    const used = track(
      pool.use(async () => {
        const inScope = AsyncLocalStorage.snapshot();
        inside = () => inScope(() => pool.current);
        await new Promise(() => {});
      }),
    );
    await flush();
    expect(inside()).toBeDefined();
    const closing = track(pool.close({ graceMs: 10 }));
    await clock.advance(10);
    expect(closing.settled).toBe(true);
    expect(inside).toThrow(PoolContextError);
    expect(used.settled).toBe(false);
  });
});

describe('use() and retry', () => {
  it('a retryOn that throws releases the lease, logs, and rejects with the original error', async () => {
    const { pool, logger } = makePool();
    const boom = new Error('query failed');
    const predicate = () => {
      throw new Error('predicate bug');
    };
    await expect(pool.use(() => Promise.reject(boom), { retry: { attempts: 3, retryOn: predicate } })).rejects.toBe(
      boom,
    );
    expect(pool.stats()).toMatchObject({ clients: 0, counters: { acquired: 1, released: 1 } });
    expect(logger.errors.join('\n')).toMatch(/retryOn threw \(predicate bug\); not retrying/);
    await pool.close();
  });

  it("propagation 'new' inside use() of a pool whose every slot the caller holds fails at once with SelfDeadlockError", async () => {
    const { pool } = makePool({ maxSize: 1, clientLimit: 1 });
    const nested = track(pool.use(() => pool.use(() => 'inner', { propagation: 'new' })));
    await flush();
    expect(nested.error).toBeInstanceOf(SelfDeadlockError);
    expect((nested.error as Error).message).toMatch(/propagation 'reuse'/);
    expect(pool.stats()).toMatchObject({ clients: 0, waiting: 0 });
    await pool.close();
  });

  it("propagation 'new' still waits when another caller's lease will free a slot", async () => {
    const { pool } = makePool({ maxSize: 1, clientLimit: 2 });
    const other = await pool.acquire();
    const nested = track(pool.use(() => pool.use(() => 'inner', { propagation: 'new' })));
    await flush();
    expect(nested.settled).toBe(false);
    other.release();
    await flush();
    expect(nested.value).toBe('inner');
    await pool.close();
  });
});

describe('the queue and close()', () => {
  it('a caller waiting in the limiter when the pool closes fails at once with PoolClosedError and never queues', async () => {
    const { pool, clock, limiter } = limitedPool();
    const held = await pool.acquire();
    const late = track(pool.acquire({ timeoutMs: 10_000 }));
    await flush();
    expect(limiter.stats().waiting).toBe(1);
    const closing = track(pool.close({ graceMs: 1_000 }));
    await flush();
    expect(late.error).toBeInstanceOf(PoolClosedError);
    held.release();
    await clock.advance(10);
    expect(closing.settled).toBe(true);
    expect(pool.stats()).toMatchObject({ waiting: 0, clients: 0 });
    expect(limiter.stats()).toMatchObject({ held: 0, waiting: 0 });
  });

  it('an admission that arrives after close() is given back and the caller gets PoolClosedError', async () => {
    let admit!: (a: Admission) => void;
    let released = 0;
    const limiter: AdmissionLimiter = {
      admit: (_request: AdmissionRequest) => new Promise<Admission>((resolve) => (admit = resolve)), // ignores its signal
      stats: () => idleLimiterStats,
    };
    const { pool } = limitedPool(() => limiter);
    const caller = track(pool.acquire());
    await flush();
    await pool.close();
    admit({ id: 'x', signal: new AbortController().signal, release: () => released++ });
    await flush();
    expect(caller.error).toBeInstanceOf(PoolClosedError);
    expect(released).toBe(1);
    expect(pool.stats().waiting).toBe(0);
  });

  it('maxWaiting 0 lets a cold pool grow and refuses only a caller that would wait for a busy connection', async () => {
    const { pool, connector } = makePool({ maxSize: 2, clientLimit: 1, maxWaiting: 0 });
    connector.createSteps.push({ kind: 'hold' }, { kind: 'hold' });
    const a = track(pool.acquire());
    const b = track(pool.acquire());
    await flush();
    await expect(pool.acquire()).rejects.toBeInstanceOf(QueueFullError);
    connector.releaseCreate();
    connector.releaseCreate();
    await flush();
    expect([a.value, b.value].every((l) => l !== undefined)).toBe(true);
    await expect(pool.acquire()).rejects.toBeInstanceOf(QueueFullError);
    expect(pool.stats()).toMatchObject({ size: 2, clients: 2, waiting: 0 });
    (a.value as L).release();
    (b.value as L).release();
    await pool.close();
  });

  it('a connector close() that never settles does not stop pool.close(): it gives up after closeTimeoutMs and says so', async () => {
    const connector = new FakeConnector();
    connector.close = () => new Promise<void>(() => {}) as unknown as void;
    const { pool, clock, logger } = makePool({ closeTimeoutMs: 500 }, connector);
    (await pool.acquire()).release();
    const closing = track(pool.close({ graceMs: 0 }));
    await clock.advance(499);
    expect(closing.settled).toBe(false);
    await clock.advance(1);
    expect(closing.settled).toBe(true);
    expect(logger.warnings.join('\n')).toMatch(/did not settle within closeTimeoutMs \(500 ms\)/);
    expect(clock.pending).toBe(0);
  });

  it('a create that ignores its abort and arrives after close() resolved is closed at once without ready(); warmup() rejects', async () => {
    const { pool, connector, clock } = makePool({ minSize: 1 });
    connector.createSteps.push({ kind: 'hold' });
    const warm = track(pool.warmup());
    await flush();
    const closing = track(pool.close({ graceMs: 100 }));
    await flush();
    expect(closing.settled).toBe(true);
    expect(warm.error).toBeInstanceOf(PoolClosedError);
    connector.releaseCreate();
    await flush();
    expect(connector.readyCalls).toBe(0);
    expect(connector.created).toBe(1);
    expect(connector.live.size).toBe(0);
    expect(clock.pending).toBe(0);
  });
});

describe('aborted signals', () => {
  it('an already-aborted signal rejects at once even when a connection is free', async () => {
    const { pool } = makePool();
    (await pool.acquire()).release();
    const reason = new Error('caller gone');
    await expect(pool.acquire({ signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    let ran = false;
    await expect(pool.use(() => (ran = true), { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(ran).toBe(false);
    expect(pool.stats()).toMatchObject({ clients: 0, counters: { acquired: 1, aborted: 2 } });
    await pool.close();
  });

  it('an already-aborted signal rejects at once behind a waiting limiter', async () => {
    const { pool, limiter } = limitedPool();
    const held = await pool.acquire();
    const reason = new Error('caller gone');
    const caller = track(pool.acquire({ signal: AbortSignal.abort(reason) }));
    await flush();
    expect(caller.error).toBe(reason);
    const direct = track(limiter.admit({ pool: 'test', timeoutMs: 1_000, signal: AbortSignal.abort(reason) }));
    await flush();
    expect(direct.error).toBe(reason);
    expect(limiter.stats().waiting).toBe(0);
    held.release();
    await pool.close();
  });

  it('a signal aborted while waiting in the limiter rejects at once', async () => {
    const { pool, limiter } = limitedPool();
    const held = await pool.acquire();
    const controller = new AbortController();
    const caller = track(pool.acquire({ signal: controller.signal }));
    await flush();
    controller.abort(new Error('later'));
    await flush();
    expect((caller.error as Error).message).toBe('later');
    held.release();
    await flush();
    expect(limiter.stats()).toMatchObject({ held: 0, waiting: 0 });
    await pool.close();
  });

  it('callers waiting in an in-process limiter cost one timer each, the limiter’s: its deadline and refusal hold', async () => {
    // The pool once raced each such wait with a timer, a hook and a promise of its own, twice what
    // a waiting caller needs: under overload thousands wait, and the young generation's collector
    // copies what they hold, stalling every call in flight.
    const { pool, clock, limiter } = limitedPool();
    const held = await pool.acquire();
    const before = clock.pending;
    const callers = Array.from({ length: 100 }, (_, i) => track(pool.acquire({ timeoutMs: 1_000 + i })));
    const aborts = new AbortController();
    const withSignal = track(pool.acquire({ timeoutMs: 5_000, signal: aborts.signal }));
    await flush();
    expect(limiter.stats().waiting).toBe(101);
    expect(clock.pending - before).toBe(101);
    expect(clock.holds).toBe(1); // the process is held while they wait
    await clock.advance(1_000);
    expect(callers[0]!.error).toBeInstanceOf(CapacityExceededError);
    expect(callers[1]!.settled).toBe(false);
    aborts.abort(new Error('gone'));
    await clock.advance(99);
    expect(callers.every((c) => c.error instanceof CapacityExceededError)).toBe(true);
    expect((withSignal.error as Error).message).toBe('gone');
    expect(limiter.stats().waiting).toBe(0);
    expect(clock.pending).toBe(before);
    expect(clock.holds).toBe(0);
    expect(pool.stats().counters).toMatchObject({ aborted: 1, acquired: 1 });
    held.release();
    await pool.close();
  });
});

describe('creates', () => {
  it('warmup() counts creates already in flight against maxConcurrentCreates', async () => {
    const { pool, connector } = makePool({ minSize: 2, maxSize: 4, maxConcurrentCreates: 1 });
    connector.createSteps.push({ kind: 'hold' }, { kind: 'hold' });
    const caller = track(pool.acquire());
    await flush();
    expect(connector.heldCreates).toHaveLength(1);
    const warm = track(pool.warmup());
    await flush();
    expect(connector.heldCreates).toHaveLength(1);
    connector.releaseCreate();
    await flush();
    expect(connector.heldCreates).toHaveLength(1);
    expect(warm.settled).toBe(false);
    connector.releaseCreate();
    await flush();
    expect(warm.settled).toBe(true);
    expect(warm.error).toBeUndefined();
    expect(pool.stats().ready).toBe(2);
    (caller.value as L).release();
    await pool.close();
  });

  it('a rotation whose replacement fails keeps the old connection serving and retries after the backoff', async () => {
    // minSize 1: the idle connection is one the pool keeps, so it is rotated (a spare one would be let go).
    const { pool, connector, clock } = makePool({
      minSize: 1,
      maxLifetimeMs: 1_000,
      reapIntervalMs: 100,
      createBackoffMs: 300,
      maxCreateBackoffMs: 300,
    });
    const first = await pool.acquire();
    const id = first.connectionId;
    first.release();
    connector.createSteps.push({ kind: 'fail' }, { kind: 'fail' });
    await clock.advance(1_000);
    expect(pool.stats().counters.createFailures).toBe(1);
    expect(pool.health()).toBe('healthy');
    const again = await pool.acquire();
    expect(again.connectionId).toBe(id);
    again.release();
    await clock.advance(300);
    expect(pool.stats().counters.createFailures).toBe(2);
    await clock.advance(300);
    const stats = pool.stats();
    expect(stats.counters).toMatchObject({ createFailures: 2, opened: 2, retired: 1 });
    expect(stats.connections.map((c) => c.state)).toEqual(['ready']);
    expect(stats.connections[0]!.id).not.toBe(id);
    await pool.close();
  });

  it('a connector that resolves the same object twice fails the second create; one caller holds it and it closes once', async () => {
    const shared = { id: 1 };
    let closes = 0;
    const connector: Connector<{ id: number }> = {
      create: async () => shared,
      close: () => {
        closes++;
      },
    };
    const clock = new VirtualClock();
    const pool = new ConnectionPool(connector, {
      name: 'test',
      clock,
      logger: new RecordingLogger(),
      clientLimit: 1,
      maxSize: 2,
    });
    const a = await pool.acquire();
    const b = track(pool.acquire({ timeoutMs: 100 }));
    await flush();
    expect(pool.stats().lastError).toMatch(/resolved to a connection the pool already holds or has closed/);
    await clock.advance(100);
    expect(b.error).toBeInstanceOf(ConnectionsExhaustedError);
    expect(pool.stats().clients).toBe(1);
    a.release();
    await pool.close();
    expect(closes).toBe(1);
  });
});

describe('durations', () => {
  it('accepts Infinity where it means never, and refuses NaN and negative durations with PoolConfigError', async () => {
    const connector = new FakeConnector();
    const pool = new ConnectionPool(connector, {
      createTimeoutMs: Infinity,
      acquireTimeoutMs: Infinity,
      validateAfterIdleMs: Infinity,
      validateTimeoutMs: Infinity,
      closeTimeoutMs: Infinity,
      maxIdleMs: Infinity,
      maxLifetimeMs: Infinity,
    });
    expect(pool.options).toMatchObject({ createTimeoutMs: Infinity, closeTimeoutMs: Infinity });
    for (const bad of [
      { createTimeoutMs: Number.NaN },
      { closeTimeoutMs: -1 },
      { validateTimeoutMs: 0 },
      { reapIntervalMs: Infinity },
    ]) {
      expect(() => new ConnectionPool(connector, bad)).toThrow(PoolConfigError);
    }
    await expect(pool.close({ graceMs: -5 })).rejects.toThrow(/option "close.graceMs" must be a number of 0 or more/);
    await expect(pool.close({ graceMs: Number.NaN })).rejects.toBeInstanceOf(PoolConfigError);
    await pool.close({ graceMs: Infinity });
  });

  it('close({ graceMs: Infinity }) waits for a leased connection instead of force-closing it at once (real timers)', async () => {
    const connector = new FakeConnector();
    const pool = new ConnectionPool(connector, { name: 'real', logger: new RecordingLogger() });
    const lease = await pool.acquire();
    const closing = track(pool.close({ graceMs: Infinity }));
    await sleep(30);
    expect(lease.connection.closed).toBe(false);
    expect(closing.settled).toBe(false);
    lease.release();
    await pool.close();
    expect(lease.connection.closed).toBe(true);
  });

  it('durations past 2^31-1 ms are kept: a slow create within createTimeoutMs 3e9 opens, and long deadlines arm one timer (real timers)', async () => {
    let armed = 0;
    const counting: Clock = { ...systemClock, setTimeout: (fn, ms) => (armed++, systemClock.setTimeout(fn, ms)) };
    const connector = new FakeConnector();
    const create = connector.create.bind(connector);
    connector.create = async (ctx) => {
      await sleep(20);
      return create(ctx);
    };
    const pool = new ConnectionPool(connector, {
      name: 'long',
      clock: counting,
      logger: new RecordingLogger(),
      createTimeoutMs: 3e9,
      acquireTimeoutMs: 3e9,
      reapIntervalMs: 3e9,
      maxSize: 1,
      clientLimit: 1,
    });
    const lease = await pool.acquire();
    expect(lease.connection.closed).toBe(false);
    const waiter = track(pool.acquire());
    const before = armed;
    await sleep(50);
    expect(waiter.settled).toBe(false);
    expect(armed - before).toBeLessThanOrEqual(2);
    lease.release();
    await flush();
    (waiter.value as L).release();
    await pool.close();
  });
});

describe('the blocking period', () => {
  it('with the breaker set to open on the first failure, a caller fails at once with the connect error, and so does every caller until the next attempt', async () => {
    const { pool, connector, clock } = makePool({
      createBackoffMs: 100,
      maxCreateBackoffMs: 100,
      breakerFailures: 1,
      breakerAfterMs: 0,
    });
    connector.failCreates(2);
    const first = track(pool.acquire());
    await flush();
    expect(first.error).toBeInstanceOf(ConnectionFailedError);
    expect(((first.error as Error).cause as Error).message).toMatch(/ECONNREFUSED/);
    expect(pool.health()).toBe('failing');
    const during = track(pool.acquire());
    await flush();
    expect((during.error as Error).message).toMatch(
      /callers fail fast until a create succeeds: the next probe in 100 ms \(blockingPeriod\)/,
    );
    expect(pool.stats().counters).toMatchObject({ createsStarted: 1, failedFast: 2, timeouts: 0 });
    await clock.advance(100);
    // Past the backoff a caller tries again; that create fails too and is routed to it.
    const probe = track(pool.acquire());
    await flush();
    expect(probe.error).toBeInstanceOf(ConnectionFailedError);
    await clock.advance(100);
    const recovered = await pool.acquire();
    expect(pool.health()).toBe('healthy');
    recovered.release();
    expect(pool.stats().counters).toMatchObject({ createsStarted: 3, createFailures: 2, failedFast: 3, timeouts: 0 });
    await pool.close();
  });

  it('queued callers that a ready connection will serve keep waiting when a create fails', async () => {
    const { pool, connector, clock } = makePool({ maxSize: 2, clientLimit: 1, growAt: 1 });
    const busy = await pool.acquire();
    connector.failCreates(100);
    const waiter = track(pool.acquire({ timeoutMs: 1_000 }));
    await clock.advance(50);
    expect(pool.stats().counters.createFailures).toBeGreaterThan(0);
    expect(waiter.settled).toBe(false);
    busy.release();
    await flush();
    expect(waiter.value).toBeDefined();
    (waiter.value as L).release();
    await pool.close();
  });

  it('blockingPeriod false: callers wait out their deadline and get the connect error as cause', async () => {
    const { pool, connector, clock } = makePool({ blockingPeriod: false });
    connector.failCreates(100);
    const caller = track(pool.acquire({ timeoutMs: 1_000 }));
    await clock.advance(999);
    expect(caller.settled).toBe(false);
    await clock.advance(1);
    expect(caller.error).toBeInstanceOf(ConnectionsExhaustedError);
    expect(((caller.error as Error).cause as Error).message).toMatch(/ECONNREFUSED/);
    expect(pool.stats().counters.failedFast).toBe(0);
    await pool.close();
  });
});

describe('keeping the process alive', () => {
  it('holds the process while an acquire is pending or a close runs, and lets go when idle', async () => {
    const { pool, connector, clock } = makePool({ maxSize: 1, clientLimit: 1 });
    expect(clock.holds).toBe(0);
    const lease = await pool.acquire();
    expect(clock.holds).toBe(0);
    const waiter = track(pool.acquire({ timeoutMs: 100 }));
    await flush();
    expect(clock.holds).toBe(1);
    await clock.advance(100);
    expect(waiter.error).toBeInstanceOf(ConnectionsExhaustedError);
    expect(clock.holds).toBe(0);
    connector.createSteps.push({ kind: 'hold' });
    lease.fail(new Error('broken'));
    const another = track(pool.acquire());
    await flush();
    expect(clock.holds).toBe(1);
    connector.releaseCreate();
    await flush();
    expect(clock.holds).toBe(0);
    const closing = track(pool.close({ graceMs: 1_000 }));
    await flush();
    expect(clock.holds).toBe(1);
    (another.value as L).release();
    await flush();
    expect(closing.settled).toBe(true);
    expect(clock.holds).toBe(0);
  });
});

// Found by the chaos harness (test/chaos).
describe('found by the chaos harness', () => {
  /** A limiter that answers when the test says, deaf to signals, as a Redis round trip is. */
  function deafLimiter() {
    const answers: ((a: Admission) => void)[] = [];
    let released = 0;
    const limiter: AdmissionLimiter = {
      admit: () => new Promise<Admission>((resolve) => answers.push(resolve)),
      stats: () => idleLimiterStats,
    };
    const answer = () =>
      answers.shift()!({ id: 'late', signal: new AbortController().signal, release: () => released++ });
    return { limiter, answer, released: () => released };
  }

  it('the acquire deadline holds when the limiter answers late; the late admission is given back', async () => {
    const deaf = deafLimiter();
    const { pool, clock } = limitedPool(() => deaf.limiter);
    const caller = track(pool.acquire({ timeoutMs: 100 }));
    await clock.advance(100);
    expect(caller.error).toMatchObject({ code: 'CONNECTIONS_EXHAUSTED', reason: 'admission' });
    expect(pool.stats().counters.timeouts).toBe(1);
    deaf.answer();
    await flush();
    expect(deaf.released()).toBe(1);
    expect(clock.pending).toBe(1); // the reaper's, nothing else
    await pool.close();
  });

  it('close() ends an admission wait of a limiter deaf to signals, even with no deadline', async () => {
    const deaf = deafLimiter();
    const { pool, clock } = limitedPool(() => deaf.limiter);
    const caller = track(pool.acquire({ timeoutMs: Infinity }));
    await flush();
    await pool.close();
    expect(caller.error).toBeInstanceOf(PoolClosedError);
    deaf.answer();
    await flush();
    expect(deaf.released()).toBe(1);
    expect(clock.holds).toBe(0);
  });

  it('close() ends a use() pausing between retries at once, leaving no timer', async () => {
    const { pool, clock } = makePool();
    const fatal = Object.assign(new Error('broken'), { fatal: true });
    const used = track(
      pool.use(() => Promise.reject(fatal), { retry: { attempts: 3, baseDelayMs: 1_000, retryOn: () => true } }),
    );
    await flush();
    expect(clock.holds).toBe(1);
    await pool.close();
    await flush();
    expect(used.error).toBeInstanceOf(PoolClosedError);
    expect(clock.pending).toBe(0);
    expect(clock.holds).toBe(0);
  });

  it('refresh() also retires connections still opening: they never serve once ready', async () => {
    const { pool, connector } = makePool();
    connector.createSteps.push({ kind: 'hold' });
    const caller = track(pool.acquire());
    await flush();
    pool.refresh();
    connector.releaseCreate();
    await flush();
    expect((caller.value as L | undefined)?.connectionId).toBe(2);
    expect(connector.closedCount).toBe(1);
    (caller.value as L).release();
    await pool.close();
  });

  it('a connector that hands back an object the pool already closed fails that create and never closes it twice', async () => {
    const first = { id: 1, closes: 0 };
    let calls = 0;
    const connector: Connector<{ id: number; closes: number }> = {
      create: async () => (calls++ === 0 ? first : { id: calls, closes: 0 }),
      close: (c) => void c.closes++,
    };
    const clock = new VirtualClock();
    const logger = new RecordingLogger();
    const pool = new ConnectionPool(connector, { name: 'test', clock, logger });
    (await pool.acquire()).release();
    pool.refresh();
    await flush();
    expect(first.closes).toBe(1);
    calls = 0; // the next create hands back the closed object; the one after it a new one
    const caller = track(pool.acquire());
    await clock.advance(10); // the backoff after the refused create
    expect((caller.value as Lease<{ id: number; closes: number }>).connection).not.toBe(first);
    expect(logger.warnings.join('\n')).toMatch(/already holds or has closed/);
    expect([first.closes, pool.stats().counters.createFailures]).toEqual([1, 1]);
    (caller.value as Lease<{ id: number; closes: number }>).release();
    await pool.close();
  });
});

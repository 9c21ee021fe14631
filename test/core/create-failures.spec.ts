// Failing creates with default options: a transient error is retried within the caller's deadline,
// as the peer pools do (their tests, rewritten here from what they describe), and only a sustained
// outage opens the breaker that fails callers fast.
import { describe, expect, it } from '@jest/globals';
import {
  ConnectionFailedError,
  ConnectionPool,
  ConnectionsExhaustedError,
  type Connector,
  type Lease,
} from '../../lib/index.js';
import { FakeConnector, type FakeConnection } from '../support/fake-connector.js';
import { makePool, RecordingLogger, track } from '../support/harness.js';
import { flush, VirtualClock } from '../support/virtual-clock.js';

/** Advances virtual time until `done()` or `limitMs` pass, in steps of `stepMs`. */
async function until(clock: VirtualClock, done: () => boolean, limitMs: number, stepMs = 5): Promise<void> {
  for (let t = 0; t < limitMs && !done(); t += stepMs) await clock.advance(stepMs);
}

describe('transient create errors, as the peer pools expect (default options)', () => {
  it('generic-pool "handle creation errors": four failed creates, then the acquire gets the fifth', async () => {
    const { pool, connector, clock } = makePool({ maxSize: 1 });
    connector.failCreates(4);
    const caller = track(pool.acquire());
    await until(clock, () => caller.settled, 10_000);
    expect(caller.error).toBeUndefined();
    expect(typeof (caller.value as Lease<FakeConnection>).connection.id).toBe('number');
    (caller.value as Lease<FakeConnection>).release();
    const s = pool.stats();
    expect([s.waiting, s.counters.createFailures, s.counters.failedFast, s.breaker]).toEqual([0, 4, 0, 'closed']);
    await pool.close();
  });

  it('generic-pool "handle creation errors for delayed creates": five failures are each reported, then the acquire succeeds', async () => {
    const { pool, connector, clock, logger } = makePool({ maxSize: 1 });
    connector.failCreates(5, 'Error occurred.');
    const caller = track(pool.acquire());
    await until(clock, () => caller.settled, 10_000);
    expect(caller.value).toBeDefined();
    (caller.value as Lease<FakeConnection>).release();
    expect(logger.warnings.filter((w) => w.includes('Error occurred.'))).toHaveLength(5);
    expect(pool.stats()).toMatchObject({ waiting: 0, failureStreak: 0, counters: { createFailures: 5, opened: 1 } });
    await pool.close();
  });

  it('generic-pool "do schedule again if error occurred when creating new objects async": the create is scheduled again', async () => {
    const { pool, connector, clock } = makePool({ maxSize: 1 });
    connector.failCreates(1, 'Create Error');
    const caller = track(pool.acquire());
    await until(clock, () => caller.settled, 1_000);
    expect(caller.value).toBeDefined();
    expect(pool.stats().idle).toBe(0); // the one connection is out
    (caller.value as Lease<FakeConnection>).release();
    expect(pool.stats().idle).toBe(1);
    await pool.close();
  });

  it('tarn "should retry a create if it times out": the acquire gets the second create; the late first is closed', async () => {
    const clock = new VirtualClock();
    let createCalled = 0;
    let destroyCalled = 0;
    const connector: Connector<{ a: number }> = {
      create: () => {
        createCalled++;
        if (createCalled === 1) return new Promise((resolve) => clock.setTimeout(() => resolve({ a: 1 }), 200));
        return Promise.resolve({ a: 2 });
      },
      close: () => void destroyCalled++,
    };
    const pool = new ConnectionPool(connector, {
      name: 'tarn',
      clock,
      logger: new RecordingLogger(),
      minSize: 2,
      maxSize: 4,
      createTimeoutMs: 100,
    });
    const caller = track(pool.acquire());
    await until(clock, () => caller.settled, 1_000);
    expect((caller.value as Lease<{ a: number }>).connection).toEqual({ a: 2 });
    expect(createCalled).toBe(2);
    expect(pool.stats()).toMatchObject({ clients: 1, waiting: 0, counters: { createFailures: 0 } });
    await clock.advance(200); // the first create resolves, long after its timeout
    expect(destroyCalled).toBe(1);
    expect(pool.stats().counters.createFailures).toBe(1);
    (caller.value as Lease<{ a: number }>).release();
    await pool.close();
  });

  it.each([
    [
      'returns an error',
      (clock: VirtualClock) =>
        new Promise<never>((_, reject) =>
          clock.setTimeout(() => reject(new Error('this is the error from create')), 10),
        ),
    ],
    [
      'throws an error',
      () => {
        throw new Error('this is the error from create');
      },
    ],
  ] as [string, (clock: VirtualClock) => Promise<never>][])(
    'tarn "should recover after acquireTimeoutMillis if the create function %s": the acquire fails at its deadline with the create error, then the pool recovers',
    async (_, fail) => {
      const clock = new VirtualClock();
      let creates = 0;
      let up = false;
      const connector: Connector<{ n: number }> = {
        create: () => {
          creates++;
          return up ? Promise.resolve({ n: creates }) : fail(clock);
        },
      };
      const pool = new ConnectionPool(connector, {
        name: 'tarn',
        clock,
        logger: new RecordingLogger(),
        minSize: 2,
        maxSize: 4,
      });
      const caller = track(pool.acquire({ timeoutMs: 100 }));
      await clock.advance(99);
      expect(caller.settled).toBe(false); // not failed at once: the next attempt may work
      await clock.advance(1);
      expect(caller.error).toBeInstanceOf(ConnectionsExhaustedError);
      expect((caller.error as ConnectionsExhaustedError).reason).toBe('creates-failing');
      expect(((caller.error as Error).cause as Error).message).toContain('this is the error from create');
      expect(creates).toBeGreaterThan(1); // retried within the deadline
      expect(pool.stats()).toMatchObject({ clients: 0, idle: 0, waiting: 0, breaker: 'closed' });
      up = true;
      const next = track(pool.acquire());
      await until(clock, () => next.settled, 1_000); // at the next attempt
      expect(next.value).toBeDefined();
      (next.value as Lease<{ n: number }>).release();
      expect(pool.stats()).toMatchObject({ failureStreak: 0, breaker: 'closed' });
      await pool.close();
    },
  );
});

describe('a sustained outage opens the breaker', () => {
  it('the backend down for 10 s: callers wait at first, fail fast once the breaker opens, and the first success closes it', async () => {
    const clock = new VirtualClock();
    let down = true;
    let creates = 0;
    let inFlight = 0;
    let mostInFlightWhileOpen = 0;
    const connector: Connector<{ n: number }> = {
      create: () => {
        creates++;
        inFlight++;
        if (pool.stats().breaker !== 'closed') mostInFlightWhileOpen = Math.max(mostInFlightWhileOpen, inFlight);
        return new Promise((resolve, reject) =>
          clock.setTimeout(() => {
            inFlight--;
            if (down) reject(new Error('connect ECONNREFUSED 10.0.0.5:5432'));
            else resolve({ n: creates });
          }, 5),
        );
      },
    };
    const logger = new RecordingLogger();
    const pool = new ConnectionPool(connector, { name: 'db', clock, logger, maxSize: 2, clientLimit: 1 });
    clock.setTimeout(() => (down = false), 10_000);
    const callers: { at: number; state: ReturnType<typeof track<Lease<{ n: number }>>> }[] = [];
    const breakerSeen = new Set<string>();
    let openedAt = -1;
    let closedAt = -1;
    for (let t = 0; t < 16_000; t += 50) {
      callers.push({ at: t, state: track(pool.acquire()) });
      await clock.advance(50);
      const state = pool.stats().breaker;
      breakerSeen.add(state);
      if (state !== 'closed' && openedAt < 0) openedAt = clock.now();
      if (state === 'closed' && openedAt >= 0 && closedAt < 0) closedAt = clock.now();
      for (const c of callers) if (c.state.value !== undefined && !c.state.value.released) c.state.value.release();
    }
    await flush();
    expect([...breakerSeen].sort()).toEqual(['closed', 'open']);
    // Opened by the defaults (5 failures in a row, over at least 5 s), closed by the first probe after the outage.
    expect(openedAt).toBeGreaterThanOrEqual(5_000);
    expect(openedAt).toBeLessThan(10_000);
    expect(closedAt).toBeGreaterThanOrEqual(10_000);
    expect(closedAt).toBeLessThan(10_000 + 5_000 + 200);
    const failedFast = callers.filter((c) => c.state.error instanceof ConnectionFailedError);
    expect(failedFast.length).toBeGreaterThan(50);
    for (const c of failedFast) {
      expect(((c.state.error as Error).cause as Error).message).toContain('ECONNREFUSED 10.0.0.5:5432');
      expect((c.state.error as Error).message).toMatch(
        /creates failed in a row over \d+ ms, so callers fail fast until a create succeeds/,
      );
    }
    // Callers who came before the breaker opened waited (none failed at once); they failed when it opened.
    const early = callers.filter((c) => c.at < 4_900);
    expect(early.every((c) => c.state.error instanceof ConnectionFailedError)).toBe(true);
    // Every caller after the breaker closed was served; none timed out or is left pending.
    const late = callers.filter((c) => c.at >= closedAt);
    expect(late.length).toBeGreaterThan(10);
    expect(late.every((c) => c.state.value !== undefined)).toBe(true);
    expect(callers.every((c) => c.state.settled)).toBe(true);
    expect(pool.stats().counters).toMatchObject({ timeouts: 0, failedFast: failedFast.length });
    expect(logger.warnings.some((w) => /the breaker opened/.test(w))).toBe(true);
    expect(logger.infos.some((w) => /the breaker closed/.test(w))).toBe(true);
    expect(mostInFlightWhileOpen).toBe(1); // one probe at a time while open
    await pool.close();
  });

  it("half-open: one probe at a time; callers arriving during the probe fail fast, the probe's caller is served by it", async () => {
    const { pool, connector, clock } = makePool({
      breakerFailures: 1,
      breakerAfterMs: 0,
      createBackoffMs: 100,
      maxCreateBackoffMs: 100,
    });
    connector.failCreates(1);
    const first = track(pool.acquire());
    await flush();
    expect(first.error).toBeInstanceOf(ConnectionFailedError);
    expect(pool.stats().breaker).toBe('open');
    await clock.advance(100);
    connector.createSteps.push({ kind: 'hold' });
    const probeCaller = track(pool.acquire());
    await flush();
    expect(pool.stats()).toMatchObject({ breaker: 'half-open', opening: 1 });
    const during = track(pool.acquire());
    await flush();
    expect((during.error as Error).message).toContain('a probe is under way');
    expect(connector.heldCreates).toHaveLength(1); // no second create
    connector.releaseCreate();
    await flush();
    expect(probeCaller.value).toBeDefined();
    expect(pool.stats().breaker).toBe('closed');
    (probeCaller.value as Lease<FakeConnection>).release();
    await pool.close();
  });

  it('a hanging create counts its whole time toward breakerAfterMs', async () => {
    const { pool, connector, clock } = makePool({ createTimeoutMs: 2_000, breakerFailures: 3 });
    for (let i = 0; i < 3; i++) connector.createSteps.push({ kind: 'hold' });
    const caller = track(pool.acquire({ timeoutMs: 20_000 }));
    await until(clock, () => pool.stats().breaker !== 'closed', 10_000, 100);
    // Three timeouts of 2 s: the first began over 5 s before the third failed.
    expect(pool.stats()).toMatchObject({ breaker: 'open', failureStreak: 3 });
    expect(caller.error).toBeInstanceOf(ConnectionFailedError);
    await pool.close();
  });

  it('blockingPeriod false: the breaker never opens, callers wait for their deadline with the cause', async () => {
    const { pool, connector, clock } = makePool({ blockingPeriod: false, breakerFailures: 1, breakerAfterMs: 0 });
    connector.failCreates(100);
    const caller = track(pool.acquire({ timeoutMs: 8_000 }));
    await clock.advance(7_999);
    expect([caller.settled, pool.stats().breaker]).toEqual([false, 'closed']);
    await clock.advance(1);
    expect(caller.error).toBeInstanceOf(ConnectionsExhaustedError);
    expect(((caller.error as Error).cause as Error).message).toMatch(/ECONNREFUSED/);
    await pool.close();
  });
});

describe('a create failure that retrying cannot mend (the connector says permanent)', () => {
  const permanentIf = (connector: FakeConnector) =>
    Object.assign(connector, {
      isPermanent: (err: unknown) => (err as Error).message.startsWith('password authentication'),
    });

  it('fails the waiting caller at once with it, and the next caller too, until a create succeeds', async () => {
    const connector = permanentIf(new FakeConnector());
    const { pool, clock } = makePool({ maxSize: 1 }, connector);
    connector.failCreates(2, 'password authentication failed for user "app"');
    const first = track(pool.acquire({ timeoutMs: 30_000 }));
    await clock.advance(1);
    expect(first.error).toBeInstanceOf(ConnectionFailedError);
    expect(((first.error as Error).cause as Error).message).toMatch(/create failed: password authentication failed/);
    expect(pool.stats().breaker).toBe('open');
    // During the backoff a caller fails fast, without a create; past it, its create probes.
    const second = track(pool.acquire({ timeoutMs: 30_000 }));
    await clock.advance(0);
    expect(second.error).toBeInstanceOf(ConnectionFailedError);
    expect(connector.created + connector.createSteps.length).toBe(1);
    await clock.advance(15);
    const third = track(pool.acquire({ timeoutMs: 30_000 }));
    await clock.advance(1);
    expect(third.error).toBeInstanceOf(ConnectionFailedError);
    expect(connector.createSteps.length).toBe(0);
    // The password is fixed: the next probe succeeds and closes the breaker.
    await clock.advance(30);
    const fourth = track(pool.acquire({ timeoutMs: 30_000 }));
    await until(clock, () => fourth.settled, 1_000, 1);
    expect(fourth.error).toBeUndefined();
    expect(pool.stats().breaker).toBe('closed');
    (fourth.value as Lease<FakeConnection>).release();
    await pool.close();
  });

  it('a transient failure beside it is still retried within the deadline', async () => {
    const connector = permanentIf(new FakeConnector());
    const { pool, clock } = makePool({ maxSize: 1 }, connector);
    connector.failCreates(3);
    const caller = track(pool.acquire({ timeoutMs: 30_000 }));
    await until(clock, () => caller.settled, 10_000);
    expect(caller.error).toBeUndefined();
    (caller.value as Lease<FakeConnection>).release();
    await pool.close();
  });

  it('an isPermanent() that throws is logged, and the failure counts as transient', async () => {
    const connector = Object.assign(new FakeConnector(), {
      isPermanent: () => {
        throw new Error('a bug in isPermanent');
      },
    });
    const { pool, clock, logger } = makePool({ maxSize: 1 }, connector);
    connector.failCreates(1);
    const caller = track(pool.acquire({ timeoutMs: 30_000 }));
    await until(clock, () => caller.settled, 10_000);
    expect(caller.error).toBeUndefined();
    expect(logger.errors.some((m) => m.includes('connector.isPermanent() threw (a bug in isPermanent)'))).toBe(true);
    (caller.value as Lease<FakeConnection>).release();
    await pool.close();
  });
});

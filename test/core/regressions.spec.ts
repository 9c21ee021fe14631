// One test per peer-pool bug in ../shared/REFERENCES.md that applies to the engine, named after
// the behaviour it protects.
import { describe, expect, it } from '@jest/globals';
import {
  ConnectionFailedError,
  ConnectionPool,
  ConnectionsExhaustedError,
  PoolClosedError,
  type Lease,
} from '../../lib/index.js';
import type { FakeConnection } from '../support/fake-connector.js';
import { makePool, RecordingLogger, track } from '../support/harness.js';
import { flush } from '../support/virtual-clock.js';

type L = Lease<FakeConnection>;

describe('regressions of peer-pool bugs', () => {
  it('a create that always rejects backs off; waiters fail at their deadline with the create error as cause, or at once with it once the breaker opened (generic-pool #175/#183/#194/#273)', async () => {
    const { pool, connector, clock } = makePool(); // default options
    for (let i = 0; i < 1_000; i++) connector.createSteps.push({ kind: 'fail', error: new Error('EAI_AGAIN') });
    const early = track(pool.acquire({ timeoutMs: 3_000 }));
    const patient = track(pool.acquire());
    await clock.advance(2_999);
    expect([early.settled, patient.settled]).toEqual([false, false]);
    await clock.advance(1);
    expect(early.error).toBeInstanceOf(ConnectionsExhaustedError);
    expect(((early.error as Error).cause as Error).message).toMatch(/EAI_AGAIN/);
    await clock.advance(27_000);
    // The outage outlasted breakerAfterMs: the breaker opened and failed the patient caller with the cause.
    expect(patient.error).toBeInstanceOf(ConnectionFailedError);
    expect(((patient.error as Error).cause as Error).message).toMatch(/EAI_AGAIN/);
    // 10 ms doubling to 5 s: a dozen tries in 30 s, not a tight loop.
    expect(pool.stats().counters.createsStarted).toBeLessThan(20);
    await pool.close();
  });

  it('a rejected validate never becomes an unhandled rejection; the connection is retired (generic-pool #195)', async () => {
    const { pool, connector, clock } = makePool({ validateAfterIdleMs: 10 });
    (await pool.acquire()).release();
    await clock.advance(20);
    connector.holdValidation = true;
    const caller = track(pool.acquire());
    await flush();
    connector.releaseValidation(new Error('validate exploded'));
    await flush();
    expect((caller.value as L).connection.id).toBe(2);
    (caller.value as L).release();
    expect(pool.stats().counters.validationFailures).toBe(1);
    await pool.close();
  });

  it('a create that finishes after close is closed, not leaked (generic-pool #159)', async () => {
    const { pool, connector, clock } = makePool({ minSize: 1 });
    connector.createSteps.push({ kind: 'hold' });
    const warm = track(pool.warmup());
    await flush();
    const closing = track(pool.close({ graceMs: 100 }));
    await clock.advance(100);
    expect(closing.settled).toBe(true);
    connector.releaseCreate();
    await flush();
    expect(connector.created).toBe(1);
    expect(connector.live.size).toBe(0);
    expect(warm.settled).toBe(true);
  });

  it('idle expiry works with default options (generic-pool #178/#192)', async () => {
    const { pool, connector, clock } = makePool();
    (await pool.acquire()).release();
    await clock.advance(300_000 + 1_000);
    expect(connector.live.size).toBe(0);
    await pool.close();
  });

  it('a timed-out waiter never takes a slot (knex #1694)', async () => {
    const { pool, clock } = makePool({ clientLimit: 1, maxSize: 1 });
    const held = await pool.acquire();
    const late = track(pool.acquire({ timeoutMs: 100 }));
    await clock.advance(100);
    expect(late.error).toBeInstanceOf(ConnectionsExhaustedError);
    held.release();
    expect(pool.stats()).toMatchObject({ clients: 0, idle: 1 });
    const next = await pool.acquire();
    expect(next.connection.id).toBe(held.connection.id);
    next.release();
    await pool.close();
  });

  it('a waiter that gives up during async validation does not orphan the connection (tarn #61)', async () => {
    const { pool, connector, clock } = makePool({ validateAfterIdleMs: 10, clientLimit: 1, maxSize: 1 });
    (await pool.acquire()).release();
    await clock.advance(20);
    connector.holdValidation = true;
    const ac = new AbortController();
    const caller = track(pool.acquire({ signal: ac.signal }));
    await flush();
    ac.abort(new Error('caller left'));
    await flush();
    expect((caller.error as Error).message).toBe('caller left');
    connector.releaseValidation(true);
    await flush();
    expect(pool.stats()).toMatchObject({ clients: 0, idle: 1, ready: 1 });
    connector.holdValidation = false;
    const next = await pool.acquire();
    expect(next.connection.id).toBe(1);
    next.release();
    await pool.close();
  });

  it('acquire after close rejects at once with PoolClosedError (tarn #81)', async () => {
    const { pool } = makePool();
    await pool.close();
    const attempt = track(pool.acquire({ timeoutMs: 60_000 }));
    await flush(1);
    expect(attempt.error).toBeInstanceOf(PoolClosedError);
  });

  it('a connection that opens after its caller timed out becomes idle and is counted right (pg-pool #3543)', async () => {
    const { pool, connector, clock } = makePool({ createTimeoutMs: 10_000 });
    connector.createSteps.push({ kind: 'hold' });
    const caller = track(pool.acquire({ timeoutMs: 100 }));
    await clock.advance(100);
    expect(caller.error).toMatchObject({ reason: 'opening' });
    connector.releaseCreate();
    await flush();
    expect(pool.stats()).toMatchObject({ size: 1, ready: 1, idle: 1, clients: 0, opening: 0 });
    const next = await pool.acquire();
    expect(next.connection.id).toBe(1);
    next.release();
    await pool.close();
  });

  it('a broken idle connection is retired quietly: logged and counted, never an unhandled error (pg-pool #2439)', async () => {
    const { pool, connector, logger } = makePool({ minSize: 1 });
    await pool.warmup();
    const [conn] = [...connector.live];
    conn!.ctx.retire(new Error('Connection terminated unexpectedly'));
    await flush();
    expect(conn!.closed).toBe(true);
    expect(pool.stats()).toMatchObject({
      counters: { retired: 1 },
      lastError: 'Connection terminated unexpectedly',
      ready: 1,
    });
    expect(logger.errors).toEqual([]);
    await pool.close();
  });

  it('a retired connection stops counting against maxSize at once (undici #5144)', async () => {
    const { pool, connector } = makePool({ clientLimit: 1, maxSize: 1 });
    const held = await pool.acquire();
    held.connection.ctx.retire('expired');
    const next = await pool.acquire();
    expect(next.connection.id).toBe(2);
    expect(pool.stats()).toMatchObject({ size: 1, draining: 1 });
    held.release();
    next.release();
    await flush();
    expect(connector.live.size).toBe(1);
    await pool.close();
  });

  it('one absolute deadline per acquire, however often the waiter is passed over (mysql2 #4498)', async () => {
    const { pool, connector, clock } = makePool({
      clientLimit: 1,
      maxSize: 1,
      createTimeoutMs: 40,
      blockingPeriod: false,
    });
    for (let i = 0; i < 100; i++) connector.createSteps.push({ kind: 'hold' });
    const caller = track(pool.acquire({ timeoutMs: 100 }));
    await clock.advance(99);
    expect(caller.settled).toBe(false);
    await clock.advance(1);
    expect(caller.error).toBeInstanceOf(ConnectionsExhaustedError);
    while (connector.heldCreates.length) connector.releaseCreate(new Error('too late'));
    await pool.close();
  });

  it('two concurrent first users of a slot never both create a connection (the seed gist)', async () => {
    const { pool, connector } = makePool({ clientLimit: 2, maxSize: 1 });
    connector.createSteps.push({ kind: 'hold' });
    const a = track(pool.acquire());
    const b = track(pool.acquire());
    await flush();
    connector.releaseCreate();
    await flush();
    expect((a.value as L).connection).toBe((b.value as L).connection);
    expect(connector.created).toBe(1);
    (a.value as L).release();
    (b.value as L).release();
    await pool.close();
  });

  it('deadlines come from the clock, not from sums of sleeps (the seed library)', async () => {
    const { pool, clock } = makePool({ clientLimit: 1, maxSize: 1 });
    const held = await pool.acquire();
    const waiter = track(pool.acquire({ timeoutMs: 60_000 }));
    await clock.advance(500);
    await clock.advance(59_000);
    expect(waiter.settled).toBe(false);
    await clock.advance(500);
    expect(waiter.error).toBeInstanceOf(ConnectionsExhaustedError);
    held.release();
    await pool.close();
  });

  it('connector close errors are logged, never thrown at callers', async () => {
    const logger = new RecordingLogger();
    const pool = new ConnectionPool(
      {
        create: async () => ({}),
        close: () => {
          throw new Error('already closed');
        },
      },
      { logger },
    );
    (await pool.acquire()).fail(new Error('bad'));
    await pool.close();
    expect(logger.errors.join()).toMatch(/closing a connection failed: already closed/);
  });
});

// What a pool tells observers: every diagnostics_channel event with its message, the tracing
// channel around acquire, health changes logged once per change, and retirements by reason.
import { afterEach, describe, expect, it } from '@jest/globals';
import { subscribe, tracingChannel, unsubscribe } from 'node:diagnostics_channel';
import { POOL_CHANNELS, type Lease } from '../../lib/index.js';
import type { FakeConnection } from '../support/fake-connector.js';
import { makePool, track } from '../support/harness.js';
import { flush } from '../support/virtual-clock.js';

type Name = Exclude<keyof typeof POOL_CHANNELS, 'acquireTrace'>;

/** Every message of the pool's channels, in order, as [channel, message]. */
function listen() {
  const seen: [Name, Record<string, unknown>][] = [];
  const handlers = (Object.keys(POOL_CHANNELS) as (keyof typeof POOL_CHANNELS)[])
    .filter((k): k is Name => k !== 'acquireTrace')
    .map((k) => {
      const fn = (message: unknown) => seen.push([k, message as Record<string, unknown>]);
      subscribe(POOL_CHANNELS[k], fn);
      return () => unsubscribe(POOL_CHANNELS[k], fn);
    });
  stops.push(() => handlers.forEach((h) => h()));
  return seen;
}
const stops: (() => void)[] = [];
afterEach(() => stops.splice(0).forEach((s) => s()));

describe('diagnostics_channel events', () => {
  it('publish each connection’s life, each lease, and the close, with their messages', async () => {
    const seen = listen();
    // The breaker opens on the first failure here, so the failed acquire ends at once.
    const { pool, clock, connector } = makePool({
      maxSize: 2,
      clientLimit: 2,
      growAt: 1,
      reapIntervalMs: 60_000,
      breakerFailures: 1,
      breakerAfterMs: 0,
    });
    const a = await pool.acquire();
    const b = await pool.acquire();
    a.release();
    b.fail(new Error('broken pipe'));
    connector.createSteps.push({ kind: 'fail', error: new Error('ECONNREFUSED') });
    await pool.acquire().catch(() => undefined);
    await clock.advance(20); // past the backoff
    const c = await pool.acquire();
    c.release();
    pool.refresh();
    await pool.close();
    // A close finishes a turn later (the connector's close() is awaited): its event follows.
    expect(seen).toEqual([
      ['createStart', { pool: 'test', connectionId: 1 }],
      ['createEnd', { pool: 'test', connectionId: 1, durationMs: 0 }],
      ['acquire', { pool: 'test', connectionId: 1, clients: 1 }],
      ['acquire', { pool: 'test', connectionId: 1, clients: 2 }],
      ['release', { pool: 'test', connectionId: 1, failed: false }],
      ['release', { pool: 'test', connectionId: 1, failed: true }],
      ['retire', { pool: 'test', connectionId: 1, reason: 'failed', detail: 'broken pipe' }],
      ['createStart', { pool: 'test', connectionId: 2 }],
      [
        'createFailure',
        {
          pool: 'test',
          connectionId: 2,
          error: expect.objectContaining({
            code: 'CONNECTION_FAILED',
            message: 'pool "test": create failed: ECONNREFUSED',
          }),
          durationMs: 0,
        },
      ],
      ['close', { pool: 'test', connectionId: 1 }],
      ['createStart', { pool: 'test', connectionId: 3 }],
      ['createEnd', { pool: 'test', connectionId: 3, durationMs: 0 }],
      ['acquire', { pool: 'test', connectionId: 3, clients: 1 }],
      ['release', { pool: 'test', connectionId: 3, failed: false }],
      ['retire', { pool: 'test', connectionId: 3, reason: 'refresh', detail: 'refresh' }],
      ['poolClose', { pool: 'test' }],
      ['close', { pool: 'test', connectionId: 3 }],
    ]);
  });

  it('trace every acquire: start and end with the call’s context, the lease or the error when it settles', async () => {
    const trace = tracingChannel(POOL_CHANNELS.acquireTrace);
    const events: [string, Record<string, unknown>][] = [];
    const record = (kind: string) => (ctx: unknown) => events.push([kind, { ...(ctx as Record<string, unknown>) }]);
    const handlers = {
      start: record('start'),
      end: record('end'),
      asyncStart: record('asyncStart'),
      asyncEnd: record('asyncEnd'),
      error: record('error'),
    };
    trace.subscribe(handlers);
    stops.push(() => trace.unsubscribe(handlers));
    const { pool } = makePool({ maxSize: 1 });
    const lease = await pool.acquire({ timeoutMs: 500, key: 'ann' });
    lease.release();
    await pool.close();
    await pool.acquire().catch(() => undefined);
    const context = { pool: 'test', timeoutMs: 500, key: 'ann' };
    expect(events.slice(0, 4)).toEqual([
      ['start', context],
      ['end', context],
      ['asyncStart', { ...context, result: lease }],
      ['asyncEnd', { ...context, result: lease }],
    ]);
    expect(events.slice(4).map(([kind, ctx]) => [kind, (ctx.error as Error | undefined)?.name])).toEqual([
      ['start', undefined],
      ['end', undefined],
      ['error', 'PoolClosedError'],
      ['asyncStart', 'PoolClosedError'],
      ['asyncEnd', 'PoolClosedError'],
    ]);
  });

  it('cost nothing while nobody listens: no message is built', async () => {
    const { pool } = makePool();
    // Nothing subscribed: the channels report no subscribers, so the pool skips building messages.
    for (const name of Object.values(POOL_CHANNELS).slice(0, -1))
      expect((await import('node:diagnostics_channel')).channel(name).hasSubscribers).toBe(false);
    await pool.use(() => 1);
    await pool.close();
  });
});

describe('health changes', () => {
  it('are logged once per change, warn when worse and info when better, with the figures, and published', async () => {
    const seen = listen();
    const { pool, clock, logger } = makePool({ maxSize: 2, clientLimit: 1, reapIntervalMs: 100 });
    const held: Lease<FakeConnection>[] = [await pool.acquire(), await pool.acquire()];
    const queued = track(pool.acquire());
    // Many acquires and releases between two samples: still one line per change.
    await clock.advance(100);
    await clock.advance(100);
    held[0]!.release();
    await flush();
    (queued.value as Lease<FakeConnection>).release();
    held[1]!.release();
    await clock.advance(100);
    await clock.advance(100);
    expect(logger.warnings).toEqual([
      'pool "test": health healthy → exhausted (utilization 100 %, 2 callers on 2 of 2 connections, 1 waiting)',
    ]);
    expect(logger.infos).toEqual([
      'pool "test": health exhausted → healthy (utilization 0 %, 0 callers on 2 of 2 connections, 0 waiting)',
    ]);
    expect(seen.filter(([k]) => k === 'health').map(([, m]) => m)).toEqual([
      { pool: 'test', from: 'healthy', to: 'exhausted', utilization: 1, waiting: 1 },
      { pool: 'test', from: 'exhausted', to: 'healthy', utilization: 0, waiting: 0 },
    ]);
    await pool.close();
  });

  it('name the connect error when the pool turns failing, and the recovery', async () => {
    const { pool, clock, logger, connector } = makePool({
      maxSize: 1,
      growAt: 1,
      reapIntervalMs: 100,
      blockingPeriod: false,
    });
    for (let i = 0; i < 5; i++)
      connector.createSteps.push({ kind: 'fail', error: new Error('connect ECONNREFUSED 10.0.0.9:5432') });
    const waiting = track(pool.acquire({ timeoutMs: 1_000 }));
    await clock.advance(100);
    expect(logger.warnings.filter((w) => w.includes('health'))).toEqual([
      'pool "test": health healthy → failing (no connection is ready and creates fail: pool "test": create failed: connect ECONNREFUSED 10.0.0.9:5432)',
    ]);
    await clock.advance(1_000); // the sixth create succeeds (after 10 + 20 + 40 + 80 + 160 ms of backoff)
    // Recovered at the sample after the create succeeded, with the caller it served.
    expect(logger.infos).toEqual([
      'pool "test": health failing → healthy (utilization 1 %, 1 caller on 1 of 1 connection, 0 waiting)',
    ]);
    (waiting.value as Lease<FakeConnection>).release();
    await pool.close();
  });
});

describe('retirements by reason', () => {
  it('are counted in stats().counters.retiredBy', async () => {
    const { pool, clock } = makePool({ maxSize: 3, clientLimit: 1, growAt: 1, maxIdleMs: 100, reapIntervalMs: 50 });
    const [a, b, c] = [await pool.acquire(), await pool.acquire(), await pool.acquire()];
    a.fail();
    b.release();
    c.release();
    pool.refresh();
    await pool.acquire().then((l) => l.release());
    await clock.advance(200); // the new one idles out
    expect(pool.stats().counters.retiredBy).toEqual({
      idle: 1,
      lifetime: 0,
      failed: 1,
      connector: 0,
      validation: 0,
      reset: 0,
      refresh: 2,
      closed: 0,
      group: 0,
    });
    await pool.close();
  });
});

import { describe, expect, it } from '@jest/globals';
import { ConnectionPool, type Connector, type PoolOptions } from '../../lib/index.js';
import { FakeConnector } from '../support/fake-connector.js';
import { configError, makePool } from '../support/harness.js';

const make = (options: PoolOptions, connector: unknown = new FakeConnector()) =>
  new ConnectionPool(connector as Connector<unknown>, { name: 'orders', ...options });

describe('option validation', () => {
  const invalid: [string, PoolOptions][] = [
    ['maxSize', { maxSize: 0 }],
    ['maxSize', { maxSize: -3 }],
    ['maxSize', { maxSize: NaN }],
    ['maxSize', { maxSize: 2.5 }],
    ['maxSize', { maxSize: Infinity }],
    ['minSize', { minSize: -1 }],
    ['minSize', { minSize: 11, maxSize: 10 }],
    ['clientLimit', { clientLimit: 0 }],
    ['clientLimit', { clientLimit: NaN }],
    ['maxIdleMs', { maxIdleMs: 0 }],
    ['maxIdleMs', { maxIdleMs: -5 }],
    ['maxLifetimeMs', { maxLifetimeMs: 0 }],
    ['maxLifetimeMs', { maxLifetimeMs: NaN }],
    ['maxUses', { maxUses: 0 }],
    ['maxUses', { maxUses: 2.5 }],
    ['createTimeoutMs', { createTimeoutMs: 0 }],
    ['createTimeoutMs', { createTimeoutMs: Number.NaN }],
    ['closeTimeoutMs', { closeTimeoutMs: -1 }],
    ['validateTimeoutMs', { validateTimeoutMs: 0 }],
    ['blockingPeriod', { blockingPeriod: 'yes' as unknown as boolean }],
    ['tracing', { tracing: 'on' as unknown as boolean }],
    ['acquireTimeoutMs', { acquireTimeoutMs: -1 }],
    ['acquireTimeoutMs', { acquireTimeoutMs: NaN }],
    ['maxWaiting', { maxWaiting: -1 }],
    ['maxConcurrentCreates', { maxConcurrentCreates: 0 }],
    ['growAt', { growAt: 0 }],
    ['growAt', { growAt: 1.5 }],
    ['validateAfterIdleMs', { validateAfterIdleMs: -1 }],
    ['reapIntervalMs', { reapIntervalMs: 0 }],
    ['createBackoffMs', { createBackoffMs: 0 }],
    ['maxCreateBackoffMs', { createBackoffMs: 100, maxCreateBackoffMs: 10 }],
    ['lifetimeJitter', { lifetimeJitter: -0.1 }],
    ['lifetimeJitter', { lifetimeJitter: 0.7 }],
    ['strategy', { strategy: 'random' as never }],
    ['health.degraded', { health: { degraded: 0 } }],
    ['health.critical', { health: { degraded: 0.8, critical: 0.5 } }],
    ['maxSize', { maxSize: '10' as never }],
    ['clock', { clock: {} as never }],
    ['logger', { logger: { warn: 1 } as never }],
  ];

  it.each(invalid)('rejects a bad %s with a PoolConfigError naming the pool and the field', (field, options) => {
    const err = configError(() => make(options));
    expect(err.field).toBe(field);
    expect(err.code).toBe('POOL_CONFIG');
    expect(err.pool).toBe('orders');
    expect(err.message).toContain(`"${field}"`);
    expect(err.message).toContain('pool "orders"');
  });

  it('rejects an empty name', () => {
    expect(configError(() => make({ name: '' })).field).toBe('name');
  });

  it.each(['create', 'ready', 'close', 'validate', 'isFatal'])(
    'rejects a connector whose %s is not a function',
    (method) => {
      const connector = { create: async () => ({}), [method]: 'nope' };
      expect(configError(() => make({}, connector)).field).toBe(`connector.${method}`);
    },
  );

  it("refuses a connector with generic-pool's destroy() and no close(), naming the fix; takes one with both", () => {
    const connector = { create: async () => ({}), destroy: async () => {} };
    const err = configError(() => make({}, connector));
    expect(err.field).toBe('connector.destroy');
    expect(err.message).toBe(
      `pool "orders": option "connector.destroy" is generic-pool's and tarn's name: this pool closes a connection with connector.close(conn). Rename it to close`,
    );
    expect(() => make({}, { ...connector, close: async () => {} })).not.toThrow();
  });

  it('rejects a connector that is not an object', () => {
    expect(configError(() => make({}, null)).field).toBe('connector');
  });

  it('fills in the documented defaults', () => {
    const connector = new FakeConnector();
    connector.clientLimit = undefined;
    const pool = make({}, connector);
    const o = pool.options;
    expect([
      o.maxSize,
      o.minSize,
      o.clientLimit,
      o.maxIdleMs,
      o.maxLifetimeMs,
      o.createTimeoutMs,
      o.acquireTimeoutMs,
    ]).toEqual([10, 0, 1, 300_000, Infinity, 10_000, 60_000]);
    expect([o.blockingPeriod, o.breakerFailures, o.breakerAfterMs]).toEqual([true, 5, 5_000]);
    expect([o.strategy, o.maxConcurrentCreates, o.growAt, o.maxWaiting]).toEqual(['spread', 10, 0.8, Infinity]);
    expect(o.health).toEqual({ degraded: 0.7, critical: 0.9 });
    expect(o.maxUses).toBe(Infinity);
    expect(o.tracing).toBe(true);
    void pool.close();
  });

  it('takes clientLimit from the connector unless the options give one, and refuses a bad declared one', () => {
    const declared = new FakeConnector();
    declared.clientLimit = 50;
    expect(make({}, declared).options.clientLimit).toBe(50);
    expect(make({ clientLimit: 2 }, declared).options.clientLimit).toBe(2);
    const bad = new FakeConnector();
    bad.clientLimit = 0;
    expect(configError(() => make({}, bad)).message).toBe(
      'pool "orders": option "connector.clientLimit" must be a whole number from 1 to 1,000,000 (callers one connection serves at once; a slot is kept for each count), got 0',
    );
  });

  it('rejects bad acquire() options without queuing anything', async () => {
    const { pool } = makePool();
    await expect(pool.acquire({ timeoutMs: -1 })).rejects.toMatchObject({
      code: 'POOL_CONFIG',
      field: 'acquire.timeoutMs',
    });
    await expect(pool.acquire({ signal: {} as AbortSignal })).rejects.toMatchObject({ field: 'acquire.signal' });
    await expect(pool.use(() => 1, { retry: { attempts: 0 } })).rejects.toMatchObject({ field: 'retry.attempts' });
    expect(pool.stats()).toMatchObject({ waiting: 0, clients: 0, size: 0 });
    await pool.close();
  });
});

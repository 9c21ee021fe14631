// One way to check options, in every layer: the same PoolConfigError shape (subject, name,
// field, "must be <rule>, got <value>") whether the bad value is a pool option, a call option,
// a limiter or Redis option, a module option or a decorator option.
import { describe, expect, it } from '@jest/globals';
import { closest, editDistance } from '../../lib/core/common/option-rules.js';
import { is, OptionReader, shown, violation } from '../../lib/core/common/option-rules.js';
import {
  ConnectionPool,
  LocalLimiter,
  PoolConfigError,
  PoolGroup,
  PoolModule,
  RedisLimiter,
  UsePooled,
  type ConfigSubject,
  type UsePooledOptions,
} from '../../lib/index.js';
import { FakeConnector } from '../support/fake-connector.js';
import { configError } from '../support/harness.js';

/** `@UsePooled('db', options)` on `Catalog.find`. */
function onFind(options: UsePooledOptions): void {
  class Catalog {
    async find(): Promise<void> {}
  }
  UsePooled('db', options)(Catalog.prototype, 'find', Object.getOwnPropertyDescriptor(Catalog.prototype, 'find')!);
}

describe('option rules', () => {
  it('say what a value must be and test it; NaN is never a number, Infinity only where not finite', () => {
    expect([
      is.whole(1).ok(1),
      is.whole(1).ok(0),
      is.whole(1).ok(1.5),
      is.whole(1).ok(Infinity),
      is.whole(0).ok('3'),
    ]).toEqual([true, false, false, false, false]);
    expect([is.atLeast(0).ok(Infinity), is.atLeast(0).ok(NaN), is.atLeast(0).ok(-1)]).toEqual([true, false, false]);
    expect([is.above(0).ok(0), is.above(0).ok(1e-9), is.finiteAbove(0).ok(Infinity)]).toEqual([false, true, false]);
    expect([is.from(0, 0.5).ok(0), is.from(0, 0.5).ok(0.5), is.fraction.ok(1), is.fraction.ok(0)]).toEqual([
      true,
      false,
      true,
      false,
    ]);
    expect([is.oneOf('a', 'b').ok('b'), is.oneOf('a', 'b').ok('c'), is.oneOf('a', 'b').says]).toEqual([
      true,
      false,
      "'a' or 'b'",
    ]);
    expect(is.noted(is.atLeast(0), 'Infinity: forever').says).toBe('a number of 0 or more (Infinity: forever)');
  });

  it('show numbers as written, strings quoted, other values by type', () => {
    expect([
      shown(2.5),
      shown(NaN),
      shown('10'),
      shown(''),
      shown(null),
      shown([1]),
      shown({}),
      shown(() => 1),
    ]).toEqual(['2.5', 'NaN', '"10"', 'an empty string', 'null', 'an array', 'object', 'function']);
  });

  it('read defaults for absent fields, and name nested fields with their path', () => {
    const read = new OptionReader({ subject: 'limiter', name: 'orders', path: 'limits.' }, {
      global: 5,
      redis: { pollMs: 0 },
    } as {
      global?: number;
      perKey?: number;
      redis?: { pollMs?: number };
    });
    expect(read.get('global', is.whole(1), Infinity)).toBe(5);
    expect(read.get('perKey', is.whole(1), Infinity)).toBe(Infinity);
    const err = configError(() => read.nested('redis').get('pollMs', is.finiteAtLeast(1), 100));
    expect([err.subject, err.pool, err.field]).toEqual(['limiter', 'orders', 'limits.redis.pollMs']);
    expect(err.message).toBe(
      'limiter "orders": option "limits.redis.pollMs" must be a finite number of 1 or more, got 0',
    );
    expect(violation({ subject: 'pool', name: 'p' }, 'x', undefined, is.whole(1))).toBeUndefined();
  });

  // Every layer, one shape: [subject, name, field, message] for one bad value each.
  const connector = new FakeConnector();
  const cases: [string, () => unknown, ConfigSubject, string, string, string][] = [
    [
      'pool option',
      () => new ConnectionPool(connector, { name: 'db', maxSize: 2.5 }),
      'pool',
      'db',
      'maxSize',
      'pool "db": option "maxSize" must be a whole number from 1 to 100,000 (a pool of more connections than one process can open is no bound), got 2.5',
    ],
    [
      'pool option of the wrong type',
      () => new ConnectionPool(connector, { name: 'db', strategy: 7 as never }),
      'pool',
      'db',
      'strategy',
      'pool "db": option "strategy" must be \'spread\' or \'pack\', got 7',
    ],
    [
      'limiter option',
      () => new LocalLimiter({ name: 'db:limits', perKey: 0 }),
      'limiter',
      'db:limits',
      'limits.perKey',
      'limiter "db:limits": option "limits.perKey" must be a whole number of 1 or more, or a function (key) => limit, got 0',
    ],
    [
      'limiter flag',
      () => new LocalLimiter({ wait: 'yes' as never }),
      'limiter',
      'limits',
      'limits.wait',
      `limiter "limits": option "limits.wait" must be true, false or 'global', got "yes"`,
    ],
    [
      'Redis option',
      () =>
        new RedisLimiter({
          name: 'api',
          global: 5,
          redis: { url: 'redis://127.0.0.1:6379', fallback: 'open' as never },
        }),
      'limiter',
      'api',
      'limits.redis.fallback',
      'limiter "api": option "limits.redis.fallback" must be \'local\' or \'fail-closed\', got "open"',
    ],
    [
      'module option',
      () => PoolModule.forRoot({ pools: [{ name: 'db', connector }], shutdownGraceMs: -1 } as never),
      'module',
      'PoolModule.forRoot',
      'shutdownGraceMs',
      'PoolModule.forRoot: option "shutdownGraceMs" must be a number of 0 or more (Infinity: wait for every lease), got -1',
    ],
    [
      'module flag',
      () => PoolModule.forRoot({ pools: [{ name: 'db', connector }], isGlobal: 1 as never }),
      'module',
      'PoolModule.forRoot',
      'isGlobal',
      'PoolModule.forRoot: option "isGlobal" must be true or false, got 1',
    ],
    [
      'decorator option',
      () => onFind({ key: 'user' as never }),
      'decorator',
      "@UsePooled('db') on Catalog.find",
      'key',
      "@UsePooled('db') on Catalog.find: key must be a function of the method's arguments, or false for calls without a key, got \"user\"",
    ],
    [
      'use() option through the decorator',
      () => onFind({ retry: { attempts: 0 } }),
      'decorator',
      "@UsePooled('db') on Catalog.find",
      'retry.attempts',
      "@UsePooled('db') on Catalog.find: retry.attempts must be a whole number of 1 or more, got 0",
    ],
  ];

  it.each(cases)('give one error shape for a bad %s', (_what, fn, subject, name, field, message) => {
    const err = configError(fn);
    expect([err.subject, err.pool, err.field, err.code]).toEqual([subject, name, field, 'POOL_CONFIG']);
    expect(err.message).toBe(message);
  });

  it.each([
    ['maxSize', { maxSize: 1e308 }],
    ['maxSize', { maxSize: 100_001 }],
    ['growMaxSizeTo', { maxSize: 2, growMaxSizeTo: Number.MAX_VALUE }],
    ['clientLimit', { clientLimit: 1e9 }],
    ['minSize', { minSize: 2 ** 60 }],
    ['maxConcurrentCreates', { maxConcurrentCreates: 1e21 }],
  ])('refuse a number so large it stands for no bound: %s in %j', (field, options) => {
    const err = configError(() => new ConnectionPool(connector, { name: 'db', ...options }));
    expect(err.field).toBe(field);
    expect(err.message).toMatch(/must be a whole number (of|from) [01]/);
  });

  it('refuse a group budget past what one process can open', () => {
    const err = configError(() => new PoolGroup({ name: 'g', maxTotal: 1e308, connector: () => connector }));
    expect(err.message).toBe(
      'pool group "g": option "maxTotal" must be a whole number from 1 to 100,000 (a pool of more connections than one process can open is no bound), got 1e+308',
    );
  });

  it('give the same shape for bad call options, which reject instead of throwing', async () => {
    const pool = new ConnectionPool(connector, { name: 'db' });
    try {
      const err = (await pool.acquire({ timeoutMs: 0 }).catch((e: unknown) => e)) as PoolConfigError;
      expect(err).toBeInstanceOf(PoolConfigError);
      expect([err.subject, err.field, err.message]).toEqual([
        'pool',
        'acquire.timeoutMs',
        'pool "db": option "acquire.timeoutMs" must be a number above 0, got 0',
      ]);
      const closing = (await pool.close({ graceMs: NaN }).catch((e: unknown) => e)) as PoolConfigError;
      expect(closing.message).toBe(
        'pool "db": option "close.graceMs" must be a number of 0 or more (Infinity: wait for every lease), got NaN',
      );
      expect(pool.stats().counters.acquired).toBe(0);
    } finally {
      await pool.close();
    }
  });
});

describe('did you mean', () => {
  it('counts edits, a swap of neighbours as one, ignoring case', () => {
    expect([
      editDistance('maxSize', 'maxSize'),
      editDistance('maxsize', 'maxSize'),
      editDistance('maxSzie', 'maxSize'),
      editDistance('maxSiz', 'maxSize'),
      editDistance('', 'abc'),
      editDistance('kitten', 'sitting'),
    ]).toEqual([0, 0, 1, 1, 3, 3]);
  });

  it('offers the nearest name only when it is near, and a name a candidate begins with', () => {
    const keys = ['maxSize', 'minSize', 'maxIdleMs', 'failOnWarmupError'];
    expect(closest('maxsize', keys)).toBe('maxSize');
    expect(closest('maxSzie', keys)).toBe('maxSize');
    expect(closest('failOnWarmup', keys)).toBe('failOnWarmupError');
    expect(closest('size', keys)).toBeUndefined();
    expect(closest('timeout', keys)).toBeUndefined();
    expect(closest('x', [])).toBeUndefined();
  });
});

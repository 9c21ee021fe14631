// The adaptive limiter in front of a real pool: it learns from how use() calls end, grows while
// they succeed, cuts on overload, pauses for a Retry-After, ignores errors that say nothing about
// capacity, survives a classifier that throws, and keeps the per-key limit.
import { describe, expect, it } from '@jest/globals';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import {
  CapacityExceededError,
  ConnectionPool,
  KeyLimitError,
  POOL_CHANNELS,
  type CallResult,
  type Lease,
} from '../../lib/index.js';
import { AdaptiveLimiter, classifyCall } from '../../lib/limits/index.js';
import { FakeConnector } from '../support/fake-connector.js';
import { RecordingLogger, track } from '../support/harness.js';
import { flush, VirtualClock } from '../support/virtual-clock.js';

/** A pool of shared connections behind an adaptive limiter, both on one virtual clock. */
function setup(options: ConstructorParameters<typeof AdaptiveLimiter>[0] = {}) {
  const clock = new VirtualClock();
  const logger = new RecordingLogger();
  const limiter = new AdaptiveLimiter({ clock, logger, ...options });
  const pool = new ConnectionPool(new FakeConnector(), {
    name: 'test',
    clock,
    logger,
    lifetimeJitter: 0,
    maxSize: 4,
    clientLimit: 100,
    limiter,
  });
  return { pool, clock, limiter, logger };
}

describe('AdaptiveLimiter', () => {
  it('grows while calls at its limit succeed, one step per limit’s worth of them', async () => {
    const { pool, limiter } = setup({ adaptive: { algorithm: 'aimd', initial: 4, max: 8 } });
    for (let round = 0; round < 40; round++)
      await Promise.all(Array.from({ length: limiter.limit }, () => pool.use(async () => ({ status: 200 }))));
    expect(limiter.limit).toBe(8);
    const { adaptive } = limiter.stats();
    expect(adaptive).toMatchObject({ algorithm: 'aimd', limit: 8, min: 1, max: 8, overloads: 0, ignored: 0 });
    expect(adaptive!.changes.map((c) => [c.from, c.to, c.reason])).toEqual([
      [4, 5, 'success'],
      [5, 6, 'success'],
      [6, 7, 'success'],
      [7, 8, 'success'],
    ]);
    expect(limiter.stats()).toMatchObject({ mode: 'local', limit: 8 });
    await pool.close();
  });

  it('cuts on a 429 and admits nothing for its Retry-After, then admits again', async () => {
    const { pool, clock, limiter } = setup({
      adaptive: { algorithm: 'aimd', initial: 10, backoff: 0.5 },
      pauseProbeMs: Infinity,
    });
    const answer = await pool.use(async () => ({ status: 429, headers: { 'retry-after': '2' } }));
    expect(answer.status).toBe(429); // the caller gets the answer as it was
    expect(limiter.limit).toBe(5);
    expect(limiter.stats().adaptive).toMatchObject({
      overloads: 1,
      pausedMs: 2_000,
      changes: [{ from: 10, to: 5, reason: 'overload' }],
    });
    const paused = track(pool.use(async () => 'too early'));
    await flush();
    expect(paused.error).toBeInstanceOf(CapacityExceededError);
    expect(paused.error).toMatchObject({ reason: 'paused', retryAfterMs: 2_000 });
    expect((paused.error as Error).message).toBe(
      'pool "test": the upstream asked for a pause (Retry-After): admissions resume in 2000 ms',
    );
    await clock.advance(1_500);
    await expect(pool.use(async () => 'still early')).rejects.toMatchObject({ reason: 'paused', retryAfterMs: 500 });
    await clock.advance(500);
    await expect(pool.use(async () => 'in time')).resolves.toBe('in time');
    await pool.close();
  });

  it.each([
    ['a Retry-After of 99999999 s', () => ({ status: 503, headers: { 'retry-after': '99999999' } }), undefined],
    [
      'a classify() asking for 10^15 ms',
      () => ({ status: 503 }),
      () => ({ overload: true, retryAfterMs: 1e15 }) as const,
    ],
    [
      'a classify() asking for Infinity',
      () => ({ status: 503 }),
      () => ({ overload: true, retryAfterMs: Infinity }) as const,
    ],
  ])('pauses for at most maxPauseMs, however long %s asks for', async (_what, answer, classify) => {
    const { pool, clock, limiter } = setup({
      maxPauseMs: 5_000,
      pauseProbeMs: Infinity,
      ...(classify === undefined ? {} : { classify }),
    });
    await pool.use(async () => answer());
    expect(limiter.stats().adaptive!.pausedMs).toBe(5_000);
    await expect(pool.use(async () => 'early')).rejects.toMatchObject({ reason: 'paused', retryAfterMs: 5_000 });
    await clock.advance(5_000);
    await expect(pool.use(async () => 'after the cap')).resolves.toBe('after the cap');
    await pool.close();
  });

  it('pauses 30 s at most by default, and not at all with maxPauseMs: 0', async () => {
    const capped = setup({ pauseProbeMs: Infinity });
    await capped.pool.use(async () => ({ status: 429, headers: { 'retry-after': '3600' } }));
    expect(capped.limiter.stats().adaptive!.pausedMs).toBe(30_000);
    const never = setup({ maxPauseMs: 0 });
    await never.pool.use(async () => ({ status: 429, headers: { 'retry-after': '3600' } }));
    expect(never.limiter.stats().adaptive!.pausedMs).toBe(0);
    await expect(never.pool.use(async () => 'admitted')).resolves.toBe('admitted');
    await Promise.all([capped.pool.close(), never.pool.close()]);
  });

  it('lets one probe through the pause every pauseProbeMs: its success ends the pause, an overload renews it', async () => {
    const { pool, clock, limiter } = setup({ pauseProbeMs: 1_000 });
    await pool.use(async () => ({ status: 503, headers: { 'retry-after': '20' } }));
    // No probe before pauseProbeMs: the upstream just said it is full.
    await expect(pool.use(async () => 'early')).rejects.toMatchObject({ reason: 'paused' });
    await clock.advance(1_000);
    // The probe is out: the calls beside it are refused, and so is a second probe.
    let answerProbe!: (v: unknown) => void;
    const probe = pool.use(() => new Promise((resolve) => (answerProbe = resolve)));
    await flush();
    await expect(pool.use(async () => 'beside the probe')).rejects.toMatchObject({ reason: 'paused' });
    answerProbe({ status: 503, headers: { 'retry-after': '20' } });
    await probe;
    expect(limiter.stats().adaptive!.pausedMs).toBe(20_000); // renewed from the probe's answer
    await clock.advance(999);
    await expect(pool.use(async () => 'too soon for a probe')).rejects.toMatchObject({ reason: 'paused' });
    await clock.advance(1);
    await expect(pool.use(async () => ({ status: 200 }))).resolves.toEqual({ status: 200 });
    expect(limiter.stats().adaptive!.pausedMs).toBe(0); // the success ended it, 19 s early
    await expect(pool.use(async () => 'admitted')).resolves.toBe('admitted');
    await pool.close();
  });

  it('keeps pausing when a probe ends in an error that says nothing, or throws, or its lease is released by hand', async () => {
    const { pool, clock, limiter } = setup({ pauseProbeMs: 100 });
    await pool.use(async () => ({ status: 503, headers: { 'retry-after': '10' } }));
    await clock.advance(100);
    await expect(pool.use(async () => Promise.reject(new Error('a 404')))).rejects.toThrow('a 404');
    expect(limiter.stats().adaptive!.pausedMs).toBeGreaterThan(9_000);
    await clock.advance(100);
    const lease = await pool.acquire();
    lease.release();
    expect(limiter.stats().adaptive!.pausedMs).toBeGreaterThan(9_000);
    await clock.advance(100);
    await expect(pool.use(async () => 'the next probe')).resolves.toBe('the next probe');
    expect(limiter.stats().adaptive!.pausedMs).toBe(0);
    await pool.close();
  });

  it('lets the next probe through when one is aborted while it waits for a connection', async () => {
    const clock = new VirtualClock();
    const limiter = new AdaptiveLimiter({ clock, logger: new RecordingLogger(), pauseProbeMs: 100 });
    const pool = new ConnectionPool(new FakeConnector(), {
      name: 'one',
      clock,
      logger: new RecordingLogger(),
      maxSize: 1,
      clientLimit: 1,
      limiter,
    });
    const blocker = await pool.acquire(); // the pool's one connection, taken before the pause
    const overload = await limiter.admit({ pool: 'one', timeoutMs: 1 });
    overload.ended!({ ok: true, value: { status: 503, headers: { 'retry-after': '10' } } });
    overload.release();
    await clock.advance(100);
    const aborted = new AbortController();
    const probe = track(pool.use(async () => 'never', { signal: aborted.signal })); // admitted as the probe, waits for the connection
    await flush();
    await expect(pool.use(async () => 'beside')).rejects.toMatchObject({ reason: 'paused' });
    aborted.abort(new Error('caller left'));
    await flush();
    expect((probe.error as Error).message).toBe('caller left');
    blocker.release();
    await clock.advance(100);
    await expect(pool.use(async () => 'next probe')).resolves.toBe('next probe');
    expect(limiter.stats().adaptive!.pausedMs).toBe(0);
    await pool.close();
  });

  it.each([
    [
      { maxPauseMs: Infinity },
      'option "limits.maxPauseMs" must be a finite number of 0 or more (a pause must end: 0 never pauses), got Infinity',
    ],
    [{ maxPauseMs: -1 }, 'got -1'],
    [{ pauseProbeMs: 0 }, 'option "limits.pauseProbeMs" must be a number above 0 (Infinity: no probes), got 0'],
  ])('refuses %j', (options, message) => {
    expect(() => new AdaptiveLimiter(options)).toThrow(message);
  });

  it('publishes each change of its limit on the limiter:limit channel, and its limit as the pool’s limit in stats', async () => {
    const seen: unknown[] = [];
    const listen = (message: unknown) => void seen.push(message);
    subscribe(POOL_CHANNELS.limiterLimit, listen);
    try {
      const { pool } = setup({ name: 'llm-limits', adaptive: { algorithm: 'aimd', initial: 10, backoff: 0.5 } });
      await pool.use(async () => ({ status: 503 }));
      expect(seen).toEqual([{ limiter: 'llm-limits', from: 10, to: 5, reason: 'overload' }]);
      expect(pool.stats().admission!.limit).toBe(5);
      await pool.close();
    } finally {
      unsubscribe(POOL_CHANNELS.limiterLimit, listen);
    }
  });

  it('counts an error that says nothing about capacity as ignored, and passes it on', async () => {
    const { pool, limiter } = setup();
    await expect(pool.use(async () => Promise.reject(new Error('404: no such item')))).rejects.toThrow(
      '404: no such item',
    );
    expect(limiter.stats().adaptive).toMatchObject({ ignored: 1, overloads: 0, successes: 0, limit: 10 });
    await pool.close();
  });

  it('survives a classifier that throws: the call’s result stands, it is logged once and not counted', async () => {
    const { pool, limiter, logger } = setup({
      classify: () => {
        throw new Error('classifier bug');
      },
    });
    await expect(pool.use(async () => 'fine')).resolves.toBe('fine');
    await expect(pool.use(async () => 'fine again')).resolves.toBe('fine again');
    expect(limiter.stats().adaptive).toMatchObject({ ignored: 2, limit: 10 });
    expect(logger.errors).toEqual(['limiter: its classify() threw (classifier bug); such calls are not counted']);
    await pool.close();
  });

  it('learns nothing from a lease taken by hand (nobody tells it how the call ended), and frees its slot', async () => {
    const { pool, limiter } = setup({ wait: false, adaptive: { algorithm: 'aimd', initial: 2 } });
    const a = await pool.acquire();
    const b = await pool.acquire();
    await expect(pool.acquire({ timeoutMs: 1 })).rejects.toBeInstanceOf(CapacityExceededError);
    a.release();
    b.release();
    expect(limiter.stats()).toMatchObject({ used: 0, adaptive: { successes: 0, overloads: 0, ignored: 0 } });
    await pool.close();
  });

  it('lets a caller over the global limit wait for a slot within its deadline by default, answers a key over its own limit at once, and refuses at once with wait: false', async () => {
    const { pool, clock } = setup({ adaptive: { algorithm: 'aimd', initial: 1 } });
    const first = await pool.acquire();
    let second: Lease<unknown> | undefined;
    const waiting = pool.acquire({ timeoutMs: 1_000 }).then((lease) => (second = lease));
    await clock.advance(500);
    expect(second).toBeUndefined(); // waiting, not refused
    first.release();
    await waiting;
    expect(second).toBeDefined();
    second!.release();
    // Past its deadline, the waiter is refused with the limit's error.
    const held = await pool.acquire();
    const late = pool.acquire({ timeoutMs: 200 });
    const seen = expect(late).rejects.toBeInstanceOf(CapacityExceededError);
    await clock.advance(200);
    await seen;
    held.release();
    await pool.close();
    // A key over its own limit is answered at once (429), the global limit waiting or not.
    const keyed = setup({ perKey: 1, adaptive: { algorithm: 'aimd', initial: 10 } });
    const ann = await keyed.pool.acquire({ key: 'ann' });
    await expect(keyed.pool.acquire({ key: 'ann', timeoutMs: 1_000 })).rejects.toBeInstanceOf(KeyLimitError);
    ann.release();
    await keyed.pool.close();
    const fast = setup({ wait: false, adaptive: { algorithm: 'aimd', initial: 1 } });
    const only = await fast.pool.acquire();
    await expect(fast.pool.acquire({ timeoutMs: 1_000 })).rejects.toBeInstanceOf(CapacityExceededError);
    only.release();
    await fast.pool.close();
  });

  it('keeps the per-key limit while the global one moves', async () => {
    expect(
      new AdaptiveLimiter({ perKey: 50, adaptive: { algorithm: 'aimd', initial: 10, max: 100 } }).stats(),
    ).toMatchObject({ limit: 10, perKey: 50 }); // above the first limit, within max
    expect(() => new AdaptiveLimiter({ perKey: 500, adaptive: { algorithm: 'aimd', max: 100 } })).toThrow(
      'limiter "limits": option "limits.perKey" (500) must not exceed limits.adaptive.max (100): no key could ever use more than the limit can reach',
    );
    const { pool, limiter } = setup({ wait: false, perKey: 1, adaptive: { algorithm: 'aimd', initial: 10 } });
    const held = await pool.acquire({ key: 'ann' });
    await expect(pool.acquire({ key: 'ann', timeoutMs: 1 })).rejects.toBeInstanceOf(KeyLimitError);
    await expect(pool.use(async () => 'bob is fine', { key: 'bob' })).resolves.toBe('bob is fine');
    held.release();
    expect(limiter.stats().perKey).toBe(1);
    await pool.close();
  });

  it('refuses bad options with errors that name them', () => {
    expect(() => new AdaptiveLimiter({ adaptive: { algorithm: 'cubic' } as never })).toThrow(
      'limiter "limits": option "limits.adaptive.algorithm" must be \'aimd\' or \'gradient\' or \'vegas\', got "cubic"',
    );
    expect(() => new AdaptiveLimiter({ classify: 42 as never })).toThrow(
      'limiter "limits": option "limits.classify" must be a function, got 42',
    );
    expect(() => new AdaptiveLimiter({ global: 5 } as never)).toThrow(
      'limiter "limits": option "limits.global" is what the adaptive limit sets: bound it with adaptive.min, adaptive.max and adaptive.initial instead',
    );
    expect(() => new AdaptiveLimiter({ wait: 'yes' } as never)).toThrow(
      'limiter "limits": option "limits.wait" must be true, false or \'global\', got "yes"',
    );
    expect(() => new AdaptiveLimiter({ perKey: 0 })).toThrow(
      'limiter "limits": option "limits.perKey" must be a whole number of 1 or more, or a function (key) => limit, got 0',
    );
  });
});

describe('classifyCall', () => {
  const ok = (value: unknown): CallResult => ({ ok: true, value });
  const failed = (error: unknown): CallResult => ({ ok: false, error });
  const timeout = Object.assign(new Error('timed out'), { name: 'TimeoutError' });

  it.each([
    ['an answer', ok({ status: 200 }), 'success'],
    ['a value without a status', ok('text'), 'success'],
    [
      'a 429 with Retry-After in seconds',
      ok({ status: 429, headers: { 'retry-after': '3' } }),
      { overload: true, retryAfterMs: 3_000 },
    ],
    ['a 503 without Retry-After', ok({ status: 503, headers: {} }), { overload: true }],
    [
      'a 429 with Retry-After in a Headers object',
      ok({ status: 429, headers: new Headers({ 'retry-after': '1' }) }),
      { overload: true, retryAfterMs: 1_000 },
    ],
    [
      'an error with statusCode 503',
      failed(Object.assign(new Error('unavailable'), { statusCode: 503 })),
      { overload: true },
    ],
    ['a TimeoutError', failed(timeout), { overload: true }],
    [
      'an abort for a timeout',
      failed(Object.assign(new Error('aborted'), { name: 'AbortError', cause: timeout })),
      { overload: true },
    ],
    ['ETIMEDOUT', failed(Object.assign(new Error('connect ETIMEDOUT'), { code: 'ETIMEDOUT' })), { overload: true }],
    ['the pool’s CapacityExceededError', failed(new CapacityExceededError('db', 5, 1_000)), { overload: true }],
    ['a plain error', failed(new Error('bad request')), 'ignore'],
    ['a thrown string', failed('oops'), 'ignore'],
    ['an abort that is not a timeout', failed(Object.assign(new Error('aborted'), { name: 'AbortError' })), 'ignore'],
  ])('%s', (_what, result, verdict) => {
    expect(classifyCall(result)).toEqual(verdict);
  });

  it('reads a Retry-After given as an HTTP date, and caps it at an hour', () => {
    const inTwoSeconds = new Date(Date.now() + 2_000).toUTCString();
    const verdict = classifyCall(ok({ status: 429, headers: { 'retry-after': inTwoSeconds } })) as {
      retryAfterMs: number;
    };
    expect(verdict.retryAfterMs).toBeGreaterThan(0);
    expect(verdict.retryAfterMs).toBeLessThanOrEqual(2_000);
    expect(classifyCall(ok({ status: 429, headers: { 'retry-after': '999999' } }))).toEqual({
      overload: true,
      retryAfterMs: 3_600_000,
    });
    expect(classifyCall(ok({ status: 429, headers: { 'retry-after': 'soon' } }))).toEqual({ overload: true });
  });
});

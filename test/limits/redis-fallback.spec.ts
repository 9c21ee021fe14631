import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { CapacityExceededError, KeyLimitError, POOL_CHANNELS, RedisLimiter, type Admission } from '../../lib/index.js';
import { RecordingLogger } from '../support/harness.js';
import { inspector, leasesIn, namespace, started } from '../support/redis.js';
import { RedisServer } from '../support/redis-server.js';
import { VirtualClock } from '../support/virtual-clock.js';
import { sleep, until } from '../support/wait.js';

const ask = (key: string) => ({ pool: 'api', key, timeoutMs: 0 });

describe('RedisLimiter when Redis goes away and comes back', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await server.stop();
  });

  it('serves under local limits while Redis is down, then shares the limits again, leaking nothing', async () => {
    const modes: { limiter: string; from: string; to: string }[] = [];
    const onMode = (m: unknown) => modes.push(m as (typeof modes)[number]);
    subscribe(POOL_CHANNELS.limiterMode, onMode);
    const ns = namespace(server.url);
    const logger = new RecordingLogger();
    const make = () =>
      started(
        new RedisLimiter({
          global: 6,
          perKey: 2,
          logger,
          redis: {
            url: server.url,
            namespace: ns,
            leaseTtlMs: 600,
            heartbeatMs: 150,
            // Long enough that b, which may see the outage a heartbeat before a, still refuses when
            // the test sees a unreachable on a loaded machine (at 300 ms, b was once in fallback).
            fallbackAfterMs: 1_500,
            commandTimeoutMs: 200,
            instances: 2,
          },
        }),
      );
    const [a, b] = [await make(), await make()];
    await until(() => a.stats().mode === 'redis' && b.stats().mode === 'redis'); // first use of a namespace: one TTL of quarantine
    const held: Admission[] = [await a.admit(ask('ann')), await a.admit(ask('bob'))];
    await until(() => b.stats().used === 2); // b heard of a's leases

    await server.stop();
    await until(() => a.stats().mode === 'unreachable');
    await expect(b.admit(ask('cy'))).rejects.toMatchObject({ reason: 'unavailable' });
    await until(() => a.stats().mode === 'fallback' && b.stats().mode === 'fallback');
    // Each instance gets its share: 6 / 2 = 3 leases, 2 / 2 = 1 per key, and no more than it held
    // when Redis last answered and its part of the 4 slots then free: a 2 + 2, so 3; b 0 + 2.
    held.push(await a.admit(ask('dee')));
    await expect(a.admit(ask('eve'))).rejects.toBeInstanceOf(CapacityExceededError);
    held.push(await b.admit(ask('cy')));
    await expect(b.admit(ask('cy'))).rejects.toBeInstanceOf(KeyLimitError);
    held.push(await b.admit(ask('dee')));
    await expect(b.admit(ask('fay'))).rejects.toBeInstanceOf(CapacityExceededError);
    expect(b.stats()).toMatchObject({ mode: 'fallback', held: 2, used: 2 });

    // Redis has been away for more than a TTL: a's leases, admitted through Redis, may have lapsed
    // there (in a partition, other instances could have their slots), so their work is told to stop.
    // They still count locally until released.
    await until(() => held[0]!.signal.aborted && held[1]!.signal.aborted, 1_000);
    expect(held.slice(0, 2).map((l) => (l.signal.reason as Error)?.message)).toEqual([
      expect.stringMatching(/no heartbeat confirmed it within its TTL/),
      expect.stringMatching(/no heartbeat confirmed it within its TTL/),
    ]);
    expect(a.stats()).toMatchObject({ held: 3, counters: { lost: 2 } });

    await server.start();
    // Back: a restarted Redis means a quarantine, in which b registers what it admitted meanwhile.
    await until(() => a.stats().mode !== 'fallback' && b.stats().mode !== 'fallback');
    const redis = inspector(server.url);
    await until(() => a.stats().mode === 'redis' && b.stats().mode === 'redis');
    expect(await leasesIn(redis, ns)).toBe(3); // what a and b admitted meanwhile
    expect(held.slice(2).some((l) => l.signal.aborted)).toBe(false);

    for (const lease of held) lease.release();
    await sleep(100);
    expect(await leasesIn(redis, ns)).toBe(0);
    expect([a.stats().held, b.stats().held]).toEqual([0, 0]);
    expect(logger.warnings.some((w) => w.includes('Redis is unreachable'))).toBe(true);
    expect(logger.warnings.some((w) => w.includes('Redis is reachable again'))).toBe(true);
    // Every change of mode was published, by both instances, in the order it happened.
    unsubscribe(POOL_CHANNELS.limiterMode, onMode);
    const path = [...new Set(modes.map((m) => `${m.from} → ${m.to}`))];
    expect(modes.every((m) => m.limiter === 'limits')).toBe(true);
    expect(path).toEqual([
      'quarantine → redis',
      'redis → unreachable',
      'unreachable → fallback',
      'fallback → quarantine',
    ]);
    const last = modes[modes.length - 1]!;
    expect(`${last.from} → ${last.to}`).toBe('quarantine → redis'); // back through a quarantine after the restart
  });

  it('keeps the fleet within the global limit without Redis when one instance held more than its share', async () => {
    const ns = namespace(server.url);
    const make = () =>
      started(
        new RedisLimiter({
          global: 4,
          logger: new RecordingLogger(),
          redis: { url: server.url, namespace: ns, leaseTtlMs: 600, heartbeatMs: 150, fallbackAfterMs: 300 },
        }),
      );
    const [a, b] = [await make(), await make()];
    await until(() => a.stats().mode === 'redis' && b.stats().mode === 'redis');
    const held = [await a.admit(ask('x')), await a.admit(ask('y')), await a.admit(ask('z'))];
    await until(() => b.stats().used === 3);

    await server.stop();
    await until(() => a.stats().mode === 'fallback' && b.stats().mode === 'fallback');
    // The even share is 4 / 2 = 2. a holds 3, more than it: nothing new. b held nothing, and the one
    // slot then free is not its to take alone (half of it is its part): nothing either. An even share
    // for b would have made 5 of 4.
    await expect(a.admit(ask('w'))).rejects.toBeInstanceOf(CapacityExceededError);
    await expect(b.admit(ask('w'))).rejects.toBeInstanceOf(CapacityExceededError);
    // As a gives back, it may take again up to what it held, never past its even share: 2.
    held.pop()!.release();
    held.pop()!.release();
    held.push(await a.admit(ask('v')));
    await expect(a.admit(ask('u'))).rejects.toBeInstanceOf(CapacityExceededError);

    await server.start();
    await until(() => a.stats().mode !== 'fallback' && b.stats().mode !== 'fallback');
    for (const lease of held) lease.release();
    await a.close();
    await b.close();
  });

  it('counts its own leases as Redis did at its last answer: a burst given back as Redis stalls leaves its whole share', async () => {
    const ns = namespace(server.url);
    const a = await started(
      new RedisLimiter({
        global: 6,
        logger: new RecordingLogger(),
        redis: {
          url: server.url,
          namespace: ns,
          leaseTtlMs: 1_000,
          commandTimeoutMs: 200,
          fallbackAfterMs: 0,
          instances: 1,
        },
      }),
    );
    await until(() => a.stats().mode === 'redis');
    // Six admitted in two calls (one, then five batched); their releases sent and never answered.
    const burst = await Promise.all(Array.from({ length: 6 }, (_, i) => a.admit(ask(`k${i}`))));
    // Redis last answered "6 leases", all of them this instance's: none are others', so its share
    // is all 6 (not the 1 it held when that answer was read, nor 0 after the releases).
    await givenBackAsRedisStalls(a, burst);
    await until(() => a.stats().mode === 'redis', 10_000);
    await a.close();
  }, 30_000);

  it('counts as its own the leases of an admission call answered after a heartbeat was built, before that heartbeat', async () => {
    const clock = new VirtualClock(); // the heartbeat fires when the test says, at an exact point
    const a = await started(
      new RedisLimiter({
        global: 6,
        clock,
        logger: new RecordingLogger(),
        redis: {
          url: server.url,
          namespace: namespace(server.url),
          leaseTtlMs: 1_000,
          heartbeatMs: 300,
          commandTimeoutMs: 200,
          fallbackAfterMs: 0,
          instances: 1,
          restartProtection: false,
        },
      }),
    );
    expect(a.stats().mode).toBe('redis');
    // One admission call for 'k0'; the other five wait for it and go in the next call. Once k0 is
    // held, that call is on its way and unanswered: the heartbeat built now holds k0 alone, and Redis
    // runs it after the five, so it counts 6 leases, all this instance's.
    const five = Array.from({ length: 5 }, (_, i) => `k${i + 1}`);
    const burst = await Promise.all([
      a.admit(ask('k0')).then((lease) => (clock.advanceNow(300), lease)),
      ...five.map((k) => a.admit(ask(k))),
    ]);
    await sleep(50); // the heartbeat's answer, the last Redis gives before it stops
    await givenBackAsRedisStalls(a, burst);
    await a.close();
  }, 30_000);

  /**
   * Gives `burst` back (releases sent, never answered) as Redis stalls; the limiter, in a fallback,
   * then takes all 6 of its share again and not a 7th.
   */
  async function givenBackAsRedisStalls(a: RedisLimiter, burst: readonly Admission[]): Promise<void> {
    for (const lease of burst) lease.release();
    server.pause();
    try {
      const again = [];
      for (let i = 0; i < 6; i++) again.push(await a.admit(ask(`k${i}`)));
      expect(a.stats().mode).toBe('fallback');
      await expect(a.admit(ask('k9'))).rejects.toBeInstanceOf(CapacityExceededError);
      for (const lease of again) lease.release();
    } finally {
      server.resume();
    }
  }
});

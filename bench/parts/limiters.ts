import { Redis } from 'ioredis';
import { AdaptiveLimiter, LocalLimiter, RedisLimiter, type ConcurrencyLimiter } from '../../lib/index.js';
import { RedisServer } from '../../test/support/redis-server.js';

import { sleep } from '../contenders.js';

/** Top-level calls: a script or a transaction counts once (the commands inside are counted again by Redis). */
export const TOP_LEVEL = ['eval', 'evalsha', 'exec'];
/** What Redis spent on those calls: a transaction's EXEC includes its commands, MULTI is queued apart. */
export const SPENT = ['eval', 'evalsha', 'exec', 'multi'];

/** Calls and microseconds of Redis CPU per command so far, from INFO commandstats. */
export async function commandStats(redis: Redis): Promise<Map<string, { calls: number; usec: number }>> {
  const stats = await redis.info('commandstats');
  const out = new Map<string, { calls: number; usec: number }>();
  for (const m of stats.matchAll(/cmdstat_(\w+):calls=(\d+),usec=(\d+)/g))
    out.set(m[1]!, { calls: Number(m[2]), usec: Number(m[3]) });
  return out;
}

export function total(
  stats: Map<string, { calls: number; usec: number }>,
  commands: string[],
  field: 'calls' | 'usec',
): number {
  return commands.reduce((sum, c) => sum + (stats.get(c)?.[field] ?? 0), 0);
}

/** Admission rate and latency through a limiter: `concurrency` workers admit, await once, release. */
export async function admissions(limiter: ConcurrencyLimiter, concurrency: number, total: number) {
  const per = Math.ceil(total / concurrency);
  const samples = new Float64Array(per * concurrency);
  let n = 0;
  const worker = async (w: number) => {
    for (let i = 0; i < per; i++) {
      const t0 = performance.now();
      const admission = await limiter.admit({ pool: 'bench', key: `user-${w % 100}`, timeoutMs: 0 });
      samples[n++] = performance.now() - t0;
      await undefined;
      admission.release();
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: concurrency }, (_, w) => worker(w)));
  const seconds = (performance.now() - start) / 1000;
  samples.sort();
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]! * 1000;
  return { rate: samples.length / seconds, p50us: at(0.5), p99us: at(0.99) };
}

/** A naive limiter, for scale: INCR to admit (DECR back when over), DECR to release. No TTL, no crash safety. */
export async function naiveAdmissions(redis: Redis, key: string, concurrency: number, total: number): Promise<void> {
  const per = Math.ceil(total / concurrency);
  const worker = async () => {
    for (let i = 0; i < per; i++) {
      if ((await redis.incr(key)) > 100_000) await redis.decr(key);
      await undefined;
      await redis.decr(key);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/**
 * RedisLimiter against a redis-server of its own (so the command statistics are the limiter's
 * alone): calls per admission and release, rate and latency, Redis CPU per lease beside a naive
 * INCR/DECR limiter, and the heartbeat of 10,000 held leases.
 */
/** The script calls in SLOWLOG: how many, and the median, 99th percentile, longest and total ms. */
export async function slowScripts(redis: Redis) {
  const log = (await redis.slowlog('GET', 100_000)) as [number, number, number, string[]][];
  const us = log
    .filter((e) => /^eval/i.test(String(e[3][0])))
    .map((e) => e[2])
    .sort((x, y) => x - y);
  const at = (q: number) => us[Math.min(us.length - 1, Math.floor(us.length * q))]! / 1000;
  // A heartbeat's first call says so: ARGV[5] is '1' (after the command, the script, the key count and 3 keys).
  const beats = log.filter((e) => /^eval/i.test(String(e[3][0])) && e[3][10] === '1').length;
  return {
    calls: us.length,
    beats,
    medianCallMs: at(0.5),
    p99CallMs: at(0.99),
    longestCallMs: us.at(-1)! / 1000,
    totalMs: us.reduce((a, b) => a + b, 0) / 1000,
  };
}

/** µs a release takes that hands its slot to the first of `waiting` callers (kept as many), over a second. */
export async function releaseToWaiters(waiting: number): Promise<number> {
  const limiter = new LocalLimiter({ global: 10, wait: true });
  const held = [];
  for (let i = 0; i < 10; i++) held.push(await limiter.admit({ pool: 'bench', timeoutMs: 60_000 }));
  const wait = () =>
    void limiter.admit({ pool: 'bench', timeoutMs: 60_000 }).then(
      (a) => held.push(a),
      () => {},
    );
  for (let i = 0; i < waiting; i++) wait();
  const started = performance.now();
  let releases = 0;
  while (performance.now() - started < 1_000) {
    while (held.length > 0) {
      held.shift()!.release();
      wait();
      releases++;
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
  const us = ((performance.now() - started) * 1_000) / releases;
  await limiter.close();
  return us;
}

export async function limiterBench() {
  const server = await RedisServer.start();
  const url = server.url;
  const redis = new Redis(url);
  try {
    // Calls: a heartbeat far apart so none falls in the count (restart protection does not change the calls).
    const counted = new RedisLimiter({
      global: 100_000,
      perKey: 1_000,
      redis: { url, namespace: 'bench-calls', leaseTtlMs: 60_000, restartProtection: false },
    });
    await counted.start();
    const n = 2_000;
    const before = total(await commandStats(redis), TOP_LEVEL, 'calls');
    const held = [];
    for (let i = 0; i < n; i++) held.push(await counted.admit({ pool: 'bench', key: `user-${i % 100}`, timeoutMs: 0 }));
    const afterAdmit = total(await commandStats(redis), TOP_LEVEL, 'calls');
    // One at a time: releases in one tick share a call.
    for (const [i, a] of held.entries()) {
      a.release();
      while (counted.stats().used > n - i - 1) await sleep(0);
    }
    const afterRelease = total(await commandStats(redis), TOP_LEVEL, 'calls');
    await counted.close();
    const roundTrips = { perAdmit: (afterAdmit - before) / n, perRelease: (afterRelease - afterAdmit) / n };

    // The same with one adaptive limit shared through Redis, each call ending well (its report rides on the next admission).
    const adaptive = new AdaptiveLimiter({
      perKey: 1_000,
      adaptive: { algorithm: 'aimd', initial: 100_000, max: 100_000 },
      redis: { url, namespace: 'bench-adaptive-calls', leaseTtlMs: 60_000, restartProtection: false },
    });
    await adaptive.start();
    const adaptiveBefore = total(await commandStats(redis), TOP_LEVEL, 'calls');
    const adaptiveHeld = [];
    for (let i = 0; i < n; i++)
      adaptiveHeld.push(await adaptive.admit({ pool: 'bench', key: `user-${i % 100}`, timeoutMs: 0 }));
    const adaptiveAfterAdmit = total(await commandStats(redis), TOP_LEVEL, 'calls');
    for (const [i, a] of adaptiveHeld.entries()) {
      a.ended!({ ok: true, value: { status: 200 } });
      a.release();
      while (adaptive.stats().used > n - i - 1) await sleep(0);
    }
    const adaptiveAfterRelease = total(await commandStats(redis), TOP_LEVEL, 'calls');
    await adaptive.close();
    const adaptiveRoundTrips = {
      perAdmit: (adaptiveAfterAdmit - adaptiveBefore) / n,
      perRelease: (adaptiveAfterRelease - adaptiveAfterAdmit) / n,
    };

    // Rate, latency and Redis CPU with the defaults (restart protection on), heartbeats included.
    const leases = 50_000;
    const limiter = new RedisLimiter({
      global: 100_000,
      perKey: 1_000,
      redis: { url, namespace: 'bench-rate', leaseTtlMs: 1_000 },
    });
    await limiter.start();
    while (limiter.stats().mode !== 'redis') await sleep(50); // a new namespace starts with one TTL of quarantine
    const cpuBefore = total(await commandStats(redis), SPENT, 'usec');
    const redisRun = await admissions(limiter, 50, leases);
    const cpuPerLeaseUs = (total(await commandStats(redis), SPENT, 'usec') - cpuBefore) / leases;
    await limiter.close();

    const naiveBefore = total(await commandStats(redis), ['incr', 'decr'], 'usec');
    await naiveAdmissions(redis, 'naive', 50, leases);
    const naiveCpuPerLeaseUs = (total(await commandStats(redis), ['incr', 'decr'], 'usec') - naiveBefore) / leases;

    // The heartbeat of 10,000 held leases over 100 keys, from SLOWLOG: 5 heartbeats after the first
    // (which also pays for the admissions just made). Beside it a control: scripts that only read
    // the scores of as many leases per call (ZMSCORE), sent the same way, to tell the script's own
    // time from the stalls of Redis's Lua runtime.
    const many = 10_000;
    const holder = new RedisLimiter({
      global: many,
      perKey: many,
      redis: { url, namespace: 'bench-beat', leaseTtlMs: 6_000, heartbeatMs: 400, restartProtection: false },
    });
    await holder.start();
    const kept = [];
    for (let i = 0; i < many; i += 500) {
      kept.push(
        ...(await Promise.all(
          Array.from({ length: 500 }, (_, j) =>
            holder.admit({ pool: 'bench', key: `user-${(i + j) % 100}`, timeoutMs: 0 }),
          ),
        )),
      );
    }
    await redis.config('SET', 'slowlog-log-slower-than', '0');
    await redis.config('SET', 'slowlog-max-len', '100000');
    await sleep(500); // the first heartbeat
    await redis.slowlog('RESET');
    await sleep(2_000); // four or five more
    const beats = await slowScripts(redis);
    const callsPerBeat = Math.round(beats.calls / beats.beats);
    const perCall = Math.ceil(many / callsPerBeat);
    const members = kept.map((a, i) => `${a.id}|user-${i % 100}`); // as the limiter names them
    await redis.slowlog('RESET');
    for (let beat = 0; beat < beats.beats; beat++) {
      await Promise.all(
        Array.from({ length: callsPerBeat }, (_, c) =>
          redis.eval(
            "redis.call('ZMSCORE', KEYS[1], unpack(ARGV)) return 1",
            1,
            '{bench-beat}:g',
            ...members.slice(c * perCall, (c + 1) * perCall),
          ),
        ),
      );
      await sleep(400);
    }
    const heartbeat = { heldLeases: many, callsPerBeat, ...beats, control: await slowScripts(redis) };
    for (const a of kept) a.release();
    await holder.close();

    const local = new LocalLimiter({ global: 100_000, perKey: 1_000 });
    const localRun = await admissions(local, 50, 1_000_000);
    const deep = { few: await releaseToWaiters(5_000), many: await releaseToWaiters(50_000) };
    return {
      deep,
      roundTrips,
      adaptiveRoundTrips,
      redis: { ...redisRun, cpuPerLeaseUs, naiveCpuPerLeaseUs },
      heartbeat,
      local: localRun,
    };
  } finally {
    redis.disconnect();
    await server.stop();
  }
}

/** The limiters: round trips, rates and Redis CPU per lease, the heartbeat with many leases held. */
export async function limitersBench(
  results: Record<string, unknown>,
  rows: string[][],
  fmt: (n: number) => string,
): Promise<void> {
  const lim = await limiterBench();
  results.limiters = lim;
  rows.push([
    'RedisLimiter, loopback',
    'calls (one round trip each) per admission / release',
    `${lim.roundTrips.perAdmit.toFixed(2)} / ${lim.roundTrips.perRelease.toFixed(2)}`,
    'target 1 / 1',
  ]);
  rows.push([
    'AdaptiveLimiter shared through Redis, loopback',
    'calls per admission / release, each call ending well',
    `${lim.adaptiveRoundTrips.perAdmit.toFixed(2)} / ${lim.adaptiveRoundTrips.perRelease.toFixed(2)}`,
    'target 1 / 1 (its reports ride on them)',
  ]);
  rows.push([
    'RedisLimiter, loopback, 50 workers',
    'leases per second',
    fmt(lim.redis.rate),
    `p50 ${lim.redis.p50us.toFixed(0)} µs, p99 ${lim.redis.p99us.toFixed(0)} µs`,
  ]);
  rows.push([
    'RedisLimiter, loopback, 50 workers',
    'Redis CPU per lease (INFO commandstats)',
    `${lim.redis.cpuPerLeaseUs.toFixed(1)} µs`,
    `target ≤ 8 µs; naive INCR/DECR ${lim.redis.naiveCpuPerLeaseUs.toFixed(1)} µs (${(lim.redis.cpuPerLeaseUs / lim.redis.naiveCpuPerLeaseUs).toFixed(1)}×)`,
  ]);
  const beat = (h: typeof lim.heartbeat.control) =>
    `${h.medianCallMs.toFixed(2)} / ${h.p99CallMs.toFixed(2)} / ${h.longestCallMs.toFixed(2)} ms`;
  rows.push([
    `RedisLimiter, ${lim.heartbeat.heldLeases.toLocaleString('en')} held leases`,
    `heartbeat call: median / p99 / longest (${lim.heartbeat.beats} heartbeats)`,
    `${beat(lim.heartbeat)}, ${lim.heartbeat.callsPerBeat} calls each`,
    'target longest ≤ 2 ms',
  ]);
  rows.push([
    '  control: same calls, ZMSCORE only',
    'script call: median / p99 / longest',
    beat(lim.heartbeat.control),
    "Redis's Lua runtime alone",
  ]);
  rows.push([
    'LocalLimiter, 50 workers',
    'leases per second',
    fmt(lim.local.rate),
    `p50 ${lim.local.p50us.toFixed(1)} µs, p99 ${lim.local.p99us.toFixed(1)} µs`,
  ]);
  rows.push([
    'LocalLimiter, 50,000 callers waiting',
    'a release that serves the first',
    `${lim.deep.many.toFixed(1)} µs`,
    `with 5,000 waiting ${lim.deep.few.toFixed(1)} µs (${(lim.deep.many / lim.deep.few).toFixed(1)}×); target within 2× (no cost per waiter)`,
  ]);
}

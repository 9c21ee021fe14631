// Four processes call one real HTTP/2 upstream through pools of shared sessions behind one
// adaptive limit shared through a real Redis. The upstream serves `capacity` requests at once
// and answers 429 past it; its capacity halves mid-run, then comes back. Meanwhile Redis is
// frozen (SIGSTOP) past the command timeout and the fallback delay, and later killed and
// started again empty. The fleet must find one limit, not four: after converging it never
// sends the upstream more than 10 % above its capacity, it finds the capacity again within a
// few seconds when it returns, and neither Redis fault raises the limit.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import http2 from 'node:http2';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { RedisServer } from '../support/redis-server.js';
import { compile, root } from '../support/compile.js';
import { listenLocal } from '../support/listen.js';
import { machineTurn } from '../support/machine-turn.js';

const dist = join(root, 'dist-test-fleet');
const worker = fileURLToPath(new URL('./fixtures/adaptive-worker.mjs', import.meta.url));
const SERVICE_MS = 50;
const PROCESSES = 4;
const CALLERS = 16;
/**
 * An event loop held up longer than this (two calls' time) makes the calls around it the
 * machine's. Shorter ones, every few seconds on two cores, cost the use of the capacity little;
 * at 25 ms, with 1.5 s after each left out, they left a phase unmeasured three runs in a row.
 */
const STALL_MS = 2 * SERVICE_MS;
/** At most this many runs, for one the machine left measurable (see measured). */
const RUNS = 3;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The phases of the run: the upstream's capacity and how long it lasts, ms. */
const PHASES = [
  { capacity: 40, ms: 7_000 },
  { capacity: 20, ms: 7_000 },
  { capacity: 40, ms: 9_000 }, // Redis restarts 3.5 s in: the rest measures the recovered fleet
] as const;
/** A phase's first this many ms are for converging; the checks read the rest. */
const CONVERGE_MS = 3_000;

/** An upstream that serves `capacity` requests at once, SERVICE_MS each, and answers 429 past it. */
class Upstream {
  capacity: number = PHASES[0].capacity;
  inflight = 0;
  /** Each arrival: when (ms since start) and the requests in flight with it, itself included. */
  readonly arrivals: { at: number; offered: number }[] = [];
  /** Each request served: when it ended. */
  readonly served: number[] = [];
  readonly #server = http2.createServer();
  #start = performance.now();

  constructor() {
    this.#server.on('stream', (stream) => {
      const at = this.now();
      this.arrivals.push({ at, offered: this.inflight + 1 });
      if (this.inflight >= this.capacity) {
        stream.respond({ ':status': 429 });
        stream.end();
        return;
      }
      this.inflight++;
      setTimeout(() => {
        this.inflight--;
        this.served.push(this.now());
        if (!stream.destroyed) {
          stream.respond({ ':status': 200 });
          stream.end('ok');
        }
      }, SERVICE_MS);
    });
  }

  now(): number {
    return performance.now() - this.#start;
  }

  /** A moment another process stamped, ms since the epoch on this machine's clock, on the run's clock. */
  fromEpoch(epochMs: number): number {
    return epochMs - performance.timeOrigin - this.#start;
  }

  /** The run starts now (every instance is up): the clock from zero, nothing recorded before. */
  startRun(): void {
    this.#start = performance.now();
    this.arrivals.length = 0;
    this.served.length = 0;
  }

  listen(): Promise<string> {
    return listenLocal(this.#server);
  }

  async close(): Promise<void> {
    await new Promise((r) => this.#server.close(r));
  }
}

/** What the run recorded. */
interface Fleet {
  upstream: Upstream;
  /** The estimate in Redis, read every 50 ms (none while Redis does not answer). */
  estimates: { at: number; limit: number }[];
  /** When each of those reads was sent that Redis answered, with an estimate or with none (after a restart). */
  answered: number[];
  /** Each instance's own view of the limit, every 100 ms, when the instance took it (not when its line arrived). */
  views: { at: number; proc: number; limit: number; mode: string }[];
  /** When an instance's event loop, or the upstream's, was held up past STALL_MS (the machine's, not the limit's). */
  stalls: number[];
  /** The polls that found the fleet's limit pinned for a probe of the latency without a queue. */
  pinned: number[];
  /** When each fault began and ended, and the estimate in Redis read the moment before it began. */
  stall: { from: number; to: number; before: number };
  restart: { from: number; to: number; before: number };
}

async function runFleet(redis: RedisServer): Promise<Fleet> {
  const upstream = new Upstream();
  const origin = await upstream.listen();
  const namespace = `fleet-${Date.now()}`;
  const estimates: Fleet['estimates'] = [];
  const answered: number[] = [];
  const views: Fleet['views'] = [];
  const stalls: number[] = [];
  const pinned: number[] = [];
  const procs: ChildProcess[] = [];
  const inspector = new Redis(redis.url, { maxRetriesPerRequest: 0, commandTimeout: 1_000, retryStrategy: () => 50 });
  inspector.on('error', () => {});
  try {
    for (let p = 0; p < PROCESSES; p++) {
      const child = spawn(process.execPath, [worker, dist, redis.url, namespace, origin, String(CALLERS)], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      procs.push(child);
      const lines = createInterface({ input: child.stdout! });
      lines.on('line', (line) => {
        const [kind, limit, mode, , , , when, stall] = line.split(' ');
        if (kind !== 'S') return;
        const at = upstream.fromEpoch(Number(when));
        views.push({ at, proc: p, limit: Number(limit), mode: mode! });
        if (Number(stall) > STALL_MS) stalls.push(at);
      });
      await once(lines, 'line'); // ready
    }
    // Starting four processes may take seconds on a busy machine: the phases count from when all are up.
    upstream.startRun();
    views.length = 0;
    stalls.length = 0;
    pinned.length = 0;
    const loop = monitorEventLoopDelay({ resolution: 5 }); // the upstream's, in this process
    loop.enable();
    const poll = setInterval(() => {
      const at = upstream.now();
      if (loop.max / 1e6 - 5 > STALL_MS) stalls.push(at);
      loop.reset();
      const ask = inspector.multi().hmget(`{${namespace}}:meta`, 'alimit', 'aprobe').time();
      ask.exec().then(
        (replies) => {
          const [[, [v, probeUntil]], [, [seconds, micros]]] = replies as [
            [unknown, (string | null)[]],
            [unknown, string[]],
          ];
          answered.push(at);
          if (v !== null) estimates.push({ at, limit: Number(v) });
          if (Number(probeUntil) > Number(seconds) * 1000 + Number(micros) / 1000) pinned.push(at);
        },
        () => {},
      );
    }, 50);
    const phaseStart = (i: number) => PHASES.slice(0, i).reduce((t, p) => t + p.ms, 0);
    const until = async (ms: number) => sleep(Math.max(0, ms - upstream.now()));

    await until(phaseStart(1));
    upstream.capacity = PHASES[1].capacity;
    // Redis frozen in the middle of the low phase, past the command timeout and the fallback delay.
    await until(phaseStart(1) + 3_500);
    const estimateNow = async () => Number(await inspector.hget(`{${namespace}}:meta`, 'alimit'));
    const stall = { before: await estimateNow(), from: upstream.now(), to: 0 };
    redis.pause();
    await sleep(1_200);
    redis.resume();
    stall.to = upstream.now();

    await until(phaseStart(2));
    upstream.capacity = PHASES[2].capacity;
    // Redis killed and started again empty, once the capacity is found again.
    await until(phaseStart(2) + 3_500);
    const restart = { before: await estimateNow(), from: upstream.now(), to: 0 };
    await redis.stop();
    await sleep(300);
    await redis.start();
    restart.to = upstream.now();

    await until(phaseStart(3));
    clearInterval(poll);
    loop.disable();
    for (const child of procs) child.kill('SIGTERM');
    await Promise.all(procs.map((c) => (c.exitCode === null ? once(c, 'exit') : undefined)));
    return { upstream, estimates, answered, views, stalls, pinned, stall, restart };
  } finally {
    for (const child of procs) if (child.exitCode === null) child.kill('SIGKILL');
    inspector.disconnect();
    await upstream.close();
  }
}

/** The window of phase `i` after convergence, ms since the start. */
const settled = (i: number) => {
  const from = PHASES.slice(0, i).reduce((t, p) => t + p.ms, 0);
  return { from: from + CONVERGE_MS, to: from + PHASES[i]!.ms };
};

/** The least share of each phase's settled window outside the faults its use of the capacity is read on. */
const LEAST_MEASURED = 0.5;

/**
 * The part of phase `i`'s settled window outside the Redis faults (and the 2 s after each), the
 * fleet's probes (the limit pinned at 3 by design, see docs/limits.md, 50 ms either side of a poll
 * that found it so, then two calls' time while the callers fill it again) and the machine's stalls
 * (250 ms before one to 500 ms after: a caller held up is not calling, and AIMD takes the calls
 * it times late as a queue); how long the part outside the faults and probes is; and the
 * requests served in the part measured.
 */
function measured(fleet: Fleet, i: number): { ms: number; outsideFaults: number; served: number } {
  const { from, to } = settled(i);
  const faults = [
    ...[fleet.stall, fleet.restart].map((f) => ({ from: f.from, to: f.to + 2_000 })),
    ...fleet.pinned.map((at) => ({ from: at - 50, to: at + 50 + 2 * SERVICE_MS })),
  ];
  const stalls = fleet.stalls.map((at) => ({ from: at - 250, to: at + 500 }));
  const outside = (windows: { from: number; to: number }[], t: number) => !windows.some((w) => t >= w.from && t < w.to);
  const inside = (t: number) => outside(faults, t) && outside(stalls, t);
  let ms = 0;
  let outsideFaults = 0;
  for (let t = from; t < to; t += 10) {
    if (outside(faults, t)) outsideFaults += 10;
    if (inside(t)) ms += 10;
  }
  return { ms, outsideFaults, served: fleet.upstream.served.filter((s) => s >= from && s < to && inside(s)).length };
}

describe('one adaptive limit for four processes, on real Redis and a real HTTP/2 upstream', () => {
  let redis: RedisServer;
  let fleet: Fleet;

  beforeAll(async () => {
    compile('tsconfig.build.json', dist);
    redis = await RedisServer.start();
    const done = await machineTurn('fleets'); // see adaptive-knee-fleet.spec.ts
    try {
      // A run the machine held up for most of a phase says nothing of the limit's use of the
      // capacity: it is run again, at most twice, and the verdict reads the last.
      for (let attempt = 1; ; attempt++) {
        fleet = await runFleet(redis);
        const shares = PHASES.map((_, i) => measured(fleet, i)).map((m) => m.ms / m.outsideFaults);
        if (shares.every((share) => share >= LEAST_MEASURED) || attempt === RUNS) break;
        const percents = shares.map((share) => `${(share * 100).toFixed(0)} %`).join(', ');
        console.log(`run ${attempt}: ${fleet.stalls.length} stalls; each phase measured on ${percents}; once more`);
      }
    } finally {
      done();
    }
    // For the record: what each phase looked like.
    let t = 0;
    for (const phase of PHASES) {
      const from = t + CONVERGE_MS;
      const to = t + phase.ms;
      const offered = fleet.upstream.arrivals.filter((a) => a.at >= from && a.at < to);
      const served = fleet.upstream.served.filter((s) => s >= from && s < to).length;
      const estimates = fleet.estimates.filter((e) => e.at >= from && e.at < to).map((e) => e.limit);
      console.log(
        `capacity ${phase.capacity}: limit ${Math.min(...estimates).toFixed(1)}–${Math.max(...estimates).toFixed(1)}, ` +
          `most offered at once ${Math.max(...offered.map((a) => a.offered))}, ` +
          `goodput ${((((served / ((to - from) / 1_000)) * (SERVICE_MS / 1_000)) / phase.capacity) * 100).toFixed(0)} % of capacity, ` +
          `429s ${offered.filter((a) => a.offered > phase.capacity).length}`,
      );
      t += phase.ms;
    }
  }, 300_000);

  afterAll(async () => {
    await redis?.stop();
  });

  it('after converging, never sends the upstream more than 10 % above its capacity', () => {
    PHASES.forEach((phase, i) => {
      const { from, to } = settled(i);
      const offered = fleet.upstream.arrivals.filter((a) => a.at >= from && a.at < to);
      expect(offered.length).toBeGreaterThan(500); // it was loaded
      expect(Math.max(...offered.map((a) => a.offered))).toBeLessThanOrEqual(Math.ceil(phase.capacity * 1.1));
    });
  });

  it('uses the capacity it finds: most of it served, outside the Redis faults, its probes and the machine’s stalls', () => {
    PHASES.forEach((phase, i) => {
      const { ms, outsideFaults, served } = measured(fleet, i);
      const busy = (served * SERVICE_MS) / ms; // requests in service on average
      console.log(
        `capacity ${phase.capacity}: ${((busy / phase.capacity) * 100).toFixed(0)} % of it in use in ${ms} ms outside the Redis faults, the probes and the machine's stalls`,
      );
      expect(ms / outsideFaults).toBeGreaterThanOrEqual(LEAST_MEASURED); // a machine too busy for that in RUNS runs fails here
      expect(busy / phase.capacity).toBeGreaterThan(0.5); // four limits of their own, or one collapsed, would use far less
    });
  });

  it('is one limit: every instance sees the one Redis keeps', () => {
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    // How far the estimate rises between two polls, at most, leaving out the rare jumps of the
    // Redis faults (an estimate seeded again after a restart): the 99th percentile of the rises.
    const rises = fleet.estimates
      .slice(1)
      .map((e, i) => e.limit - fleet.estimates[i]!.limit)
      .filter((r) => r > 0)
      .sort((a, b) => a - b);
    const unseen = rises.length === 0 ? 0 : rises[Math.floor(0.99 * (rises.length - 1))]!;
    for (let i = 0; i < PHASES.length; i++) {
      const end = settled(i).to;
      const inRedis = fleet.estimates.filter((e) => e.at > end - 1_000 && e.at < end).map((e) => e.limit);
      const views = fleet.views.filter((v) => v.at > end - 1_000 && v.at < end && v.mode === 'redis');
      expect(views.length).toBeGreaterThan(PROCESSES * 5);
      // Four instances finding "their" limit each would sit near capacity / 4: each instance's
      // typical view is the one in Redis.
      for (let p = 0; p < PROCESSES; p++) {
        const seen = views.filter((v) => v.proc === p).map((v) => v.limit);
        expect(seen.length).toBeGreaterThan(3);
        expect(median(seen)).toBeGreaterThanOrEqual(Math.floor(median(inRedis) * 0.8));
        expect(median(seen)).toBeLessThanOrEqual(Math.ceil(median(inRedis) * 1.2));
      }
      // Between two answers an instance follows its own reports: an overload cuts its view at
      // once (by the algorithm's backoff, 0.7), though Redis may take only one cut that round.
      // So a single view may sit one cut below the estimate Redis kept, never further.
      const seen = views.map((v) => v.limit);
      expect(Math.min(...seen)).toBeGreaterThanOrEqual(Math.floor(Math.min(...inRedis) * 0.7 * 0.9));
      // Nor above what Redis held when the view was taken: its last answer (sent within the last
      // RTT, 500 ms on a loaded machine at worst; the estimate grows ~20/s near capacity and is cut
      // by others at any moment, so only the estimates of that moment say it), plus the growth the
      // instance earned since, less than one.
      // The estimates are polled every 50 ms (later on a busy machine): a rise that a cut undid
      // between two polls is not among them, so the bound allows what the estimate rises between
      // two polls in this run.
      const above = views.flatMap((v) => {
        const then = fleet.estimates.filter((e) => e.at >= v.at - 500 && e.at <= v.at + 50).map((e) => e.limit);
        if (then.length === 0) return []; // a Redis fault: the fault's own test reads it
        const bound = Math.ceil(Math.max(...then) + unseen) + 1;
        return v.limit <= bound ? [] : [`${v.limit} at ${v.at.toFixed(0)} ms, Redis at most ${bound - 1}`];
      });
      expect(above).toEqual([]);
    }
  });

  it('settles near each capacity, and finds the higher one again within a few seconds', () => {
    PHASES.forEach((phase, i) => {
      const { from, to } = settled(i);
      const limits = fleet.estimates.filter((e) => e.at >= from && e.at < to).map((e) => e.limit);
      const mean = limits.reduce((s, l) => s + l, 0) / limits.length;
      expect(mean).toBeGreaterThan(phase.capacity * 0.6);
      expect(mean).toBeLessThan(phase.capacity * 1.15);
    });
    const back = settled(2).from - CONVERGE_MS;
    const found = fleet.estimates.find((e) => e.at >= back && e.limit >= PHASES[2].capacity * 0.9);
    expect(found).toBeDefined();
    expect(found!.at - back).toBeLessThan(3_000);
  });

  it('a frozen Redis and a Redis restarted empty never raise the limit', () => {
    for (const fault of [fleet.stall, fleet.restart]) {
      const after = fleet.estimates.find((e) => e.at > fault.to);
      expect(fault.before).toBeGreaterThan(10);
      expect(after).toBeDefined();
      // The first reading after the fault comes within a poll (50 ms) and a reconnect of it, in
      // which the fleet may grow the limit by what its calls since have earned: about one a round
      // trip near capacity. Growth through the fault (a late call's, or one counted while Redis
      // was away) would show as more. (That a restart starts again from the last value seen, not
      // from `initial`, adaptive-shared.spec.ts checks: here `initial` is below.)
      // On a failure, when the reading came: a first answer long after the fault's end means the
      // reading may hold the growth of the calls since, not the fault's.
      const firstAnswer = fleet.answered.find((at) => at > fault.to);
      const when = `read ${(after!.at - fault.to).toFixed(0)} ms after the fault ended; Redis first answered a read ${firstAnswer === undefined ? 'never' : `${(firstAnswer - fault.to).toFixed(0)} ms`} after it`;
      expect(
        after!.limit <= fault.before + 2
          ? 'within'
          : `${after!.limit} after the fault, ${fault.before} before it, ${when}`,
      ).toBe('within');
    }
  });
});

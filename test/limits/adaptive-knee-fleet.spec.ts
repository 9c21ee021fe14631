// Three processes share one adaptive limit (the default algorithm) through a real Redis, in front
// of a real HTTP/2 upstream with a hard knee: C requests served at once in L ms each (±10 %), a
// FIFO queue past them, 503 at 3C in flight. Their callers offer twice the capacity, each calling
// again as soon as its call ends. On real timers, after the limit settles: the fleet's limit
// stays within [0.8C, 1.5C], and p99 latency at the upstream within 2 L. The same callers with no
// limit keep the queue at the shed point: p99 past 2 L (the test's teeth). After issue 48; the
// knee simulation (test/qos/knee.spec.ts) gates each algorithm alone on virtual time. C is 40:
// Vegas keeps a queue of α–β calls, absolute and logarithmic in the limit (3 and 6 × log10, as
// Netflix's), which at C = 25 is itself 1.37 C, leaving chance no room under 1.5 C; at 40, 1.26 C.
// L is 100 ms: on a busy machine (the suite's other worker), the callers' own event-loop delays
// are a smaller part of each call's latency, which Vegas would read as noise.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import http2 from 'node:http2';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { DEFAULT_ADAPTIVE } from '../../lib/limits/adaptive/adaptive-limiter.js';
import { compile, root } from '../support/compile.js';
import { RedisServer } from '../support/redis-server.js';
import { listenLocal } from '../support/listen.js';
import { machineTurn } from '../support/machine-turn.js';

const dist = join(root, 'dist-test-knee-fleet');
const worker = fileURLToPath(new URL('./fixtures/adaptive-worker.mjs', import.meta.url));
const C = 40;
const L = 100;
const PROCESSES = 3;
/** Callers per process: twice the capacity in all. */
const CALLERS = Math.ceil((2 * C) / PROCESSES);
const SETTLE_MS = 6_000;
const RUN_MS = 16_000;
/** An event loop held up longer than this (a quarter of L) makes the latencies around it the machine's. */
const STALL_MS = 25;
/** How long after a stall the limit is not judged: Vegas reads it in its window, then grows back. */
const AFTER_STALL_MS = 1_500;
/** At most this many runs of the adaptive fleet, for one the machine left judgeable. */
const RUNS = 3;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The knee: C at once, FIFO past them, 503 at 3C in flight. Records each served request's latency. */
class KneeUpstream {
  #serving = 0;
  readonly #queue: { at: number; stream: http2.ServerHttp2Stream }[] = [];
  /** [ended at, latency] of each request answered 200, ms since the start. */
  readonly served: [number, number][] = [];
  shed = 0;
  readonly #server = http2.createServer();
  #start = performance.now();

  constructor() {
    this.#server.on('stream', (stream) => {
      if (this.#serving + this.#queue.length >= 3 * C) {
        this.shed++;
        stream.respond({ ':status': 503 });
        stream.end();
        return;
      }
      this.#queue.push({ at: this.now(), stream });
      this.#serve();
    });
  }

  #serve(): void {
    while (this.#serving < C && this.#queue.length > 0) {
      const { at, stream } = this.#queue.shift()!;
      this.#serving++;
      setTimeout(
        () => {
          this.#serving--;
          this.served.push([this.now(), this.now() - at]);
          if (!stream.destroyed) {
            stream.respond({ ':status': 200 });
            stream.end('ok');
          }
          this.#serve();
        },
        L * (0.9 + 0.2 * Math.random()),
      );
    }
  }

  now(): number {
    return performance.now() - this.#start;
  }

  /** A time on the epoch clock (another process's), as ms since the start. */
  since(epochMs: number): number {
    return epochMs - performance.timeOrigin - this.#start;
  }

  restart(): void {
    this.#start = performance.now();
    this.served.length = 0;
    this.shed = 0;
  }

  listen(): Promise<string> {
    return listenLocal(this.#server);
  }

  async close(): Promise<void> {
    await new Promise((r) => this.#server.close(r));
  }
}

interface Run {
  upstream: KneeUpstream;
  /** The fleet's estimate in Redis, every 100 ms: [at, limit]. */
  estimates: [number, number][];
  /** When an event loop (a caller's or the upstream's) was held up past STALL_MS: [at, ms]. */
  stalls: [number, number][];
  /** The polls (every 100 ms) that found the fleet's limit pinned for a probe of its latency without a queue. */
  pinned: number[];
}

/** Three instances with `adaptive` options (or a limit too high to bind) call the upstream for RUN_MS. */
async function run(redis: RedisServer, adaptive: object): Promise<Run> {
  const upstream = new KneeUpstream();
  const origin = await upstream.listen();
  const namespace = `knee-${Date.now()}`;
  const estimates: [number, number][] = [];
  const stalls: [number, number][] = [];
  const pinned: number[] = [];
  const procs: ChildProcess[] = [];
  const loop = monitorEventLoopDelay({ resolution: 5 });
  const inspector = new Redis(redis.url, { maxRetriesPerRequest: 0 });
  try {
    for (let p = 0; p < PROCESSES; p++) {
      const child = spawn(
        process.execPath,
        [worker, dist, redis.url, namespace, origin, String(CALLERS), JSON.stringify(adaptive)],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      procs.push(child);
      const lines = createInterface({ input: child.stdout! });
      const exited = once(child, 'exit').then(([code]) => Promise.reject(new Error(`a worker exited (${code})`)));
      await Promise.race([once(lines, 'line'), exited]); // ready
      lines.on('line', (line) => {
        const [kind, , , , , , when, stall] = line.split(' ');
        if (kind === 'S' && Number(stall) > STALL_MS) stalls.push([upstream.since(Number(when)), Number(stall)]);
      });
    }
    upstream.restart();
    loop.enable();
    const poll = setInterval(() => {
      const at = upstream.now();
      const stall = loop.max / 1e6 - 5;
      loop.reset();
      if (stall > STALL_MS) stalls.push([at, stall]);
      const ask = inspector.multi().hmget(`{${namespace}}:meta`, 'alimit', 'aprobe').time();
      void ask.exec().then((replies) => {
        const [[, [v, probeUntil]], [, [seconds, micros]]] = replies as [
          [unknown, (string | null)[]],
          [unknown, string[]],
        ];
        if (Number(probeUntil) > Number(seconds) * 1000 + Number(micros) / 1000) pinned.push(at);
        if (v !== null) estimates.push([at, Number(v)]);
      });
    }, 100);
    await sleep(RUN_MS);
    clearInterval(poll);
    loop.disable();
    for (const child of procs) child.kill('SIGTERM');
    await Promise.all(procs.map((c) => (c.exitCode === null ? once(c, 'exit') : undefined)));
    return { upstream, estimates, stalls, pinned };
  } finally {
    for (const child of procs) if (child.exitCode === null) child.kill('SIGKILL');
    inspector.disconnect();
    await upstream.close();
  }
}

const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(0.99 * (xs.length - 1))]!;
/**
 * The fleet's readings after it settled, but not around a stall: a caller held up 30 ms by the
 * machine (the suite's other worker installing packages) measures 30 ms of queue that is not
 * the upstream's, and Vegas steps down as it should for a queue it cannot tell from the
 * upstream's. The limit is judged on what the upstream did.
 */
const judged = (r: Run) =>
  r.estimates
    .filter(([at]) => at >= SETTLE_MS && !r.stalls.some(([s]) => at >= s - 250 && at <= s + AFTER_STALL_MS))
    .map(([, l]) => l);
const settled = (r: Run) => r.upstream.served.filter(([at]) => at >= SETTLE_MS).map(([, ms]) => ms);
/**
 * Whether `at` is in or just after a fleet's probe: the limit pinned at 3 (a poll found it so,
 * 100 ms either side), then 2 L while the queue it emptied fills again. The probe is the limit's
 * price for a latency floor that follows the upstream (see docs/limits.md), paid once per
 * `probeEvery` limits' worth of windows; the first comes about 30 windows in, within this run.
 */
const nearProbe = (r: Run, at: number) => r.pinned.some((p) => at >= p - 100 && at < p + 100 + 2 * L);
/** Requests in service on average after the limit settled, outside the fleet's probes, and the time the probes took from it. */
function goodput(r: Run): { inService: number; probeMs: number } {
  let probeMs = 0;
  for (let at = SETTLE_MS; at < RUN_MS; at += 10) if (nearProbe(r, at)) probeMs += 10;
  const served = r.upstream.served.filter(([at]) => at >= SETTLE_MS && !nearProbe(r, at)).length;
  return { inService: (served / (RUN_MS - SETTLE_MS - probeMs)) * L, probeMs };
}

describe('one adaptive limit for three processes, in front of an upstream with a hard knee', () => {
  let redis: RedisServer;
  let adaptive: Run;
  let unbound: Run;

  beforeAll(async () => {
    compile('tsconfig.build.json', dist);
    redis = await RedisServer.start();
    // Beside the other fleet spec (seven processes on two cores), Vegas's fleet settled at 1.4–1.6 C
    // where alone it sits at 1.2 C: the two take turns.
    const done = await machineTurn('fleets');
    try {
      // A run the machine held up for most of its readings says nothing of the limit (see
      // judged): it is run again, at most twice, and the verdict reads the last.
      for (let attempt = 1; ; attempt++) {
        adaptive = await run(redis, { ...DEFAULT_ADAPTIVE });
        const readings = adaptive.estimates.filter(([at]) => at >= SETTLE_MS).length;
        if (judged(adaptive).length >= readings / 3 || attempt === RUNS) break;
        console.log(`run ${attempt}: ${judged(adaptive).length} of ${readings} readings away from stalls; once more`);
      }
      unbound = await run(redis, { algorithm: 'aimd', min: 1_000, max: 1_000, initial: 1_000 }); // held at 1,000
    } finally {
      done();
    }
    const all = adaptive.estimates.filter(([at]) => at >= SETTLE_MS).map(([, l]) => l);
    const limits = judged(adaptive);
    const inside = limits.filter((l) => l >= 0.8 * C && l <= 1.5 * C).length / limits.length;
    const kept = goodput(adaptive);
    const stalled = adaptive.stalls.filter(([at]) => at >= SETTLE_MS - AFTER_STALL_MS);
    console.log(
      `C ${C}, L ${L} ms: the fleet's limit ${Math.min(...all).toFixed(1)}–${Math.max(...all).toFixed(1)}; ` +
        `${stalled.length} stalls past ${STALL_MS} ms (longest ${Math.max(0, ...stalled.map(([, ms]) => ms)).toFixed(0)} ms), ` +
        `${limits.length} of ${all.length} readings judged: ${Math.min(...limits).toFixed(1)}–${Math.max(...limits).toFixed(1)}, ` +
        `${(inside * 100).toFixed(1)} % within 0.8–1.5 C, ` +
        `p99 ${(p99(settled(adaptive)) / L).toFixed(2)} L, served ${settled(adaptive).length}, 503s ${adaptive.upstream.shed}, ` +
        `${kept.inService.toFixed(1)} in service outside ${kept.probeMs} ms of probes; ` +
        `with no limit: p99 ${(p99(settled(unbound)) / L).toFixed(2)} L, served ${settled(unbound).length}, 503s ${unbound.upstream.shed}`,
    );
  }, 300_000);

  afterAll(async () => {
    await redis?.stop();
  });

  it('keeps the fleet’s limit within 0.8–1.5 C and p99 within 2 L, and serves the capacity', () => {
    const all = adaptive.estimates.filter(([at]) => at >= SETTLE_MS).map(([, l]) => l);
    expect(all.length).toBeGreaterThan(50);
    // Judged away from the machine's stalls (see judged), on at least a third of the run: a machine
    // too busy for that in RUNS runs fails here rather than passing on too little.
    const limits = judged(adaptive);
    expect(limits.length).toBeGreaterThanOrEqual(all.length / 3);
    // Within [0.8 C, 1.5 C] for 95 % of those readings, never past [0.5 C, 2 C]. Vegas's fast
    // growth (+6 log10 a window when a window shows no queue) now and then overshoots for a few
    // hundred ms before it comes back. CI saw 0.57-0.6 C for a moment, twice, beside a spec
    // installing packages, when a bound on every reading still held the stalls against it.
    const within = limits.filter((l) => l >= 0.8 * C && l <= 1.5 * C).length / limits.length;
    expect(within).toBeGreaterThanOrEqual(0.95);
    expect(Math.min(...limits)).toBeGreaterThanOrEqual(0.5 * C);
    expect(Math.max(...all)).toBeLessThanOrEqual(2 * C);
    expect(p99(settled(adaptive))).toBeLessThanOrEqual(2 * L);
    // The capacity served, but while the fleet probes its latency without a queue (one probe here,
    // about 1 s of three calls at once, then the queue refilling); the probes take at most a fifth
    // of the run (two probes of the longest pin a 100 ms latency makes, 1 s, and their margins).
    const { inService, probeMs } = goodput(adaptive);
    expect(inService).toBeGreaterThan(0.9 * C);
    expect(probeMs).toBeLessThanOrEqual(0.2 * (RUN_MS - SETTLE_MS));
  });

  it('has teeth: the same callers with no limit that binds queue past 2 L', () => {
    expect(p99(settled(unbound))).toBeGreaterThan(2 * L);
  });
});

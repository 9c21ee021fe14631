// Three processes share one adaptive limit (the default algorithm) through a real Redis, in front
// of a real HTTP/2 upstream with a hard knee: C requests served at once in L ms each (±10 %), a
// FIFO queue past them, 503 at 3C in flight. Their callers offer twice the capacity, each calling
// again as soon as its call ends. On real timers, after the limit settles: the fleet's limit
// stays within [0.8C, 1.5C], and p99 latency at the upstream within 2 L. The same callers with no
// limit keep the queue at the shed point: p99 past 2 L (the test's teeth). After issue 48; the
// knee simulation (test/qos/knee.spec.ts) gates each algorithm alone on virtual time.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { DEFAULT_ADAPTIVE } from '../../lib/limits/adaptive/adaptive-limiter.js';
import { compile, root } from '../support/compile.js';
import { RedisServer } from '../support/redis-server.js';

const dist = join(root, 'dist-test-knee-fleet');
const worker = fileURLToPath(new URL('./fixtures/adaptive-worker.mjs', import.meta.url));
const C = 25;
const L = 50;
const PROCESSES = 3;
/** Callers per process: twice the capacity in all. */
const CALLERS = Math.ceil((2 * C) / PROCESSES);
const SETTLE_MS = 6_000;
const RUN_MS = 16_000;
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

  restart(): void {
    this.#start = performance.now();
    this.served.length = 0;
    this.shed = 0;
  }

  async listen(): Promise<string> {
    this.#server.listen(0, '127.0.0.1');
    await once(this.#server, 'listening');
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    await new Promise((r) => this.#server.close(r));
  }
}

interface Run {
  upstream: KneeUpstream;
  /** The fleet's estimate in Redis, every 100 ms: [at, limit]. */
  estimates: [number, number][];
}

/** Three instances with `adaptive` options (or a limit too high to bind) call the upstream for RUN_MS. */
async function run(redis: RedisServer, adaptive: object): Promise<Run> {
  const upstream = new KneeUpstream();
  const origin = await upstream.listen();
  const namespace = `knee-${Date.now()}`;
  const estimates: [number, number][] = [];
  const procs: ChildProcess[] = [];
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
      lines.resume();
    }
    upstream.restart();
    const poll = setInterval(() => {
      const at = upstream.now();
      void inspector.hget(`{${namespace}}:meta`, 'alimit').then((v) => {
        if (v !== null) estimates.push([at, Number(v)]);
      });
    }, 100);
    await sleep(RUN_MS);
    clearInterval(poll);
    for (const child of procs) child.kill('SIGTERM');
    await Promise.all(procs.map((c) => (c.exitCode === null ? once(c, 'exit') : undefined)));
    return { upstream, estimates };
  } finally {
    for (const child of procs) if (child.exitCode === null) child.kill('SIGKILL');
    inspector.disconnect();
    await upstream.close();
  }
}

const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(0.99 * (xs.length - 1))]!;
const settled = (r: Run) => r.upstream.served.filter(([at]) => at >= SETTLE_MS).map(([, ms]) => ms);

describe('one adaptive limit for three processes, in front of an upstream with a hard knee', () => {
  let redis: RedisServer;
  let adaptive: Run;
  let unbound: Run;

  beforeAll(async () => {
    compile('tsconfig.build.json', dist);
    redis = await RedisServer.start();
    adaptive = await run(redis, { ...DEFAULT_ADAPTIVE });
    unbound = await run(redis, { algorithm: 'aimd', min: 1_000, max: 1_000, initial: 1_000 }); // held at 1,000
    const limits = adaptive.estimates.filter(([at]) => at >= SETTLE_MS).map(([, l]) => l);
    console.log(
      `C ${C}, L ${L} ms: the fleet's limit ${Math.min(...limits).toFixed(1)}–${Math.max(...limits).toFixed(1)}, ` +
        `p99 ${(p99(settled(adaptive)) / L).toFixed(2)} L, served ${settled(adaptive).length}, 503s ${adaptive.upstream.shed}; ` +
        `with no limit: p99 ${(p99(settled(unbound)) / L).toFixed(2)} L, served ${settled(unbound).length}, 503s ${unbound.upstream.shed}`,
    );
  }, 120_000);

  afterAll(async () => {
    await redis?.stop();
  });

  it('keeps the fleet’s limit within 0.8–1.5 C and p99 within 2 L, and serves the capacity', () => {
    const limits = adaptive.estimates.filter(([at]) => at >= SETTLE_MS).map(([, l]) => l);
    expect(limits.length).toBeGreaterThan(50);
    expect(Math.min(...limits)).toBeGreaterThanOrEqual(0.8 * C);
    expect(Math.max(...limits)).toBeLessThanOrEqual(1.5 * C);
    expect(p99(settled(adaptive))).toBeLessThanOrEqual(2 * L);
    const goodput = (settled(adaptive).length / (RUN_MS - SETTLE_MS)) * L; // requests in service on average
    expect(goodput).toBeGreaterThan(0.9 * C);
  });

  it('has teeth: the same callers with no limit that binds queue past 2 L', () => {
    expect(p99(settled(unbound))).toBeGreaterThan(2 * L);
  });
});

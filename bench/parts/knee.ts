// `npm run bench -- --knee`: the knee scenarios of the simulation (test/qos/knee-scenarios.ts) on
// real timers, through `pool.use()` with an AdaptiveLimiter's defaults: a backend in this process
// that serves C calls at once in L ms each (±10 %, setTimeout), queues the rest FIFO, answers 503
// at 3C in flight and gives up a call still queued 2 s after it was admitted. Callers arrive at
// random (Poisson) or call again as soon as their call ends, as the simulation's do, and wait for
// the limit within the scenario's deadline (2 s unless it says), under the limiter's default
// controlled waiting; latency is also counted as the caller sees it, the wait included. Each run
// is judged by the simulation's own judge; the half-hour overload runs 90 s here, half load 20 s
// (the trend over half an hour is the simulation's to show). KNEE_SCENARIO and KNEE_ALGORITHM
// (a part of a name each) run only those that match.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import {
  AdaptiveLimiter,
  type AdaptiveAlgorithmOptions,
  type AdaptiveLimiterOptions,
  LocalLimiter,
} from '../../lib/limits/index.js';
import { ConnectionPool, type PoolOptions } from '../../lib/core/index.js';
import { KneeBook, type KneeRun } from '../../test/qos/knee-backend.js';
import { KNEE_ALGORITHMS, KNEE_SCENARIOS, type JudgedScenario } from '../../test/qos/knee-scenarios.js';

const quiet = { log() {}, info() {}, warn() {}, error() {}, debug() {} };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The simulation's scenarios, made short enough for real time. */
function live(scenario: JudgedScenario): JudgedScenario {
  const last = scenario.phases.at(-1)!;
  if (last.untilMs <= 60_000)
    return scenario.name === 'half load' ? { ...scenario, phases: [{ ...last, untilMs: 20_000 }] } : scenario;
  return { ...scenario, phases: [{ ...last, untilMs: 90_000 }], bucketMs: 10_000 };
}

/** What stands in front of the backend: a limiter on a pool of one shared connection, or a pool's own queue. */
interface Gate {
  readonly label: string;
  /** The pool's options but its name and logger (a limiter, or maxSize and waiting for the pool's queue). */
  make(): Omit<PoolOptions, 'name'>;
  /** How many connections one may serve at once: 1 for the pool's own queue. */
  readonly clientLimit?: number;
}

/** An adaptive limit, its waiting as the options say (controlled by default). */
function adaptiveGate(
  adaptive: AdaptiveAlgorithmOptions,
  waits: Pick<AdaptiveLimiterOptions, 'wait' | 'waiting'> = {},
): Gate {
  return {
    label: `adaptive ${adaptive.algorithm}`,
    make: () => ({ maxSize: 1, limiter: new AdaptiveLimiter({ name: 'knee', adaptive, logger: quiet, ...waits }) }),
  };
}

/** One scenario on real timers with `gate` in front: the run as the simulation reports one. */
async function runLive(
  scenario: JudgedScenario,
  gate: Gate,
): Promise<KneeRun & { loopDelayMs: { p99: number; max: number } }> {
  const book = new KneeBook(scenario);
  const end = scenario.phases.at(-1)!.untilMs;
  const timeoutMs = scenario.timeoutMs ?? 2_000;
  const shedAt = scenario.shedAt ?? 3;
  const started = performance.now();
  const now = () => performance.now() - started;
  const phase = () => scenario.phases.find((p) => now() < p.untilMs) ?? scenario.phases.at(-1)!;
  const served: [number, number][] = [];
  const trace: [number, number][] = [];

  // The backend: C at once, FIFO past them, 503 past the shed point, queued calls given up.
  let serving = 0;
  const queue: { admittedAt: number; done: (ms: number | Error) => void }[] = [];
  const serve = () => {
    while (serving < phase().capacity && queue.length > 0) {
      const call = queue.shift()!;
      if (now() - call.admittedAt > timeoutMs) {
        call.done(Object.assign(new Error('queued past its timeout'), { name: 'TimeoutError', backend: true }));
        continue;
      }
      serving++;
      setTimeout(
        () => {
          serving--;
          call.done(now() - call.admittedAt);
          serve();
        },
        scenario.serviceMs * (0.9 + 0.2 * Math.random()),
      );
    }
  };
  const backend = (): Promise<number> => {
    if (serving + queue.length >= shedAt * phase().capacity)
      return Promise.reject(Object.assign(new Error('shed'), { status: 503 }));
    return new Promise((resolve, reject) => {
      queue.push({ admittedAt: now(), done: (r) => (typeof r === 'number' ? resolve(r) : reject(r)) });
      serve();
    });
  };

  const options = gate.make();
  const { limiter } = options;
  const pool = new ConnectionPool(
    { create: async () => ({}), clientLimit: gate.clientLimit ?? 100_000 },
    { ...options, name: 'knee', logger: quiet },
  );
  const limitNow = () => (limiter === undefined ? pool.stats().maxSize : (limiter.stats().limit ?? NaN));
  /** One caller's call; whether it was served. */
  const call = async (): Promise<boolean> => {
    const arrivedAt = now();
    for (const t of book.at(arrivedAt)) t.arrived++;
    let admittedAt = NaN;
    try {
      const ms = await pool.use(
        () => {
          admittedAt = now();
          return backend();
        },
        { timeoutMs },
      );
      const at = now();
      if (at < end) {
        for (const t of book.at(at)) {
          t.latencies.push(ms);
          t.waits.push(admittedAt - arrivedAt);
          t.callers.push(at - arrivedAt);
        }
        served.push([at, ms]);
      }
      return true;
    } catch (err) {
      const e = err as { status?: number; backend?: boolean; reason?: string };
      for (const t of book.at(now())) {
        if (e.reason === 'standing') t.shedStanding++;
        if (e.status === 503) t.shed++;
        else if (e.backend === true) t.timeouts++;
        else t.refused++; // the limit's, at once or at the deadline
      }
      return false;
    }
  };

  // A stalled event loop (a collection, another process on the cores) delays every call in
  // flight alike, whatever the limit: reported beside each verdict.
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  // And when: a tick every 5 ms that comes 10 ms late or more marks a stall.
  const stalls: [number, number][] = [];
  let tick = now();
  const ticker = setInterval(() => {
    const at = now();
    if (at - tick >= 15) stalls.push([tick, at]);
    tick = at;
  }, 5);
  const traced = setInterval(() => {
    const at = now();
    const limit = limitNow();
    trace.push([at, limit]);
    for (const t of book.at(at)) {
      t.limitSum += limit;
      t.limitSamples++;
    }
  }, 100);
  // The calls still out (a settled one leaves: the run's garbage is not what it measures).
  const calls = new Set<Promise<unknown>>();
  const track = (p: Promise<unknown>) => {
    calls.add(p);
    void p.finally(() => calls.delete(p));
  };
  // Closed-loop clients: each calls again as soon as its call ends, a service time later if refused.
  const clients = scenario.phases[0]!.clients ?? 0;
  for (let c = 0; c < clients; c++)
    track(
      (async () => {
        while (now() < end) if (!(await call())) await sleep(scenario.serviceMs);
      })(),
    );
  // Poisson arrivals, launched every millisecond or so as they fall due.
  let next = 0;
  let capacity = phase().capacity;
  while (now() < end) {
    const p = phase();
    if (p.capacity > capacity) serve(); // a capacity that grew serves the queue at once
    capacity = p.capacity;
    if (p.arrivalsPerSec !== undefined)
      while (next <= now()) {
        track(call());
        next += (-Math.log(1 - Math.random()) * 1_000) / p.arrivalsPerSec;
      }
    else next = now();
    await sleep(1);
  }
  clearInterval(traced);
  clearInterval(ticker);
  loop.disable();
  await Promise.allSettled([...calls]);
  await pool.close();
  await (limiter as { close?(): Promise<void> } | undefined)?.close?.();
  const loopDelayMs = { p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 };
  return { ...book.run(gate.label, served, trace), stalls, loopDelayMs };
}

export async function kneeBench(results: Record<string, unknown>, rows: string[][]): Promise<void> {
  const knee: Record<string, unknown> = {};
  const [onlyScenario, onlyAlgorithm] = [process.env.KNEE_SCENARIO ?? '', process.env.KNEE_ALGORITHM ?? ''];
  for (const algorithm of KNEE_ALGORITHMS.filter((a) => a.algorithm.includes(onlyAlgorithm))) {
    for (const scenario of KNEE_SCENARIOS.map(live).filter((s) => s.name.includes(onlyScenario))) {
      const began = Date.now();
      const run = await runLive(scenario, adaptiveGate(algorithm));
      console.error(`knee: ${algorithm.algorithm}, ${scenario.name}: ${((Date.now() - began) / 1_000).toFixed(0)} s`);
      const verdict = scenario.judge!(run);
      knee[`${algorithm.algorithm}: ${scenario.name}`] = {
        ...verdict,
        phases: run.phases,
        loopDelayMs: run.loopDelayMs,
      };
      rows.push([
        `adaptive ${algorithm.algorithm}, real timers`,
        `${scenario.name} (${scenario.phases.at(-1)!.untilMs / 1_000} s)`,
        verdict.passes ? 'passes' : 'fails',
        `${verdict.why}; event loop delayed ≤ ${run.loopDelayMs.max.toFixed(0)} ms (p99 ${run.loopDelayMs.p99.toFixed(0)} ms)`,
      ]);
    }
  }
  // Beside the default, on the scenario of callers with a 1 s deadline: what pools do (FIFO to the
  // deadline) and what Netflix's limiter does (refuse at once), each on the default algorithm; and
  // a fixed limit and the pool's own queue at the true capacity, each with controlled waiting.
  const deadline = KNEE_SCENARIOS.map(live).find((s) => s.name.startsWith('twice the capacity'))!;
  if (!deadline.name.includes(onlyScenario)) return void (results.knee = knee);
  const C = deadline.phases[0]!.capacity;
  const controlled = { mode: 'controlled' } as const;
  const vegas = KNEE_ALGORITHMS[0]!;
  const others: Gate[] = [
    {
      ...adaptiveGate(vegas, { waiting: { mode: 'fifo' } }),
      label: `adaptive ${vegas.algorithm}, FIFO to the deadline`,
    },
    { ...adaptiveGate(vegas, { wait: false }), label: `adaptive ${vegas.algorithm}, refusing at once` },
    {
      label: `fixed limit ${C}, controlled waiting`,
      make: () => ({
        maxSize: 1,
        limiter: new LocalLimiter({ name: 'knee', global: C, wait: true, waiting: controlled }),
      }),
    },
    {
      label: `fixed limit ${C}, FIFO to the deadline`,
      make: () => ({ maxSize: 1, limiter: new LocalLimiter({ name: 'knee', global: C, wait: true }) }),
    },
    {
      label: `the pool's queue at maxSize ${C}, controlled`,
      clientLimit: 1,
      make: () => ({ maxSize: C, waiting: controlled }),
    },
    { label: `the pool's queue at maxSize ${C}, FIFO`, clientLimit: 1, make: () => ({ maxSize: C }) },
  ];
  for (const gate of others) {
    const run = await runLive(deadline, gate);
    console.error(`knee: ${gate.label}, ${deadline.name}`);
    const verdict = deadline.judge!(run);
    knee[`${gate.label}: ${deadline.name}`] = { ...verdict, phases: run.phases, loopDelayMs: run.loopDelayMs };
    rows.push([
      `${gate.label}, real timers`,
      `${deadline.name} (${deadline.phases.at(-1)!.untilMs / 1_000} s)`,
      verdict.passes ? 'passes' : 'fails',
      `${verdict.why}; event loop delayed ≤ ${run.loopDelayMs.max.toFixed(0)} ms`,
    ]);
  }
  results.knee = knee;
}

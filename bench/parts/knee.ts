// `npm run bench -- --knee`: the knee scenarios of the simulation (test/qos/knee-scenarios.ts) on
// real timers, through `pool.use()` with an AdaptiveLimiter's defaults: a backend in this process
// that serves C calls at once in L ms each (±10 %, setTimeout), queues the rest FIFO, answers 503
// at 3C in flight and gives up a call still queued 2 s after it was admitted. Callers arrive at
// random (Poisson) or call again as soon as their call ends, as the simulation's do, and wait for
// the limit within the scenario's deadline (2 s unless it says), under the limiter's default
// controlled waiting; latency is also counted as the caller sees it, the wait included. Each run
// is judged by the simulation's own judge; the half-hour overload runs 90 s here, half load 20 s
// (the trend over half an hour is the simulation's to show).
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { AdaptiveLimiter, type AdaptiveAlgorithmOptions, type AdaptiveLimiterOptions } from '../../lib/limits/index.js';
import { ConnectionPool } from '../../lib/core/index.js';
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

/** One scenario on real timers with `adaptive` in front: the run as the simulation reports one. */
async function runLive(
  scenario: JudgedScenario,
  adaptive: AdaptiveAlgorithmOptions,
  /** Instead of the limiter's default waiting (controlled, for the global limit). */
  waits: Pick<AdaptiveLimiterOptions, 'wait' | 'waiting'> = {},
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

  const limiter = new AdaptiveLimiter({ name: 'knee', adaptive, logger: quiet, ...waits });
  const pool = new ConnectionPool(
    { create: async () => ({}), clientLimit: 100_000 },
    { name: 'knee', maxSize: 1, limiter, logger: quiet },
  );
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
    trace.push([at, limiter.limit]);
    for (const t of book.at(at)) {
      t.limitSum += limiter.limit;
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
  await limiter.close();
  const loopDelayMs = { p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 };
  return { ...book.run(`adaptive ${adaptive.algorithm}`, served, trace), stalls, loopDelayMs };
}

export async function kneeBench(results: Record<string, unknown>, rows: string[][]): Promise<void> {
  const knee: Record<string, unknown> = {};
  for (const algorithm of KNEE_ALGORITHMS) {
    for (const scenario of KNEE_SCENARIOS.map(live)) {
      const began = Date.now();
      const run = await runLive(scenario, algorithm);
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
  // deadline) and what Netflix's limiter does (refuse at once), each on the default algorithm.
  const deadline = KNEE_SCENARIOS.map(live).find((s) => s.name.startsWith('twice the capacity'))!;
  const others: [string, Pick<AdaptiveLimiterOptions, 'wait' | 'waiting'>][] = [
    ['FIFO to the deadline', { waiting: { mode: 'fifo' } }],
    ['refusing at once', { wait: false }],
  ];
  for (const [label, waits] of others) {
    const run = await runLive(deadline, KNEE_ALGORITHMS[0]!, waits);
    const verdict = deadline.judge!(run);
    knee[`${KNEE_ALGORITHMS[0]!.algorithm}, ${label}: ${deadline.name}`] = { ...verdict, phases: run.phases };
    rows.push([
      `adaptive ${KNEE_ALGORITHMS[0]!.algorithm}, ${label}, real timers`,
      `${deadline.name} (${deadline.phases.at(-1)!.untilMs / 1_000} s)`,
      verdict.passes ? 'passes' : 'fails',
      verdict.why,
    ]);
  }
  results.knee = knee;
}

// A simulated backend on virtual time, for adaptive limits: a concurrency knee (processor sharing:
// past `capacity` calls in flight each call slows in proportion, as in an M/M/c queue that
// shares its servers), an optional rate limit that answers 429 with Retry-After, and phases in
// which both change. Callers arrive at random (Poisson) and pass a limit first: admitted while
// fewer than the limit are in flight, refused otherwise. A call that outruns its timeout is given
// up (its work stops). Everything is deterministic for a seed.
// Two costs of overload that real backends have, each optional: contention (past the knee the
// backend does less work in all, as a database thrashing on locks and context switches does:
// the Universal Scalability Law's coherence cost) and a rate limit that counts refused calls too
// (OpenAI's documentation: "unsuccessful requests contribute to your per-minute limit"), so a
// client that keeps calling through 429s keeps itself limited.
import type { WaitingOptions } from '../../lib/core/index.js';
import { Random } from './random.js';

/** One stretch of the run: until `untilMs`, the backend has this capacity and rate limit. */
export interface BackendPhase {
  readonly untilMs: number;
  /** Calls served at full speed at once; past it, every call slows in proportion. */
  readonly capacity: number;
  /** Calls per second the backend answers; past it, 429 with Retry-After. Default: none. */
  readonly ratePerSec?: number;
}

/** What overload costs the backend, beyond waiting. */
export interface OverloadCost {
  /**
   * Past the knee, the backend's total work rate falls by this share of its capacity per
   * capacity's worth of calls over it (0.5: at twice the capacity in flight, half the work gets
   * done), down to a tenth. Default 0: processor sharing, the total rate stays flat.
   */
  readonly contention?: number;
  /** A 429 uses up a call of the rate limit too (the bucket goes into debt, down to one second's calls). Default false. */
  readonly refusedCount?: boolean;
}

export interface AdaptiveScenario {
  readonly name: string;
  readonly seed: number;
  /** Calls arriving per second (Poisson). */
  readonly arrivalsPerSec: number;
  /** Work per call at full speed, ms (exponential with this mean). */
  readonly serviceMs: number;
  /** A call not answered within this long is given up, ms. */
  readonly timeoutMs: number;
  readonly phases: readonly BackendPhase[];
  readonly overload?: OverloadCost;
}

/** How a call ended, as the limit in front hears of it. */
export interface CallEnd {
  readonly startedAt: number;
  readonly durationMs: number;
  readonly inflight: number;
  readonly outcome: 'success' | 'overload';
  /** With a 429: the Retry-After, ms. */
  readonly retryAfterMs?: number;
}

/** What stands in front of the backend: a limit, told how each call ended. */
export interface Gate {
  readonly name: string;
  /** Calls that may be in flight now. */
  limit(now: number): number;
  /** Whether the limit still starts slowly (an adaptive one's: see LimitAlgorithm.starting); a controlled queue does not stand meanwhile. */
  starting?(): boolean;
  /** A caller over the limit waits for room until its deadline (a limiter's `wait`) instead of being refused; only the knee backend models it. */
  readonly wait?: boolean;
  /** How its callers wait (the library's `waiting` option): `controlled` sheds a standing queue. Only the knee backend models it. */
  readonly waiting?: WaitingOptions;
  ended?(end: CallEnd, now: number): void;
}

/** What one phase of a run gave. */
export interface PhaseResult {
  readonly untilMs: number;
  /** Calls answered successfully per second. */
  readonly goodput: number;
  readonly p50: number;
  readonly p99: number;
  readonly tooMany: number;
  readonly timeouts: number;
  readonly refused: number;
}

export interface AdaptiveRun {
  readonly gate: string;
  readonly phases: PhaseResult[];
  /** Successes per second over the whole run. */
  readonly goodput: number;
  /** The gate's limit, sampled every 100 ms: [ms, limit]. */
  readonly trace: [number, number][];
  /** When each successful call ended, ms, in order. */
  readonly served: number[];
}

interface Job {
  remaining: number;
  readonly startedAt: number;
  readonly inflight: number;
}

/** Runs `scenario` with `gate` in front of the backend. */
export function runAdaptive(scenario: AdaptiveScenario, gate: Gate): AdaptiveRun {
  const rnd = new Random(scenario.seed);
  const exp = (mean: number) => -Math.log(1 - rnd.next()) * mean;
  const end = scenario.phases[scenario.phases.length - 1]!.untilMs;
  const jobs: Job[] = [];
  const latencies: number[][] = scenario.phases.map(() => []);
  const counts = scenario.phases.map(() => ({ tooMany: 0, timeouts: 0, refused: 0 }));
  const trace: [number, number][] = [];
  const served: number[] = [];
  let phase = 0;
  let now = 0;
  let nextArrival = exp(1_000 / scenario.arrivalsPerSec);
  let nextTrace = 0;
  // The rate limit: a bucket of one second's calls.
  let tokens = scenario.phases[0]!.ratePerSec ?? Infinity;
  let tokensAt = 0;
  const contention = scenario.overload?.contention ?? 0;
  const refusedCount = scenario.overload?.refusedCount ?? false;

  const finish = (job: Job, outcome: 'success' | 'overload', retryAfterMs?: number) => {
    const durationMs = now - job.startedAt;
    gate.ended?.(
      {
        startedAt: job.startedAt,
        durationMs,
        inflight: job.inflight,
        outcome,
        ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      },
      now,
    );
  };

  while (now < end) {
    const p = scenario.phases[phase]!;
    const over = jobs.length - p.capacity;
    const total = over <= 0 ? jobs.length : p.capacity * Math.max(0.1, 1 - (contention * over) / p.capacity);
    const rate = jobs.length === 0 ? 1 : total / jobs.length;
    // The next event: an arrival, the first call done, the first call past its timeout, a trace point, the phase's end.
    let first: Job | undefined;
    let firstDone = Infinity;
    let firstTimeout = Infinity;
    let late: Job | undefined;
    for (const job of jobs) {
      const done = now + job.remaining / rate;
      if (done < firstDone) [firstDone, first] = [done, job];
      const deadline = job.startedAt + scenario.timeoutMs;
      if (deadline < firstTimeout) [firstTimeout, late] = [deadline, job];
    }
    const next = Math.min(nextArrival, firstDone, firstTimeout, nextTrace, p.untilMs);
    for (const job of jobs) job.remaining -= (next - now) * rate;
    now = next;
    if (now === nextTrace) {
      trace.push([now, gate.limit(now)]);
      nextTrace += 100;
    } else if (now === p.untilMs) {
      phase = Math.min(phase + 1, scenario.phases.length - 1);
    } else if (now === firstDone && first !== undefined) {
      jobs.splice(jobs.indexOf(first), 1);
      latencies[phase]!.push(now - first.startedAt);
      served.push(now);
      finish(first, 'success');
    } else if (now === firstTimeout && late !== undefined) {
      jobs.splice(jobs.indexOf(late), 1);
      counts[phase]!.timeouts++;
      finish(late, 'overload');
    } else {
      nextArrival = now + exp(1_000 / scenario.arrivalsPerSec);
      if (jobs.length >= gate.limit(now)) {
        counts[phase]!.refused++;
        continue;
      }
      const perSec = p.ratePerSec ?? Infinity;
      tokens = Math.min(perSec, tokens + ((now - tokensAt) / 1_000) * perSec);
      tokensAt = now;
      if (tokens < 1) {
        counts[phase]!.tooMany++;
        if (refusedCount) tokens = Math.max(-perSec, tokens - 1);
        // Answered at once: 429, retry once a token is back.
        gate.ended?.(
          {
            startedAt: now,
            durationMs: 0,
            inflight: jobs.length + 1,
            outcome: 'overload',
            retryAfterMs: Math.ceil(((1 - tokens) / perSec) * 1_000),
          },
          now,
        );
        continue;
      }
      tokens--;
      jobs.push({ remaining: exp(scenario.serviceMs), startedAt: now, inflight: jobs.length + 1 });
    }
  }

  let start = 0;
  const phases = scenario.phases.map((p, i) => {
    const sorted = latencies[i]!.sort((a, b) => a - b);
    const q = (x: number) =>
      sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(x * sorted.length))]!;
    const result = {
      untilMs: p.untilMs,
      goodput: (sorted.length / (p.untilMs - start)) * 1_000,
      p50: q(0.5),
      p99: q(0.99),
      ...counts[i]!,
    };
    start = p.untilMs;
    return result;
  });
  return { gate: gate.name, phases, goodput: (served.length / end) * 1_000, trace, served };
}

/** A fixed limit. */
export function fixedGate(limit: number): Gate {
  return { name: `fixed ${limit}`, limit: () => limit };
}

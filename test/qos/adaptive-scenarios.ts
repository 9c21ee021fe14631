// The scenarios of the adaptive-limit simulation, and the gates run through them: fixed limits
// from far below to far above the knee, and each adaptive algorithm.
import type { WaitingOptions } from '../../lib/core/index.js';
import { limitAlgorithm, type AdaptiveAlgorithmOptions } from '../../lib/limits/adaptive/limit-algorithms.js';
import { fixedGate, type AdaptiveRun, type AdaptiveScenario, type Gate } from './adaptive-backend.js';

export const ADAPTIVE_SCENARIOS: AdaptiveScenario[] = [
  {
    // A database-like backend: 40 calls at full speed, thrashing past that; it loses half its
    // capacity for half a minute (another tenant), then gets it back.
    name: 'capacity halves, then recovers',
    seed: 1,
    arrivalsPerSec: 2_500,
    serviceMs: 20,
    timeoutMs: 1_000,
    overload: { contention: 0.5 },
    phases: [
      { untilMs: 30_000, capacity: 40 },
      { untilMs: 60_000, capacity: 20 },
      { untilMs: 90_000, capacity: 40 },
    ],
  },
  {
    // An LLM API: plenty of concurrency, but a rate limit of 300 calls a second that counts
    // refused calls too, tightened to 150, then restored.
    name: 'rate limit tightens, then relaxes',
    seed: 2,
    arrivalsPerSec: 600,
    serviceMs: 50,
    timeoutMs: 2_000,
    overload: { refusedCount: true },
    phases: [
      { untilMs: 30_000, capacity: 500, ratePerSec: 300 },
      { untilMs: 60_000, capacity: 500, ratePerSec: 150 },
      { untilMs: 90_000, capacity: 500, ratePerSec: 300 },
    ],
  },
  {
    // An upstream with both: a rate limit of 200 calls a second that counts refused calls, and 30
    // calls at full speed, thrashing past that. The rate limit binds first; then the capacity
    // halves and binds instead (150 calls a second at most); then it comes back.
    name: 'the binding limit changes',
    seed: 3,
    arrivalsPerSec: 500,
    serviceMs: 100,
    timeoutMs: 2_000,
    overload: { contention: 0.5, refusedCount: true },
    phases: [
      { untilMs: 30_000, capacity: 30, ratePerSec: 200 },
      { untilMs: 60_000, capacity: 15, ratePerSec: 200 },
      { untilMs: 90_000, capacity: 30, ratePerSec: 200 },
    ],
  },
];

export const FIXED_LIMITS = [5, 10, 20, 40, 80, 160, 320];

/** An adaptive algorithm as a gate: its limit, paused for a 429's Retry-After; `wait`: callers over it wait (the knee backend models it). */
export function adaptiveGate(
  options: AdaptiveAlgorithmOptions,
  { wait = false, waiting = undefined as WaitingOptions | undefined } = {},
): Gate {
  const algorithm = limitAlgorithm(options);
  let pausedUntil = 0;
  return {
    name: `adaptive ${options.algorithm}`,
    wait,
    ...(waiting === undefined ? {} : { waiting }),
    limit: (now) => (now < pausedUntil ? 0 : algorithm.limit),
    starting: () => algorithm.starting,
    ended: (end, now) => {
      if (end.retryAfterMs !== undefined) pausedUntil = Math.max(pausedUntil, now + end.retryAfterMs);
      algorithm.sample(end);
    },
  };
}

export function gates(): Gate[] {
  return [
    ...FIXED_LIMITS.map(fixedGate),
    adaptiveGate({ algorithm: 'aimd', max: 1_000 }),
    adaptiveGate({ algorithm: 'gradient', max: 1_000 }),
    adaptiveGate({ algorithm: 'vegas', max: 1_000 }),
  ];
}

/** How an adaptive run compares with every fixed limit on one scenario: the gate of `npm test`. */
export interface Verdict {
  /** Per phase: the adaptive goodput over the best fixed limit's in that phase. */
  readonly goodput: number[];
  /** Per phase: the adaptive p99 over the p99 of that best fixed limit. */
  readonly p99: number[];
  /** The adaptive goodput over the whole run, over the best fixed limit's over the whole run. */
  readonly whole: number;
  /** Per phase after the first: ms from the change until a second's goodput is within 10 % of the best fixed limit's phase goodput (Infinity: never). */
  readonly convergeMs: number[];
  /** Whether it passes: ≥ 0.9 per phase, > 1 over the run, p99 ≤ 2× per phase. */
  readonly passes: boolean;
}

export function judge(scenario: AdaptiveScenario, adaptive: AdaptiveRun, fixed: readonly AdaptiveRun[]): Verdict {
  const best = scenario.phases.map((_, i) =>
    fixed.reduce((b, r) => (r.phases[i]!.goodput > b.phases[i]!.goodput ? r : b)),
  );
  const goodput = scenario.phases.map((_, i) => adaptive.phases[i]!.goodput / best[i]!.phases[i]!.goodput);
  const p99 = scenario.phases.map((_, i) => adaptive.phases[i]!.p99 / best[i]!.phases[i]!.p99);
  const whole = adaptive.goodput / Math.max(...fixed.map((r) => r.goodput));
  const convergeMs = scenario.phases.slice(1).map((p, j) => {
    const from = scenario.phases[j]!.untilMs;
    const target = best[j + 1]!.phases[j + 1]!.goodput * 0.9;
    for (let t = from; t + 1_000 <= p.untilMs; t += 100) {
      const served = adaptive.served.filter((s) => s >= t && s < t + 1_000).length;
      if (served >= target) return t - from;
    }
    return Infinity;
  });
  const passes = goodput.every((g) => g >= 0.9) && whole > 1 && p99.every((r) => r <= 2);
  return { goodput, p99, whole, convergeMs, passes };
}

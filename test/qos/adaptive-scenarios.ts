// The scenarios of the adaptive-limit simulation, and the gates run through them: fixed limits
// from far below to far above the knee, and each adaptive algorithm.
import { limitAlgorithm, type AdaptiveAlgorithmOptions } from '../../lib/limits/limit-algorithms.js';
import { fixedGate, type AdaptiveScenario, type Gate } from './adaptive-backend.js';

export const ADAPTIVE_SCENARIOS: AdaptiveScenario[] = [
  {
    // A database-like backend: 40 calls at full speed; it loses half its capacity for a minute (another tenant), then gets it back.
    name: 'capacity halves, then recovers',
    seed: 1,
    arrivalsPerSec: 2_500,
    serviceMs: 20,
    timeoutMs: 1_000,
    phases: [
      { untilMs: 60_000, capacity: 40 },
      { untilMs: 120_000, capacity: 20 },
      { untilMs: 180_000, capacity: 40 },
    ],
  },
  {
    // An LLM API: plenty of concurrency, but a rate limit of 300 calls a second, tightened to 150, then restored.
    name: 'rate limit tightens, then relaxes',
    seed: 2,
    arrivalsPerSec: 600,
    serviceMs: 50,
    timeoutMs: 2_000,
    phases: [
      { untilMs: 60_000, capacity: 500, ratePerSec: 300 },
      { untilMs: 120_000, capacity: 500, ratePerSec: 150 },
      { untilMs: 180_000, capacity: 500, ratePerSec: 300 },
    ],
  },
];

export const FIXED_LIMITS = [5, 10, 20, 40, 80, 160, 320];

/** An adaptive algorithm as a gate: its limit, paused for a 429's Retry-After. */
export function adaptiveGate(options: AdaptiveAlgorithmOptions): Gate {
  const algorithm = limitAlgorithm(options);
  let pausedUntil = 0;
  return {
    name: `adaptive ${options.algorithm}`,
    limit: (now) => (now < pausedUntil ? 0 : algorithm.limit),
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

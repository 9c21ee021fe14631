// The adaptive limits on a backend with a hard knee (knee-backend.ts). The default algorithm at
// twice the backend's capacity for 30 minutes of virtual time serves the capacity, keeps p99
// within twice the service time, and does not ratchet: neither its limit nor the latency trend up.
// Every algorithm, with callers waiting for the limit as an AdaptiveLimiter's do by default,
// refuses under 10 % of 50 clients arriving at a cold limit in the first second, and under 1 % of
// calls at half load, the first second included. `npm run qos:knee` prints every algorithm, with
// and without waiting, on every scenario of knee-scenarios.ts.
import { describe, expect, it } from '@jest/globals';
import { DEFAULT_ADAPTIVE } from '../../lib/limits/adaptive/adaptive-limiter.js';
import { adaptiveGate } from './adaptive-scenarios.js';
import { runKnee } from './knee-backend.js';
import { KNEE_ALGORITHMS, KNEE_SCENARIOS } from './knee-scenarios.js';

const scenario = (name: string) => KNEE_SCENARIOS.find((s) => s.name.startsWith(name))!;

describe('the adaptive limits on a backend with a hard knee', () => {
  it('the default, at twice the capacity for 30 minutes: the capacity served, p99 within 2 L, no ratchet', () => {
    const sustained = scenario('sustained 2x');
    const verdict = sustained.judge!(runKnee(sustained, adaptiveGate(DEFAULT_ADAPTIVE, { wait: true })));
    console.log(`${sustained.name}: ${verdict.why}`);
    expect(verdict.passes).toBe(true);
  });

  it.each(KNEE_ALGORITHMS.map((a) => [a.algorithm, a] as const))(
    '%s, callers waiting for the limit: a cold start and half load refuse almost nothing',
    (_name, algorithm) => {
      for (const s of [scenario('cold start'), scenario('half load')]) {
        const verdict = s.judge!(runKnee(s, adaptiveGate(algorithm, { wait: true })));
        expect({ scenario: s.name, why: verdict.why, passes: verdict.passes }).toMatchObject({ passes: true });
      }
    },
  );

  it('the gate has teeth: refusing at once instead, a cold limit refuses most of a burst in its first second', () => {
    const cold = scenario('cold start');
    expect(cold.judge!(runKnee(cold, adaptiveGate(DEFAULT_ADAPTIVE))).passes).toBe(false);
  });
});

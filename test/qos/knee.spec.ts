// The adaptive limit on a backend with a hard knee (knee-backend.ts): the default algorithm at
// twice the backend's capacity for 30 minutes of virtual time serves the capacity, keeps p99
// within twice the service time, and does not ratchet: neither its limit nor the latency trend up.
// `npm run qos:knee` prints every algorithm on every scenario of knee-scenarios.ts.
import { describe, expect, it } from '@jest/globals';
import { DEFAULT_ADAPTIVE } from '../../lib/limits/adaptive/adaptive-limiter.js';
import { adaptiveGate } from './adaptive-scenarios.js';
import { runKnee } from './knee-backend.js';
import { KNEE_SCENARIOS } from './knee-scenarios.js';

describe('the default adaptive limit on a backend with a hard knee', () => {
  it('at twice the capacity for 30 minutes: the capacity served, p99 within 2 L, no ratchet', () => {
    const scenario = KNEE_SCENARIOS.find((s) => s.name.startsWith('sustained 2x'))!;
    const run = runKnee(scenario, adaptiveGate(DEFAULT_ADAPTIVE));
    const verdict = scenario.judge!(run);
    console.log(`${scenario.name}: ${verdict.why}`);
    expect(verdict.passes).toBe(true);
  });
});

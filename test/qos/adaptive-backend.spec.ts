// The simulated backend of the adaptive-limit scenarios is itself right: Little's law below the
// knee, flat throughput and longer latency past it, the rate limit's 429s with Retry-After,
// timeouts that give calls up, and the same run for the same seed.
import { describe, expect, it } from '@jest/globals';
import { fixedGate, runAdaptive, type AdaptiveScenario, type CallEnd, type Gate } from './adaptive-backend.js';
import { adaptiveGate } from './adaptive-scenarios.js';

const base: AdaptiveScenario = {
  name: 'test',
  seed: 7,
  arrivalsPerSec: 1_000,
  serviceMs: 20,
  timeoutMs: 10_000,
  phases: [{ untilMs: 20_000, capacity: 10 }],
};

describe('the simulated backend', () => {
  it('serves limit / work calls a second below its knee (Little), and flat past it with longer waits', () => {
    const below = runAdaptive(base, fixedGate(5)).phases[0]!;
    // 5 / 20 ms, less the moments a freed slot waits for the next arrival (1 ms on average at 1,000 a second).
    expect(below.goodput).toBeGreaterThan((5 / 21) * 1_000 * 0.97);
    expect(below.goodput).toBeLessThan(250);
    expect(below.p50).toBeLessThan(20); // the median of an exponential of mean 20
    const past = runAdaptive(base, fixedGate(40)).phases[0]!;
    expect(past.goodput).toBeGreaterThan(500 * 0.95); // capacity 10 / 20 ms
    expect(past.goodput).toBeLessThan(500 * 1.05);
    expect(past.p50).toBeGreaterThan(below.p50 * 3); // 40 calls share 10 servers: four times slower
  });

  it('answers 429 past its rate limit, with the time to the next free call as Retry-After', () => {
    const ends: CallEnd[] = [];
    const gate: Gate = { name: 'recording', limit: () => 100, ended: (end) => void ends.push(end) };
    const run = runAdaptive({ ...base, phases: [{ untilMs: 10_000, capacity: 100, ratePerSec: 200 }] }, gate)
      .phases[0]!;
    expect(run.goodput).toBeLessThanOrEqual(200 * 1.02 + 20); // the bucket starts full: one second's calls
    expect(run.tooMany).toBeGreaterThan(5_000);
    const refused = ends.filter((e) => e.retryAfterMs !== undefined);
    expect(refused.length).toBe(run.tooMany);
    expect(refused.every((e) => e.outcome === 'overload' && e.retryAfterMs! > 0 && e.retryAfterMs! <= 5)).toBe(true);
  });

  it('gives up calls past their timeout and tells the gate they ended in overload', () => {
    const ends: CallEnd[] = [];
    const gate: Gate = { name: 'unbounded', limit: () => 5_000, ended: (end) => void ends.push(end) };
    const run = runAdaptive({ ...base, timeoutMs: 300 }, gate).phases[0]!;
    expect(run.timeouts).toBeGreaterThan(1_000);
    expect(ends.filter((e) => e.outcome === 'overload').every((e) => Math.abs(e.durationMs - 300) < 1e-6)).toBe(true);
    expect(run.p99).toBeLessThanOrEqual(300); // what succeeds, succeeds in time
    // Nothing is refused at this limit: every call that arrived either succeeded or was given up.
    expect(run.refused).toBe(0);
    expect((run.goodput * 20 + run.timeouts) / 20).toBeGreaterThan(1_000 * 0.95);
    expect((run.goodput * 20 + run.timeouts) / 20).toBeLessThan(1_000 * 1.05);
  });

  it('moves to the next phase at its time, and gives the same run for the same seed', () => {
    const scenario = {
      ...base,
      phases: [
        { untilMs: 5_000, capacity: 10 },
        { untilMs: 10_000, capacity: 5 },
      ],
    };
    const a = runAdaptive(scenario, fixedGate(40));
    expect(a.phases[1]!.goodput).toBeLessThan(a.phases[0]!.goodput * 0.6);
    expect(runAdaptive(scenario, fixedGate(40))).toEqual(a);
    expect(runAdaptive({ ...scenario, seed: 8 }, fixedGate(40))).not.toEqual(a);
  });

  it('pauses an adaptive gate for a Retry-After: far fewer 429s than a fixed limit at the same goodput', () => {
    const scenario = {
      ...base,
      arrivalsPerSec: 600,
      serviceMs: 50,
      phases: [{ untilMs: 20_000, capacity: 500, ratePerSec: 150 }],
    };
    const fixed = runAdaptive(scenario, fixedGate(80)).phases[0]!;
    const aimd = runAdaptive(scenario, adaptiveGate({ algorithm: 'aimd', max: 1_000 })).phases[0]!;
    expect(aimd.goodput).toBeGreaterThan(fixed.goodput * 0.95);
    expect(aimd.tooMany).toBeLessThan(fixed.tooMany / 20);
  });
});

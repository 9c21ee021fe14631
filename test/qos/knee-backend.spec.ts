// The backend with a hard knee is itself right: below the knee a call takes its service time and
// the rate follows Little's law; past it the rate is the capacity's and calls wait in a FIFO queue
// for the calls ahead of them; at shedAt × capacity in flight it answers 503 at once; a call
// queued past its timeout is given up; a phase that raises the capacity serves the queue at once;
// the same seed gives the same run.
import { describe, expect, it } from '@jest/globals';
import { fixedGate, type CallEnd, type Gate } from './adaptive-backend.js';
import { runKnee, type KneeScenario } from './knee-backend.js';

const base: KneeScenario = {
  name: 'test',
  seed: 5,
  serviceMs: 20,
  phases: [{ untilMs: 20_000, capacity: 10, arrivalsPerSec: 1_000 }],
};

const recording = (limit: number, ends: CallEnd[]): Gate => ({
  name: 'recording',
  limit: () => limit,
  ended: (end) => void ends.push(end),
});

describe('the backend with a hard knee', () => {
  it('below the knee: each call takes its service time, and the rate is limit / service time', () => {
    const run = runKnee(base, fixedGate(5)).phases[0]!;
    expect(run.goodput).toBeGreaterThan((5 / 21) * 1_000 * 0.97);
    expect(run.goodput).toBeLessThan(250);
    expect(run.meanMs).toBeGreaterThan(19);
    expect(run.meanMs).toBeLessThan(21);
    expect(run.p99).toBeLessThanOrEqual(22);
  });

  it('past the knee: the capacity rate, and each call waits for the queue ahead of it', () => {
    const run = runKnee(base, fixedGate(20)).phases[0]!;
    expect(run.goodput).toBeGreaterThan(500 * 0.98); // 10 at once, 20 ms each
    expect(run.goodput).toBeLessThan(500 * 1.02);
    // 20 in flight on 10 servers: about 10 queued, one service time of waiting.
    expect(run.meanMs).toBeGreaterThan(36);
    expect(run.meanMs).toBeLessThan(42);
    expect(run.shed).toBe(0);
  });

  it('answers 503 at once with shedAt × capacity in flight, and tells the gate of an overload', () => {
    const ends: CallEnd[] = [];
    const run = runKnee({ ...base, shedAt: 2 }, recording(1_000, ends)).phases[0]!;
    expect(run.shed).toBeGreaterThan(1_000);
    const shed = ends.filter((e) => e.outcome === 'overload' && e.durationMs === 0);
    expect(shed.length).toBe(run.shed);
    expect(shed.every((e) => e.inflight === 21)).toBe(true); // 20 in flight, and the call itself
    expect(run.goodput).toBeGreaterThan(500 * 0.98);
  });

  it('gives up a call still queued at its timeout', () => {
    const ends: CallEnd[] = [];
    const run = runKnee({ ...base, timeoutMs: 25, shedAt: 100 }, recording(1_000, ends)).phases[0]!;
    expect(run.timeouts).toBeGreaterThan(1_000);
    const given = ends.filter((e) => e.outcome === 'overload');
    expect(given.every((e) => Math.abs(e.durationMs - 25) < 1e-6)).toBe(true);
    expect(run.p99).toBeLessThanOrEqual(25 + 22); // a call that started in time ends within its service time
  });

  it('serves the queue at once when the capacity grows, and gives the same run for the same seed', () => {
    const scenario: KneeScenario = {
      ...base,
      phases: [
        { untilMs: 5_000, capacity: 5, arrivalsPerSec: 1_000 },
        { untilMs: 10_000, capacity: 10, arrivalsPerSec: 1_000 },
      ],
    };
    const a = runKnee(scenario, fixedGate(30));
    expect(a.phases[0]!.goodput).toBeLessThan(260);
    expect(a.phases[1]!.goodput).toBeGreaterThan(480);
    expect(runKnee(scenario, fixedGate(30))).toEqual(a);
    expect(runKnee({ ...scenario, seed: 6 }, fixedGate(30))).not.toEqual(a);
  });
});

// The QoS gate (the group simulation, with its thresholds switched on): every scenario runs on
// virtual time against the pool group and two naive baselines; the group must reach the
// scenario's threshold and beat both baselines on the weighted score.
import { describe, expect, it } from '@jest/globals';
import { type ContenderName, CONTENDERS, FLEET_CONTENDERS, runScenario, type RunResult } from './harness.js';
import type { Scenario } from './scenario.js';
import { SCENARIOS } from './scenarios.js';
import { FLEET_SCENARIOS } from './fleet-scenarios.js';
import { html, table } from './report.js';
import { percentile, scale, score, variation } from './scoring.js';

/**
 * How long a simulation may take on the wall clock: a few seconds alone, but CPU-bound, so beside
 * the suite's heaviest specs (pack.spec's installs and compiles) ten times that was seen.
 */
const SIMULATION_MS = 120_000;

/**
 * Runs `scenario` against `contenders` (the planner first, then the baselines): the planner
 * serves every query, nobody has more than the budget, and the planner reaches the threshold and
 * beats both baselines.
 */
async function gate(scenario: Scenario, contenders: readonly ContenderName[]): Promise<void> {
  const runs = new Map<ContenderName, RunResult>();
  for (const c of contenders) runs.set(c, await runScenario(scenario, c));
  const totals = new Map([...runs].map(([c, r]) => [c, Math.round(score(r).total * 10) / 10]));
  const [planner, ...baselines] = contenders;
  const mine = runs.get(planner!)!;
  expect({ failed: mine.queries.filter((q) => q.failed).length, unfinished: mine.unfinished }).toEqual({
    failed: 0,
    unfinished: 0,
  });
  for (const r of runs.values()) expect(r.peak).toBeLessThanOrEqual(scenario.maxTotal);
  expect(totals.get(planner!)).toBeGreaterThanOrEqual(scenario.threshold);
  for (const b of baselines) expect(totals.get(planner!)).toBeGreaterThan(totals.get(b)!);
}

describe('the QoS simulation of a pool group', () => {
  it.each(SCENARIOS.map((s) => [s.name, s] as const))(
    '%s: the group reaches its threshold and beats both baselines',
    (_, scenario) => gate(scenario, CONTENDERS),
    SIMULATION_MS,
  );

  it(
    'is deterministic per seed, and another seed gives another run',
    async () => {
      const scenario = SCENARIOS.find((s) => s.name === 'cheap connects')!;
      const [a, b, other] = [
        await runScenario(scenario, 'group'),
        await runScenario(scenario, 'group'),
        await runScenario({ ...scenario, seed: 99 }, 'group'),
      ];
      expect(b.queries).toEqual(a.queries);
      expect([b.connects, b.disconnects]).toEqual([a.connects, a.disconnects]);
      expect(other.queries).not.toEqual(a.queries);
    },
    SIMULATION_MS,
  );
});

describe('the QoS simulation of a fleet budget (instances on one simulated Redis)', () => {
  it.each(FLEET_SCENARIOS.map((s) => [s.name, s] as const))(
    '%s: the fleet reaches its threshold and beats both baselines',
    (_, scenario) => gate(scenario, FLEET_CONTENDERS),
    SIMULATION_MS,
  );

  it(
    'is deterministic per seed',
    async () => {
      const scenario = FLEET_SCENARIOS[0]!;
      const [a, b] = [await runScenario(scenario, 'fleet'), await runScenario(scenario, 'fleet')];
      expect(b.queries).toEqual(a.queries);
      expect([b.connects, b.disconnects]).toEqual([a.connects, a.disconnects]);
    },
    SIMULATION_MS,
  );
});

describe('QoS scoring', () => {
  it('scales linearly between landmarks and is flat beyond them', () => {
    const marks = [
      [10, 100],
      [110, 0],
    ] as const;
    expect([scale(0, marks), scale(10, marks), scale(60, marks), scale(110, marks), scale(1e9, marks)]).toEqual([
      100, 100, 50, 0, 0,
    ]);
    expect(
      scale(0.25, [
        [0, 0],
        [0.5, 100],
      ]),
    ).toBe(50);
    expect(() => scale(1, [])).toThrow('at least one landmark');
  });

  it('takes nearest-rank percentiles and the coefficient of variation', () => {
    expect([
      percentile([5, 1, 4, 2, 3], 50),
      percentile([5, 1, 4, 2, 3], 100),
      percentile([5, 1, 4, 2, 3], 1),
      percentile([], 90),
    ]).toEqual([3, 5, 1, 0]);
    expect(variation([2, 2, 2])).toBe(0);
    expect(variation([0, 0])).toBe(0);
    expect(variation([1, 3])).toBeCloseTo(0.5);
  });
});

describe('the QoS report', () => {
  it('tables every measure with each contender, and plots waits and connections per contender', async () => {
    const scenario = SCENARIOS.find((s) => s.name === 'huge demand beside a rare one')!;
    const runs: RunResult[] = [];
    for (const c of CONTENDERS) runs.push(await runScenario(scenario, c));
    const text = table(scenario, runs);
    expect(text.split('\n')[0]).toBe('### huge demand beside a rare one: pass (threshold 85)');
    for (const label of ['p90 wait of rare (ms)', 'p99 wait of busy (ms)', 'connects + disconnects', 'weighted total'])
      expect(text).toContain(`| ${label}`);
    expect(text).toContain(score(runs[0]!).total.toFixed(1));
    const page = html([runs]);
    expect(page.match(/<section>/g)).toHaveLength(1);
    expect(page.match(/<svg /g)).toHaveLength(2 * CONTENDERS.length);
    expect(page).toContain('<span style="color:#1f77b4">■ busy</span>');
  });
});

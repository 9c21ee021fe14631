// The gate of the adaptive limit: in every scenario of the simulated backend, the default
// algorithm is within 10 % of the best fixed limit's goodput in each phase, beats every fixed
// limit over the whole run, and keeps p99 within twice the best fixed limit's. A fixed limit is
// best in one phase at most: each scenario's backend changes under it.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DEFAULT_ADAPTIVE } from '../../lib/limits/adaptive/adaptive-limiter.js';
import { fixedGate, runAdaptive, type AdaptiveRun, type AdaptiveScenario } from './adaptive-backend.js';
import { adaptivePlot } from './adaptive-plot.js';
import { ADAPTIVE_SCENARIOS, adaptiveGate, FIXED_LIMITS, judge } from './adaptive-scenarios.js';

/** Every fixed limit's run of a scenario, run once. */
const fixedRuns = new Map<AdaptiveScenario, AdaptiveRun[]>();
const fixedOn = (scenario: AdaptiveScenario) => {
  if (!fixedRuns.has(scenario))
    fixedRuns.set(
      scenario,
      FIXED_LIMITS.map((limit) => runAdaptive(scenario, fixedGate(limit))),
    );
  return fixedRuns.get(scenario)!;
};

const pct = (xs: number[]) => xs.map((x) => `${(x * 100).toFixed(0)} %`).join(', ');

describe('the default adaptive limit against every fixed limit, on the simulated backend', () => {
  it.each(ADAPTIVE_SCENARIOS.map((s) => [s.name, s] as const))('%s', (_name, scenario) => {
    const fixed = fixedOn(scenario);
    const adaptive = runAdaptive(scenario, adaptiveGate(DEFAULT_ADAPTIVE));
    const verdict = judge(scenario, adaptive, fixed);
    console.log(
      `${scenario.name}: goodput per phase ${pct(verdict.goodput)} of the best fixed limit's, ${pct([verdict.whole])} over the run; ` +
        `p99 ${verdict.p99.map((r) => `${r.toFixed(2)}×`).join(', ')}; back within 10 % ${verdict.convergeMs.map((ms) => `${ms} ms`).join(', ')} after each change`,
    );
    for (const g of verdict.goodput) expect(g).toBeGreaterThanOrEqual(0.9);
    expect(verdict.whole).toBeGreaterThan(1);
    for (const r of verdict.p99) expect(r).toBeLessThanOrEqual(2);
    // After each change it is back within 10 % of the best fixed limit within a few seconds.
    for (const ms of verdict.convergeMs) expect(ms).toBeLessThan(10_000);
  });

  it('the gate has teeth: AIMD blind to latency (tolerance Infinity, loss only) fails where the backend thrashes', () => {
    const scenario = ADAPTIVE_SCENARIOS.find((s) => s.overload?.contention !== undefined)!;
    const fixed = fixedOn(scenario);
    const verdict = judge(
      scenario,
      runAdaptive(scenario, adaptiveGate({ algorithm: 'aimd', max: 1_000, tolerance: Infinity })),
      fixed,
    );
    expect(verdict.passes).toBe(false);
    expect(Math.min(...verdict.goodput)).toBeLessThan(0.6);
  });
});

describe('the README’s plot of the adaptive limit', () => {
  it('is what the simulation gives now (npm run qos:adaptive:plot draws it again)', () => {
    const committed = readFileSync(fileURLToPath(new URL('../../docs/adaptive-limit.svg', import.meta.url)), 'utf8');
    expect(committed).toBe(adaptivePlot().svg);
  });
});

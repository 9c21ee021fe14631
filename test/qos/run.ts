// `npm run qos`: every scenario against the group (a fleet scenario: the fleet budget) and both baselines; a table per scenario, and
// an HTML report (qos-report/index.html) with latency-over-time and connections-per-member plots.
// `--only <part of a name>` runs the matching scenarios, `--seed N` another seed.
import { mkdirSync, writeFileSync } from 'node:fs';
import { CONTENDERS, FLEET_CONTENDERS, runScenario, type RunResult } from './harness.js';
import { FLEET_SCENARIOS } from './fleet-scenarios.js';
import { html, table } from './report.js';
import { SCENARIOS } from './scenarios.js';
import { score } from './scoring.js';

const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const only = arg('--only');
const seed = arg('--seed');
const results: RunResult[][] = [];
let failed = 0;
const t0 = performance.now();
for (const base of [...SCENARIOS, ...FLEET_SCENARIOS]) {
  if (only !== undefined && !base.name.includes(only)) continue;
  const scenario = seed === undefined ? base : { ...base, seed: Number(seed) };
  const runs: RunResult[] = [];
  for (const c of scenario.fleet === true ? FLEET_CONTENDERS : CONTENDERS) runs.push(await runScenario(scenario, c));
  results.push(runs);
  const [group, ...baselines] = runs.map((r) => score(r).total);
  if (group! < scenario.threshold || baselines.some((b) => b >= group!)) failed++;
  console.log(`\n${table(scenario, runs)}`);
}
mkdirSync('qos-report', { recursive: true });
writeFileSync('qos-report/index.html', html(results));
console.log(
  `\n${results.length - failed} of ${results.length} scenarios pass (${((performance.now() - t0) / 1000).toFixed(1)} s); report: qos-report/index.html`,
);
process.exitCode = failed > 0 ? 1 : 0;

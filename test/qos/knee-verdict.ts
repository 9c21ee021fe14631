// `node knee-verdict.js <gate> <scenario>`: one knee scenario's verdict (knee-scenarios.ts) as a
// line of JSON, for a gate named by its algorithm ('vegas', 'gradient', 'aimd', callers waiting
// for the limit) or 'netflix-vegas' (netflix-vegas.ts). knee.spec.ts runs the half-hour scenario
// here, in a process of its own: Jest's module sandbox makes every global read (Math, Number)
// slow, ten times slower over millions of simulated calls.
import type { AdaptiveAlgorithmOptions } from '../../lib/limits/adaptive/limit-algorithms.js';
import { adaptiveGate } from './adaptive-scenarios.js';
import { runKnee } from './knee-backend.js';
import { KNEE_SCENARIOS } from './knee-scenarios.js';
import { netflixVegasGate } from './netflix-vegas.js';

const [gateName, scenarioName] = process.argv.slice(2);
const scenario = KNEE_SCENARIOS.find((s) => s.name === scenarioName);
if (scenario?.judge === undefined || gateName === undefined) {
  console.error(
    `usage: knee-verdict <vegas|gradient|aimd|netflix-vegas> <${KNEE_SCENARIOS.map((s) => s.name).join('|')}>`,
  );
  process.exit(2);
}
const gate =
  gateName === 'netflix-vegas'
    ? netflixVegasGate({ wait: true })
    : adaptiveGate({ algorithm: gateName } as AdaptiveAlgorithmOptions, {
        wait: true,
        waiting: { mode: 'controlled' },
      });
console.log(JSON.stringify(scenario.judge(runKnee(scenario, gate))));

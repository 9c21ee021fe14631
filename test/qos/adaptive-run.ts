// `npm run qos:adaptive`: each adaptive-limit scenario with every fixed limit and every
// adaptive algorithm in front of the simulated backend; goodput and latency per phase, and the
// verdict of the gate (test/qos/adaptive-gate.spec.ts) for each algorithm. `-- --seeds 1,2,3`
// runs each scenario with other seeds.
import { DEFAULT_ADAPTIVE } from '../../lib/limits/adaptive/adaptive-limiter.js';
import { fixedGate, runAdaptive } from './adaptive-backend.js';
import { ADAPTIVE_SCENARIOS, adaptiveGate, FIXED_LIMITS, judge } from './adaptive-scenarios.js';

const f = (x: number) => (Number.isNaN(x) ? '-' : x.toFixed(0));
const seedsArg = process.argv.indexOf('--seeds');
const seeds = seedsArg > 0 ? process.argv[seedsArg + 1]!.split(',').map(Number) : [undefined];
const algorithms = [
  { algorithm: 'aimd' as const },
  { algorithm: 'gradient' as const },
  { algorithm: 'vegas' as const },
];
for (const base of ADAPTIVE_SCENARIOS) {
  for (const seed of seeds) {
    const scenario = seed === undefined ? base : { ...base, seed };
    console.log(
      `\n${scenario.name}, seed ${scenario.seed} (${scenario.arrivalsPerSec} calls/s arriving, ${scenario.serviceMs} ms of work each, timeout ${scenario.timeoutMs} ms)`,
    );
    console.log(
      [
        'gate',
        ...scenario.phases.map((_, i) => `phase ${i + 1}: goodput/s p50 p99 ms 429 timeouts`),
        'whole run goodput/s',
        'verdict',
      ].join(' | '),
    );
    const fixed = FIXED_LIMITS.map((limit) => runAdaptive(scenario, fixedGate(limit)));
    const row = (name: string, run: (typeof fixed)[number], verdict = '') =>
      console.log(
        [
          name,
          ...run.phases.map((p) => `${f(p.goodput)} ${f(p.p50)} ${f(p.p99)} ${p.tooMany} ${p.timeouts}`),
          f(run.goodput),
          verdict,
        ].join(' | '),
      );
    fixed.forEach((run) => row(run.gate, run));
    for (const options of algorithms) {
      const run = runAdaptive(scenario, adaptiveGate({ ...options, max: 1_000 }));
      const v = judge(scenario, run, fixed);
      const limits = run.trace.map(([, l]) => l);
      const isDefault = options.algorithm === DEFAULT_ADAPTIVE.algorithm ? ' (default)' : '';
      row(
        `${run.gate}${isDefault}`,
        run,
        `${v.passes ? 'passes' : 'fails'}: ${v.goodput.map((g) => `${(g * 100).toFixed(0)} %`).join(' ')} of the best fixed per phase, ${(v.whole * 100).toFixed(0)} % over the run, limit ${Math.min(...limits)}–${Math.max(...limits)}`,
      );
    }
  }
}

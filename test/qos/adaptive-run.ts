// `npm run qos -- --adaptive`: each adaptive-limit scenario with every fixed limit and every
// adaptive algorithm in front of the simulated backend; goodput and latency per phase.
import { runAdaptive } from './adaptive-backend.js';
import { ADAPTIVE_SCENARIOS, gates } from './adaptive-scenarios.js';

const f = (x: number) => (Number.isNaN(x) ? '-' : x.toFixed(0));
for (const scenario of ADAPTIVE_SCENARIOS) {
  console.log(`\n${scenario.name} (${scenario.arrivalsPerSec} calls/s arriving, ${scenario.serviceMs} ms of work each, timeout ${scenario.timeoutMs} ms)`);
  const head = ['gate', ...scenario.phases.map((p, i) => `phase ${i + 1}: goodput/s p50 p99 ms 429 timeouts`), 'whole run goodput/s'];
  console.log(head.join(' | '));
  for (const gate of gates()) {
    const run = runAdaptive(scenario, gate);
    const limits = run.trace.map(([, l]) => l);
    const phases = run.phases.map((p) => `${f(p.goodput)} ${f(p.p50)} ${f(p.p99)} ${p.tooMany} ${p.timeouts}`);
    console.log([gate.name, ...phases, f(run.goodput), gate.name.startsWith('adaptive') ? `limit ${Math.min(...limits)}–${Math.max(...limits)}` : ''].join(' | '));
  }
}

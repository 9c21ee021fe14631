// `npm run qos:knee`: every adaptive algorithm (and fixed limits) in front of the backend with a
// hard knee (knee-backend.ts), through the scenarios of knee-scenarios.ts: goodput, latency,
// refusals and the limit per stretch, and each scenario's verdict.
import { fixedGate } from './adaptive-backend.js';
import { adaptiveGate } from './adaptive-scenarios.js';
import { runKnee } from './knee-backend.js';
import { KNEE_ALGORITHMS, KNEE_SCENARIOS } from './knee-scenarios.js';
import { netflixVegasGate } from './netflix-vegas.js';

const f = (x: number, d = 0) => (Number.isNaN(x) ? '-' : x.toFixed(d));
const only = process.argv.indexOf('--scenario');
for (const scenario of KNEE_SCENARIOS.filter((s) => only < 0 || s.name.includes(process.argv[only + 1]!))) {
  console.log(`\n${scenario.name}`);
  const controlled = { mode: 'controlled' } as const;
  const gates = [
    ...(scenario.fixed ?? []).flatMap((limit) => [
      { ...fixedGate(limit), name: `fixed ${limit}, fail fast` },
      { ...fixedGate(limit), wait: true, name: `fixed ${limit}, fifo` },
      { ...fixedGate(limit), wait: true, waiting: controlled, name: `fixed ${limit}, controlled` },
    ]),
    ...KNEE_ALGORITHMS.map((a) => adaptiveGate({ ...a }, { wait: true, waiting: controlled })),
    ...KNEE_ALGORITHMS.map((a) => ({
      ...adaptiveGate({ ...a }, { wait: true }),
      name: `adaptive ${a.algorithm}, fifo`,
    })),
    ...KNEE_ALGORITHMS.map((a) => ({ ...adaptiveGate({ ...a }), name: `adaptive ${a.algorithm}, wait: false` })),
    netflixVegasGate(),
  ];
  for (const gate of gates) {
    const started = Date.now();
    const run = runKnee(scenario, gate);
    const stretches = scenario.report === 'buckets' ? run.buckets : run.phases;
    const verdict = scenario.judge?.(run);
    console.log(
      `  ${run.gate.padEnd(28)} ${stretches
        .map(
          (s) =>
            `[${s.fromMs / 1000}-${s.untilMs / 1000}s ${f(s.goodput)}/s mean ${f(s.meanMs, 1)} p99 ${f(s.p99, 1)} caller p50 ${f(s.callerP50)} p99 ${f(s.callerP99)} limit ${f(s.meanLimit, 1)} refused ${f((s.refused / Math.max(1, s.arrived)) * 100, 1)}% shed ${s.shed}]`,
        )
        .join(
          ' ',
        )} first second: refused ${f((run.firstSecond.refused / Math.max(1, run.firstSecond.arrived)) * 100, 1)}%${verdict === undefined ? '' : ` ${verdict.passes ? 'PASSES' : 'FAILS'}: ${verdict.why}`} (${Date.now() - started} ms)`,
    );
  }
}

/**
 * More chaos than `npm test` runs: `npm run chaos -- --seeds 5000` runs seeds 1..5000 (from
 * `--from N`), prints each failing seed with its violations, and exits 1 if any failed;
 * `npm run chaos -- --seed 1234` re-runs one seed and prints what it found; `--real` uses real
 * timers; `--groups` runs the pool groups' harness instead of the pool's; `--connectors` runs the
 * connector-level harness (pg, mysql2 and ioredis on the real servers, connector-chaos.ts).
 */
import { runChaos } from './chaos.js';
import { runConnectorChaos } from './connector-chaos.js';
import { runGroupChaos } from './group-chaos.js';

const args = process.argv.slice(2);
const flag = (name: string) => args.includes(`--${name}`);
const value = (name: string, fallback: number) => {
  const i = args.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const n = Number(args[i + 1]);
  if (!Number.isInteger(n) || n < 0) {
    console.error(`--${name} takes a whole number, got ${args[i + 1]}`);
    process.exit(2);
  }
  return n;
};

const real = flag('real');
const groups = flag('groups');
const connectors = flag('connectors');
const one = args.includes('--seed') ? value('seed', 0) : undefined;
const from = value('from', 1);
const seeds = one === undefined ? value('seeds', 1_000) : 1;
const started = Date.now();

/** One seed on each connector, as one result. */
async function connectorSeed(seed: number) {
  const results = [];
  for (const kind of ['pg', 'mysql2', 'ioredis'] as const) results.push(await runConnectorChaos(kind, seed));
  return {
    operations: results.reduce((n, r) => n + r.calls, 0),
    connections: 0,
    violations: results.flatMap((r) => r.violations.map((v) => `${r.kind}: ${v}`)),
  };
}
let failed = 0;
let operations = 0;
for (let seed = one ?? from; seed < (one ?? from) + seeds; seed++) {
  const result = connectors
    ? await connectorSeed(seed)
    : groups
      ? await runGroupChaos(seed).then((r) => ({ ...r, operations: r.calls }))
      : await runChaos(seed, { real });
  operations += result.operations;
  if (result.violations.length > 0) {
    failed++;
    console.log(`seed ${seed}: ${result.violations.length} violation(s)\n  ${result.violations.join('\n  ')}`);
  } else if (one !== undefined) {
    console.log(`seed ${seed}: no violation (${result.operations} operations, ${result.connections} connections)`);
  }
  if (one === undefined && seed % 500 === 0)
    console.log(`… ${seed - from + 1} seeds, ${failed} failing, ${Math.round((Date.now() - started) / 1000)} s`);
}
console.log(
  `${seeds} seed(s)${real ? ' on real time' : ''}, ${operations} operations, ${failed} failing, ${Math.round((Date.now() - started) / 1000)} s`,
);
process.exit(failed > 0 ? 1 : 0);

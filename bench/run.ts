/**
 * The benchmark, in parts by what they measure (bench/parts/). `npm run bench` runs the reference
 * parts (this pool beside generic-pool, tarn and pg.Pool, and the limiters), prints one table and
 * writes bench/results/results.json (ignored by git: a run is a reference, not history).
 * `-- --all` runs every part; `-- --<part>` runs one and only prints it; `-- --baseline DIR`
 * measures this build against another checkout's. Figures are noisy on shared machines: read ratios.
 *
 *   npm run bench [-- --all | --<part> | --baseline DIR]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import 'reflect-metadata';
import { baselineBench } from './parts/baseline.js';
import { dashboardBench, dashboardScale, groupScaleBench } from './parts/dashboard.js';
import { kneeBench } from './parts/knee.js';
import { kneeFleetBench } from './knee-fleet.js';
import { limitersBench } from './parts/limiters.js';
import { metricsBench, metricsFreshBench } from './parts/metrics.js';
import { decoratorBench, hookBench } from './parts/nest.js';
import { ormBench } from './parts/orms.js';
import { routeBench } from './parts/route.js';
import { deepQueue, exclusiveBench, peersBench } from './parts/peers.js';
import { mysqlBench } from './parts/mysql.js';
import { pgBench } from './parts/postgres.js';
import { redisBench } from './parts/redis.js';
import { adaptiveFreshBench, freshBench } from './parts/production.js';

type Rows = string[][];
type Part = (results: Record<string, unknown>, rows: Rows, fmt: (n: number) => string) => Promise<void>;

/** Parts run one after the other, as one. */
function inTurn(...parts: Part[]): Part {
  return async (results, rows, fmt) => {
    for (const part of parts) await part(results, rows, fmt);
  };
}

/** Every part, by its flag: whether `npm run bench` runs it, what it measures, and how. */
const PARTS: Record<string, { reference: boolean; what: string; run: Part }> = {
  peers: {
    reference: true,
    what: 'warm cycles (1 and 100 callers), shared connections, deep queues, cold bursts and memory beside generic-pool and tarn',
    run: peersBench,
  },
  pg: { reference: true, what: 'PostgreSQL through the pool beside pg.Pool, in fresh processes', run: pgBench },
  orms: {
    reference: true,
    what: "Kysely, Drizzle, TypeORM, Prisma and MikroORM transactions on the pool's pg.Pool face beside their own pools, in fresh processes",
    run: ormBench,
  },
  route: {
    reference: true,
    what: 'a NestJS route doing one query over HTTP, through @UsePooled beside pg.Pool, in fresh processes',
    run: routeBench,
  },
  mysql: {
    reference: true,
    what: "MariaDB through mysql2Connector, its default reset against none, beside mysql2's own pool, in fresh processes",
    run: mysqlBench,
  },
  redis: {
    reference: true,
    what: 'Redis GET/SET through sharedRedisConnector beside one auto-pipelined ioredis client, in fresh processes',
    run: redisBench,
  },
  limiters: {
    reference: true,
    what: 'LocalLimiter and RedisLimiter: rates, round trips, Redis CPU, heartbeats',
    run: limitersBench,
  },
  exclusive: { reference: false, what: 'the warm cycles alone (the first rows of peers)', run: exclusiveBench },
  deep: { reference: false, what: 'the deep queue alone', run: deepQueue },
  fresh: {
    reference: false,
    what: 'the pool against bare semaphores in fresh processes (the internal targets)',
    run: freshBench,
  },
  adaptive: {
    reference: false,
    what: 'an AdaptiveLimiter against a LocalLimiter in fresh processes',
    run: adaptiveFreshBench,
  },
  metrics: {
    reference: false,
    what: 'OpenTelemetry metrics against none, in one process and in fresh ones',
    run: inTurn(metricsBench, metricsFreshBench),
  },
  nest: {
    reference: false,
    what: "@UsePooled against pool.use(), and the promise hook's cost",
    run: inTurn(decoratorBench, hookBench),
  },
  knee: {
    reference: false,
    what: 'every adaptive algorithm on the knee simulation’s scenarios, on real timers (about 9 minutes)',
    run: kneeBench,
  },
  'knee-fleet': {
    reference: false,
    what: 'the default adaptive limit shared by 3 processes through Redis, callers arriving at twice the capacity and at half of it, on real timers (about 1 minute)',
    run: kneeFleetBench,
  },
  groups: {
    reference: false,
    what: "a pool group's release as its members grow",
    run: groupScaleBench,
  },
  dashboard: {
    reference: false,
    what: 'the sample app with and without dashboard pages open',
    run: dashboardBench,
  },
  'dashboard-scale': {
    reference: false,
    what: 'the dashboard with 500 streams on a 10,000-member group',
    run: dashboardScale,
  },
};

async function main(args: string[]): Promise<void> {
  if (!(globalThis as { gc?: unknown }).gc) throw new Error('run with node --expose-gc (npm run bench does)');
  const baseline = args.indexOf('--baseline');
  if (baseline !== -1) {
    for (const r of await baselineBench(args[baseline + 1] ?? '')) console.log(r.join(' | '));
    return;
  }
  const asked = args.filter((a) => a.startsWith('--') && a !== '--all').map((a) => a.slice(2));
  const unknown = asked.filter((name) => !(name in PARTS));
  if (unknown.length > 0) {
    const list = Object.entries(PARTS).map(([name, p]) => `  --${name}: ${p.what}`);
    throw new Error(`unknown part ${unknown.map((u) => `--${u}`).join(', ')}; the parts are:\n${list.join('\n')}`);
  }
  const names =
    asked.length > 0 ? asked : Object.keys(PARTS).filter((name) => args.includes('--all') || PARTS[name]!.reference);
  const results: Record<string, unknown> = {
    date: new Date().toISOString(),
    node: process.version,
    cpu: `${cpus().length} × ${cpus()[0]?.model ?? 'unknown'}`,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    parts: names,
  };
  const rows: Rows = [];
  const fmt = (n: number) => (n >= 1e6 ? `${(n / 1e6).toFixed(2)} M/s` : `${(n / 1e3).toFixed(0)} k/s`);
  for (const name of names) await PARTS[name]!.run(results, rows, fmt);

  const widths = [0, 1, 2, 3].map((i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  for (const r of rows) console.log(r.map((c, i) => c.padEnd(widths[i]!)).join(' | '));
  if (asked.length > 0) return;
  const out = fileURLToPath(new URL('../../bench/results/results.json', import.meta.url));
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify(results, null, 2) + '\n');
  console.log(`\nwrote ${out}`);
}

main(process.argv.slice(2)).catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});

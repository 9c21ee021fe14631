import { bestOf, cpuCell, describe, pairedRatio } from '../paired.js';
import { alternatingRedisCycles, type RedisVariant } from '../redis-cycles.js';

const REDIS_SETS = 12;
const REDIS_ROUNDS = 10;

/**
 * Redis GET and SET, 100 callers, through `sharedRedisConnector` (one client, its gate on) beside
 * one auto-pipelined ioredis client, fresh processes in turn, paired round by round.
 */
export async function redisBench(
  results: Record<string, unknown>,
  rows: string[][],
  fmt: (n: number) => string,
): Promise<void> {
  const variants: RedisVariant[] = [
    'ioredis',
    'sharedRedisConnector, use()',
    "sharedRedisConnector, use() with propagation: 'none'",
    'sharedRedisConnector, a lease by hand',
    'use() lending the client itself',
    'use() on a plain client',
  ];
  const callers = 100;
  const cpu: Record<RedisVariant, number>[][] = [];
  const rounds = await alternatingRedisCycles(variants, callers, REDIS_SETS, REDIS_ROUNDS, (set) => cpu.push(set));
  const best = bestOf(rounds);
  const use = pairedRatio(rounds, (r) => r['sharedRedisConnector, use()'] / r.ioredis);
  const unscoped = pairedRatio(rounds, (r) => r["sharedRedisConnector, use() with propagation: 'none'"] / r.ioredis);
  const byHand = pairedRatio(rounds, (r) => r['sharedRedisConnector, a lease by hand'] / r.ioredis);
  const handle = pairedRatio(rounds, (r) => r['sharedRedisConnector, use()'] / r['use() lending the client itself']);
  const gate = pairedRatio(rounds, (r) => r['use() lending the client itself'] / r['use() on a plain client']);
  results.redis = { node: process.version, best, use, unscoped, byHand, handle, gate, cpu, rounds };
  const shape = `Redis GET/SET, one client, ${callers} callers, fresh processes (${process.version})`;
  rows.push([
    shape,
    `sharedRedisConnector use() / one auto-pipelined ioredis client, round by round (best: ${fmt(best['sharedRedisConnector, use()'])} / ${fmt(best.ioredis)})`,
    describe(use, 0.9),
    'target ≥ 0.90×',
  ]);
  rows.push([
    shape,
    "sharedRedisConnector use() with propagation: 'none' / ioredis",
    describe(unscoped, 0.9),
    'no AsyncLocalStorage scope',
  ]);
  rows.push([shape, 'sharedRedisConnector, a lease by hand / ioredis', describe(byHand), 'no scope']);
  rows.push([
    shape,
    'sharedRedisConnector use() / the same lending the client itself (lendsHandles: false)',
    describe(handle),
    'what a handle per lease costs',
  ]);
  rows.push([
    shape,
    'use() lending the client itself / use() on a client with no gate',
    describe(gate),
    'what the command gate costs',
  ]);
  rows.push([
    shape,
    `the client's own CPU per call (median of rounds): ${variants.join(' / ')}`,
    cpuCell(cpu, variants),
    'process.cpuUsage() over each round',
  ]);
}

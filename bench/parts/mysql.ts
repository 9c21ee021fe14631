import { alternatingMysqlCycles, type MysqlVariant } from '../mysql-cycles.js';
import { bestOf, cpuCell, describe, pairedRatio } from '../paired.js';

const MYSQL_SETS = 12;
const MYSQL_ROUNDS = 10;

/**
 * MariaDB `SELECT 1`, 50 callers, max 10: `mysql2Connector`'s default reset (reading the wire on
 * every reply) against the same connector with no reset, and mysql2's own pool, paired.
 */
export async function mysqlBench(
  results: Record<string, unknown>,
  rows: string[][],
  fmt: (n: number) => string,
): Promise<void> {
  const variants: MysqlVariant[] = ['use(), default reset', 'use(), no reset', 'mysql2 pool'];
  const callers = 50;
  const cpu: Record<MysqlVariant, number>[][] = [];
  const rounds = await alternatingMysqlCycles(variants, callers, MYSQL_SETS, MYSQL_ROUNDS, (set) => cpu.push(set));
  const best = bestOf(rounds);
  const reset = pairedRatio(rounds, (r) => r['use(), default reset'] / r['use(), no reset']);
  const own = pairedRatio(rounds, (r) => r['use(), default reset'] / r['mysql2 pool']);
  results.mysql = { best, reset, own, cpu, rounds };
  const shape = `MariaDB SELECT 1, max 10, ${callers} callers, fresh processes`;
  rows.push([
    shape,
    `use() with the default reset / with none, round by round (best: ${fmt(best['use(), default reset'])} / ${fmt(best['use(), no reset'])})`,
    describe(reset, 0.97),
    'target ≥ 0.97×: reading the wire costs no round trip',
  ]);
  rows.push([shape, "use() with the default reset / mysql2's own pool", describe(own), '']);
  rows.push([
    shape,
    `the client's own CPU per query (median of rounds): ${variants.join(' / ')}`,
    cpuCell(cpu, variants),
    'process.cpuUsage() over each round',
  ]);
}

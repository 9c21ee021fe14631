import { alternatingPgCycles, type PgVariant } from '../pg-cycles.js';
import { bestOf, cpuCell, describe, pairedRatio } from '../paired.js';

/**
 * The PostgreSQL rows' sets of processes: the server shares the two cores, and a set's ratio of
 * rates moved by 0.07-0.16 (standard deviation over the eight sets of the 11:08 run). With sixteen
 * the sign test's range is the fifth sample to the twelfth, at 92 %, instead of the second to the
 * seventh of eight.
 */
export const PG_SETS = 16;
/**
 * The PostgreSQL rows' rounds per set: twelve of 5,000 queries (pg-cycles.ts), in place of three
 * of 20,000: the same queries, four times the pairs.
 */
export const PG_ROUNDS = 12;

/**
 * PostgreSQL `SELECT 1` through this pool and through pg.Pool (max 10 each), 50 and 200 callers,
 * each variant in a process of its own, the variants taking rounds in turn. The server shares the
 * machine's two cores and a process's rate moves by up to 50 % from one to the next, so the ratios
 * are taken round by round (see paired.ts) and a target is called met or missed only when the
 * range says so.
 */
export async function pgBench(
  results: Record<string, unknown>,
  rows: string[][],
  fmt: (n: number) => string,
): Promise<void> {
  const variants: PgVariant[] = ['use()', 'acquire', 'pg.Pool', 'pg.Pool, a scope per query', 'use(), reset on return'];
  const pgResults: Record<string, unknown> = {};
  for (const callers of [50, 200]) {
    const cpu: Record<PgVariant, number>[][] = [];
    const rounds = await alternatingPgCycles(variants, callers, PG_SETS, PG_ROUNDS, (set) => cpu.push(set));
    const best = bestOf(rounds);
    // Queries per second of the client's own CPU, paired round by round as the rates: the server's time, and the waits for it on these two shared cores, left out.
    const cpuUse = pairedRatio(cpu, (r) => r['pg.Pool'] / r['use()']);
    const cpuByHand = pairedRatio(cpu, (r) => r['pg.Pool'] / r.acquire);
    const cpuScoped = pairedRatio(cpu, (r) => r['pg.Pool'] / r['pg.Pool, a scope per query']);
    const cpuEqual = pairedRatio(cpu, (r) => r['pg.Pool, a scope per query'] / r['use()']);
    const use = pairedRatio(rounds, (r) => r['use()'] / r['pg.Pool']);
    const byHand = pairedRatio(rounds, (r) => r.acquire / r['pg.Pool']);
    const scoped = pairedRatio(rounds, (r) => r['pg.Pool, a scope per query'] / r['pg.Pool']);
    const equal = pairedRatio(rounds, (r) => r['use()'] / r['pg.Pool, a scope per query']);
    const reset = pairedRatio(rounds, (r) => r['use(), reset on return'] / r['use()']);
    const scopeInUse = pairedRatio(rounds, (r) => r['use()'] / r.acquire);
    pgResults[`c${callers}`] = {
      ...best,
      use,
      byHand,
      scoped,
      equal,
      reset,
      scopeInUse,
      cpu: { use: cpuUse, byHand: cpuByHand, scoped: cpuScoped, equal: cpuEqual, rounds: cpu },
      rounds,
    };
    const shape = `PostgreSQL SELECT 1, max 10, ${callers} callers, fresh processes`;
    rows.push([
      shape,
      'pool.use() / a lease by hand / pg.Pool query() (best of each)',
      `${fmt(best['use()'])} / ${fmt(best.acquire)} / ${fmt(best['pg.Pool'])}`,
      '',
    ]);
    rows.push([shape, 'pool.use() / pg.Pool, round by round', describe(use, 1), 'target ≥ 1.00×']);
    rows.push([shape, 'a lease by hand / pg.Pool', describe(byHand, 1), 'no scope']);
    rows.push([shape, 'pool.use() / a lease by hand', describe(scopeInUse), "what use()'s scope costs it"]);
    rows.push([
      shape,
      'control: pg.Pool with each query in an AsyncLocalStorage scope / pg.Pool',
      describe(scoped),
      'what a scope per call (as use() opens) costs any pool on Node 20',
    ]);
    rows.push([
      shape,
      'pool.use() / pg.Pool with a scope per query',
      describe(equal, 1),
      'the pools compared on equal terms: each call in a scope',
    ]);
    rows.push([
      shape,
      'pool.use() on the pg connector, reset on return / pool.use() without a reset',
      describe(reset, 0.97),
      'target ≥ 0.97×: the reset of a clean client costs no round trip',
    ]);
    rows.push([
      shape,
      "the client's own CPU per query (median of rounds): pool.use() / a lease by hand / pg.Pool / pg.Pool with a scope per query / pool.use() with reset on return",
      cpuCell(cpu, variants),
      'process.cpuUsage() over each round: the server and the waits for the cores left out',
    ]);
    rows.push([
      shape,
      'queries per client CPU second, pool.use() / pg.Pool, round by round',
      describe(cpuUse, 1),
      'target ≥ 1.00×, on the client side alone',
    ]);
    rows.push([shape, 'queries per client CPU second, a lease by hand / pg.Pool', describe(cpuByHand, 1), 'no scope']);
    rows.push([
      shape,
      'control: queries per client CPU second, pg.Pool with a scope per query / pg.Pool',
      describe(cpuScoped),
      'what a scope per call costs any pool on Node 20',
    ]);
    rows.push([
      shape,
      'queries per client CPU second, pool.use() / pg.Pool with a scope per query',
      describe(cpuEqual, 1),
      'on equal terms',
    ]);
  }
  results.postgres = pgResults;
}

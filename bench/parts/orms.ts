import { alternatingOrmCycles } from '../orm-cycles.js';
import { bestOf, describe, pairedRatio } from '../paired.js';
import { PG_ROUNDS, PG_SETS } from './postgres.js';

/**
 * Kysely and Drizzle transactions (BEGIN, two statements, COMMIT) on their own pg.Pool and on the
 * pool's pg.Pool face, 50 callers, max 10 connections, fresh processes in turn.
 */
export async function ormBench(
  results: Record<string, unknown>,
  rows: string[][],
  fmt: (n: number) => string,
): Promise<void> {
  const callers = 50;
  const rounds = await alternatingOrmCycles(callers, PG_SETS, PG_ROUNDS);
  const best = bestOf(rounds);
  const kysely = pairedRatio(rounds, (r) => r['Kysely, the face'] / r['Kysely, pg.Pool']);
  const drizzle = pairedRatio(rounds, (r) => r['Drizzle, the face'] / r['Drizzle, pg.Pool']);
  results.orms = { best, kysely, drizzle, rounds };
  const shape = `ORM transactions on PostgreSQL, max 10, ${callers} callers, fresh processes`;
  rows.push([
    shape,
    'Kysely on pg.Pool / on the face; Drizzle on pg.Pool / on the face (best of each, transactions)',
    `${fmt(best['Kysely, pg.Pool'])} / ${fmt(best['Kysely, the face'])}; ${fmt(best['Drizzle, pg.Pool'])} / ${fmt(best['Drizzle, the face'])}`,
    '',
  ]);
  rows.push([shape, 'Kysely: the face / its own pg.Pool, round by round', describe(kysely, 0.98), 'target ≥ 0.98×']);
  rows.push([shape, 'Drizzle: the face / its own pg.Pool, round by round', describe(drizzle, 0.98), 'target ≥ 0.98×']);
}

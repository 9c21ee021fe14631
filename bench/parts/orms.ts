import { alternatingOrmCycles, ORMS } from '../orm-cycles.js';
import { bestOf, describe, pairedRatio } from '../paired.js';

/**
 * Kysely, Drizzle, TypeORM, Prisma and MikroORM transactions (BEGIN, two statements, COMMIT) on
 * their own pools and on the pool's pg.Pool face, 50 callers, max 10 connections, fresh processes
 * in turn.
 */
/** Ten variants, each a process that boots an ORM: fewer sets than the bare PostgreSQL part, in the same time. */
const ORM_SETS = 4;
const ORM_ROUNDS = 6;

export async function ormBench(
  results: Record<string, unknown>,
  rows: string[][],
  fmt: (n: number) => string,
): Promise<void> {
  const callers = 50;
  const rounds = await alternatingOrmCycles(callers, ORM_SETS, ORM_ROUNDS);
  const best = bestOf(rounds);
  const shape = `ORM transactions on PostgreSQL, max 10, ${callers} callers, fresh processes`;
  const ratios: Record<string, unknown> = {};
  for (const orm of ORMS) {
    const ratio = pairedRatio(rounds, (r) => r[`${orm}, the face`] / r[`${orm}, its own pool`]);
    ratios[orm] = ratio;
    rows.push([
      shape,
      `${orm}: the face / its own pool, round by round (best: ${fmt(best[`${orm}, the face`])} / ${fmt(best[`${orm}, its own pool`])})`,
      describe(ratio, 0.98),
      'target ≥ 0.98×',
    ]);
  }
  results.orms = { best, ratios, rounds };
}

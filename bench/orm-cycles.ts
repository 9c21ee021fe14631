/**
 * Kysely and Drizzle transactions on their own `pg.Pool` against the same on this pool's
 * `pg.Pool` face, each variant in a process of its own, taken in turn (as pg-cycles.ts does for
 * bare queries): what an ORM gives up, or gains, by running on the pool.
 *
 * Run by `npm run bench`; `node dist-bench/bench/orm-cycles.js <variant> <callers>` serves rounds.
 */
import { drizzle } from 'drizzle-orm/node-postgres';
import { sql as dsql } from 'drizzle-orm';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { ConnectionPool } from '../lib/core/index.js';
import { asPgPool, pgConnector } from '../lib/connectors/pg/index.js';
import { alternating, callRound, serveWhenRun, type Rounds } from './fresh-process.js';
import { PG_URL } from './pg-cycles.js';

/** An ORM, on its own pg.Pool or on the face of this pool (max 10 connections each). */
export type OrmVariant = 'Kysely, pg.Pool' | 'Kysely, the face' | 'Drizzle, pg.Pool' | 'Drizzle, the face';
export const ORM_VARIANTS: readonly OrmVariant[] = [
  'Kysely, pg.Pool',
  'Kysely, the face',
  'Drizzle, pg.Pool',
  'Drizzle, the face',
];

const MAX = 10;
const ROUND_TRANSACTIONS = 1_000;

/** A `pg.Pool`: pg's own, or the face of a ConnectionPool with the pg connector (reset on return). */
async function poolOf(face: boolean): Promise<pg.Pool> {
  if (!face) return new pg.Pool({ connectionString: PG_URL, max: MAX });
  const logger = { warn: () => {}, error: (message: string) => console.error(message) };
  const pool = new ConnectionPool(pgConnector(PG_URL), {
    name: 'orm',
    maxSize: MAX,
    minSize: MAX,
    metrics: false,
    logger,
  });
  await pool.warmup();
  return asPgPool(pool);
}

/** One small transaction: a read and a write of a temporary row, then COMMIT. */
async function transactionOf(
  variant: OrmVariant,
): Promise<{ run: () => Promise<unknown>; close: () => Promise<void> }> {
  const pool = await poolOf(variant.endsWith('the face'));
  if (variant.startsWith('Kysely')) {
    const db = new Kysely<Record<string, never>>({ dialect: new PostgresDialect({ pool }) });
    return {
      run: () =>
        db.transaction().execute(async (trx) => {
          await sql`SELECT 1`.execute(trx);
          await sql`SELECT set_config('app.round', '1', true)`.execute(trx);
        }),
      close: () => db.destroy(),
    };
  }
  const db = drizzle({ client: pool });
  return {
    run: () =>
      db.transaction(async (tx) => {
        await tx.execute(dsql`SELECT 1`);
        await tx.execute(dsql`SELECT set_config('app.round', '1', true)`);
      }),
    close: () => pool.end(),
  };
}

async function setUp(variant: OrmVariant, callers: number): Promise<Rounds> {
  const { run, close } = await transactionOf(variant);
  const round = callRound(callers, run);
  return { round: () => round(ROUND_TRANSACTIONS), close, warmRounds: 10 };
}

/** `sets` sets of live processes, one per variant, `rounds` rounds each, the variants in turn. */
export function alternatingOrmCycles(
  callers: number,
  sets: number,
  rounds: number,
): Promise<Record<OrmVariant, number>[][]> {
  return alternating(import.meta.url, ORM_VARIANTS, (variant) => [variant, String(callers)], sets, rounds);
}

serveWhenRun(import.meta.url, ([variant, callers]) => setUp(variant as OrmVariant, Number(callers)));

/**
 * Kysely, Drizzle, TypeORM, Prisma and MikroORM transactions on their own pools against the same
 * on this pool's `pg.Pool` face (TypeORM through `typeormDriver()`), each variant in a process of its own, taken in turn (as pg-cycles.ts does for
 * bare queries): what an ORM gives up, or gains, by running on the pool.
 *
 * Run by `npm run bench`; `node dist-bench/bench/orm-cycles.js <variant> <callers>` serves rounds.
 */
import { EntitySchema, MikroORM } from '@mikro-orm/postgresql';
import { PrismaPg } from '@prisma/adapter-pg';
import { drizzle } from 'drizzle-orm/node-postgres';
import { sql as dsql } from 'drizzle-orm';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import Cursor from 'pg-cursor';
import { DataSource } from 'typeorm';
import { ConnectionPool } from '../lib/core/index.js';
import { asPgPool, pgConnector, typeormDriver } from '../lib/connectors/pg/index.js';
import { PrismaClient } from '../test/orms/prisma/client/client.js';
import { alternating, callRound, serveWhenRun, type Rounds } from './fresh-process.js';
import { PG_URL } from './pg-cycles.js';

/** An ORM, on its own pool or on the face of this pool (max 10 connections each). */
export type OrmVariant = `${Orm}, ${'its own pool' | 'the face'}`;
type Orm = 'Kysely' | 'Drizzle' | 'TypeORM' | 'Prisma' | 'MikroORM';
export const ORMS: readonly Orm[] = ['Kysely', 'Drizzle', 'TypeORM', 'Prisma', 'MikroORM'];
export const ORM_VARIANTS: readonly OrmVariant[] = ORMS.flatMap((orm) => [
  `${orm}, its own pool` as const,
  `${orm}, the face` as const,
]);

const MAX = 10;
const ROUND_TRANSACTIONS = 1_000;

/** This pool with the pg connector (reset on return), warmed. */
async function ourPool(): Promise<ConnectionPool<pg.Client>> {
  const logger = { warn: () => {}, error: (message: string) => console.error(message) };
  const pool = new ConnectionPool(pgConnector(PG_URL), {
    name: 'orm',
    maxSize: MAX,
    minSize: MAX,
    metrics: false,
    logger,
  });
  await pool.warmup();
  return pool;
}

/** A `pg.Pool`: pg's own, or the face of this pool. */
async function pgPoolOf(face: boolean): Promise<pg.Pool> {
  return face ? asPgPool(await ourPool()) : new pg.Pool({ connectionString: PG_URL, max: MAX });
}

const Nothing = new EntitySchema<{ id: number }>({
  name: 'Nothing',
  tableName: 'nsp_bench_nothing',
  properties: { id: { type: 'integer', primary: true } },
});

/** One small transaction: a read and a write of a session setting, then COMMIT, in the ORM's own transaction API. */
async function transactionOf(
  variant: OrmVariant,
): Promise<{ run: () => Promise<unknown>; close: () => Promise<void> }> {
  const face = variant.endsWith('the face');
  const orm = variant.slice(0, variant.indexOf(',')) as Orm;
  const read = 'SELECT 1';
  const write = "SELECT set_config('app.round', '1', true)";
  switch (orm) {
    case 'Kysely': {
      const db = new Kysely<Record<string, never>>({ dialect: new PostgresDialect({ pool: await pgPoolOf(face) }) });
      return {
        run: () =>
          db.transaction().execute(async (trx) => {
            await sql.raw(read).execute(trx);
            await sql.raw(write).execute(trx);
          }),
        close: () => db.destroy(),
      };
    }
    case 'Drizzle': {
      const pool = await pgPoolOf(face);
      const db = drizzle({ client: pool });
      return {
        run: () =>
          db.transaction(async (tx) => {
            await tx.execute(dsql.raw(read));
            await tx.execute(dsql.raw(write));
          }),
        close: () => pool.end(),
      };
    }
    case 'TypeORM': {
      const pool = face ? await ourPool() : undefined;
      const source = new DataSource(
        pool === undefined
          ? { type: 'postgres', url: PG_URL, poolSize: MAX }
          : { type: 'postgres', driver: typeormDriver(pool) },
      );
      await source.initialize();
      return {
        run: () =>
          source.transaction(async (em) => {
            await em.query(read);
            await em.query(write);
          }),
        close: async () => {
          await source.destroy();
          await pool?.close();
        },
      };
    }
    case 'Prisma': {
      const pool = face ? await ourPool() : undefined;
      const adapter =
        pool === undefined
          ? new PrismaPg({ connectionString: PG_URL, max: MAX })
          : new PrismaPg(asPgPool(pool, { closeOnEnd: false }));
      const prisma = new PrismaClient({ adapter, transactionOptions: { maxWait: 60_000, timeout: 60_000 } });
      return {
        run: () =>
          prisma.$transaction(async (tx) => {
            await tx.$queryRawUnsafe(read);
            await tx.$queryRawUnsafe(write);
          }),
        close: async () => {
          await prisma.$disconnect();
          await pool?.close();
        },
      };
    }
    case 'MikroORM': {
      const pool = face ? await ourPool() : undefined;
      const mikro = await MikroORM.init({
        entities: [Nothing],
        ...(pool === undefined
          ? { clientUrl: PG_URL, pool: { max: MAX } }
          : {
              dbName: 'test',
              driverOptions: new PostgresDialect({ pool: asPgPool(pool, { closeOnEnd: false }), cursor: Cursor }),
            }),
      });
      return {
        run: () =>
          mikro.em.fork().transactional(async (em) => {
            await em.execute(read);
            await em.execute(write);
          }),
        close: async () => {
          await mikro.close();
          await pool?.close();
        },
      };
    }
  }
}

async function setUp(variant: OrmVariant, callers: number): Promise<Rounds> {
  const { run, close } = await transactionOf(variant);
  const round = callRound(callers, run);
  return { round: () => round(ROUND_TRANSACTIONS), close, warmRounds: 5 };
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

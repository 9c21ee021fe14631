// The pg.Pool face: Kysely and Drizzle run transaction-heavy work on a ConnectionPool of pg clients
// against the real PostgreSQL, with a deadline, a limit and metrics on; inside a @UsePooled scope
// they share the scope's connection; connections come back clean through the face too.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { eq, sql as dsql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import { integer, pgTable } from 'drizzle-orm/pg-core';
import { Kysely, PostgresDialect, sql, type Generated } from 'kysely';
import pg from 'pg';
import {
  ConnectionPool,
  InjectPool,
  LocalLimiter,
  PoolConfigError,
  PoolModule,
  UsePooled,
  type PoolLogger,
} from '../../lib/index.js';
import { asPgPool, pgConnector, type PgConnectorOptions } from '../../lib/connectors/pg/index.js';
import { boot } from '../support/nest.js';
import { DATABASE_URL as URL, PgLedger } from '../support/pg-ledger.js';
import { until } from '../support/wait.js';
import { TestReader } from '../support/test-reader.js';

const ACCOUNTS = 'nsp_adapter_accounts';
const NOTES = 'nsp_adapter_notes';
const START = 1_000;
const COUNT = 50;
const ledger = new PgLedger(ACCOUNTS, NOTES, COUNT, START);
const quiet: PoolLogger = { warn: () => {}, error: () => {} };

beforeAll(() => ledger.open());
afterAll(() => ledger.close());

/** A pool as production runs it: a deadline on every acquire, a limit in front, metrics through an SDK. */
function productionPool(connector: PgConnectorOptions = {}) {
  const reader = new TestReader();
  const provider = new MeterProvider({ readers: [reader] });
  const limiter = new LocalLimiter({ global: 40, wait: true });
  const pool = new ConnectionPool(pgConnector(URL, connector), {
    name: 'orm',
    maxSize: 8,
    acquireTimeoutMs: 30_000,
    limiter,
    metrics: provider.getMeter('orm'),
    logger: quiet,
  });
  const metricNames = async () =>
    (await reader.collect()).resourceMetrics.scopeMetrics.flatMap((s) => s.metrics.map((m) => m.descriptor.name));
  return { pool, limiter, metricNames };
}

interface Db {
  [ACCOUNTS]: { id: number; balance: number };
  [NOTES]: { id: Generated<number>; who: string };
}

describe('asPgPool: Kysely', () => {
  it('a few thousand concurrent transfers keep the sum, with a deadline, a limit and metrics on', async () => {
    await ledger.freshAccounts();
    const { pool, limiter, metricNames } = productionPool();
    const db = new Kysely<Db>({ dialect: new PostgresDialect({ pool: asPgPool(pool) }) });
    const outcomes = await Promise.allSettled(
      ledger.transfers(2_500).map(({ from, to, amount, fails }) =>
        db.transaction().execute(async (trx) => {
          const ids = [from, to].sort((a, b) => a - b);
          const rows = await trx
            .selectFrom(ACCOUNTS)
            .select(['id', 'balance'])
            .where('id', 'in', ids)
            .orderBy('id')
            .forUpdate()
            .execute();
          const source = rows.find((r) => r.id === from)!;
          if (source.balance < amount) return 'short';
          await trx
            .updateTable(ACCOUNTS)
            .set({ balance: sql`balance - ${amount}` })
            .where('id', '=', from)
            .execute();
          if (fails) throw new Error('the transfer failed half-way');
          await trx
            .updateTable(ACCOUNTS)
            .set({ balance: sql`balance + ${amount}` })
            .where('id', '=', to)
            .execute();
          return 'moved';
        }),
      ),
    );
    const failed = outcomes.filter((o) => o.status === 'rejected');
    expect(failed.every((o) => (o as PromiseRejectedResult).reason.message === 'the transfer failed half-way')).toBe(
      true,
    );
    expect(failed.length).toBe(Math.ceil((2_500 - 4) / 9));
    expect(await ledger.total()).toBe(START * COUNT);
    expect(pool.stats()).toMatchObject({ clients: 0, waiting: 0, counters: { resetFailures: 0, timeouts: 0 } });
    expect(limiter.stats()).toMatchObject({ held: 0, waiting: 0 });
    expect(await metricNames()).toEqual(
      expect.arrayContaining([
        'db.client.connection.count',
        'db.client.connection.wait_time',
        'db.client.connection.use_time',
      ]),
    );
    await db.destroy(); // end() closes the pool
    expect(pool.closed).toBe(true);
  }, 60_000);

  it('a transaction Kysely leaves open on a connection is rolled back before the next caller', async () => {
    const pool = new ConnectionPool(pgConnector(URL), { name: 'kysely-open', maxSize: 1, logger: quiet });
    const db = new Kysely<Db>({ dialect: new PostgresDialect({ pool: asPgPool(pool) }) });
    await expect(
      db.connection().execute(async (conn) => {
        await sql`BEGIN`.execute(conn);
        await conn.insertInto(NOTES).values({ who: 'kysely-lost' }).execute();
        throw new Error('a bug before COMMIT');
      }),
    ).rejects.toThrow('a bug before COMMIT');
    await db.insertInto(NOTES).values({ who: 'kysely-next' }).execute();
    expect(await ledger.rowsOf('kysely-next')).toBe(1);
    expect(await ledger.rowsOf('kysely-lost')).toBe(0);
    await db.destroy();
  });
});

describe('asPgPool: Drizzle', () => {
  const accounts = pgTable(ACCOUNTS, { id: integer('id').primaryKey(), balance: integer('balance').notNull() });

  it('a few thousand concurrent transfers keep the sum, with a deadline, a limit and metrics on', async () => {
    await ledger.freshAccounts();
    const { pool, limiter, metricNames } = productionPool();
    const db = drizzle({ client: asPgPool(pool) });
    const outcomes = await Promise.allSettled(
      ledger.transfers(2_500).map(({ from, to, amount, fails }) =>
        db.transaction(async (tx) => {
          const ids = [from, to].sort((a, b) => a - b);
          const rows = await tx.execute<{ id: number; balance: number }>(
            dsql`SELECT id, balance FROM ${accounts} WHERE id IN (${ids[0]}, ${ids[1]}) ORDER BY id FOR UPDATE`,
          );
          const source = rows.rows.find((r) => r.id === from)!;
          if (source.balance < amount) return 'short';
          await tx
            .update(accounts)
            .set({ balance: dsql`${accounts.balance} - ${amount}` })
            .where(eq(accounts.id, from));
          if (fails) throw new Error('the transfer failed half-way');
          await tx
            .update(accounts)
            .set({ balance: dsql`${accounts.balance} + ${amount}` })
            .where(eq(accounts.id, to));
          return 'moved';
        }),
      ),
    );
    const failed = outcomes.filter((o) => o.status === 'rejected');
    expect(failed.every((o) => (o as PromiseRejectedResult).reason.message === 'the transfer failed half-way')).toBe(
      true,
    );
    expect(failed.length).toBe(Math.ceil((2_500 - 4) / 9));
    expect(await ledger.total()).toBe(START * COUNT);
    // Outside a transaction, a plain query runs on a connection of its own.
    expect((await db.select().from(accounts).where(eq(accounts.id, 1))).length).toBe(1);
    expect(pool.stats()).toMatchObject({ clients: 0, waiting: 0, counters: { resetFailures: 0, timeouts: 0 } });
    expect(limiter.stats()).toMatchObject({ held: 0, waiting: 0 });
    expect(await metricNames()).toEqual(
      expect.arrayContaining([
        'db.client.connection.count',
        'db.client.connection.wait_time',
        'db.client.connection.use_time',
      ]),
    );
    await db.$client.end();
    expect(pool.closed).toBe(true);
  }, 60_000);
});

describe('asPgPool: scopes and sessions', () => {
  @Injectable()
  class Ledger {
    readonly kysely: Kysely<Db>;
    readonly drizzle: ReturnType<typeof drizzle>;
    constructor(@InjectPool('db') readonly db: ConnectionPool<pg.Client>) {
      const face = asPgPool(db, { closeOnEnd: false });
      this.kysely = new Kysely<Db>({ dialect: new PostgresDialect({ pool: face }) });
      this.drizzle = drizzle({ client: face });
    }

    /** Kysely, Drizzle and the pool's own connection in one transaction, which a bug rolls back. */
    @UsePooled('db')
    async threeWritesThenBug(tag: string): Promise<number[]> {
      await this.db.current.query('BEGIN');
      const pids = [
        (await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(this.kysely)).rows[0]!.pid,
        (await this.drizzle.execute<{ pid: number }>(dsql`SELECT pg_backend_pid() AS pid`)).rows[0]!.pid,
        (await this.db.current.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid,
      ];
      await this.kysely
        .insertInto(NOTES)
        .values({ who: `${tag}-kysely` })
        .execute();
      await this.drizzle.execute(dsql.raw(`INSERT INTO ${NOTES} (who) VALUES ('${tag}-drizzle')`));
      expect(this.db.current.getTransactionStatus()).toBe('T');
      throw Object.assign(new Error('a bug before COMMIT'), { pids });
    }

    @UsePooled('db')
    async write(who: string): Promise<void> {
      await this.kysely.insertInto(NOTES).values({ who }).execute();
    }
  }

  it('inside @UsePooled the face hands out the scope connection: one transaction across Kysely, Drizzle and the pool', async () => {
    const moduleRef = await boot({
      imports: [
        PoolModule.forRoot({
          pools: [{ name: 'db', connector: pgConnector(URL), options: { maxSize: 2, logger: quiet } }],
        }),
      ],
      providers: [Ledger],
    });
    const service = moduleRef.get(Ledger);
    const err = (await service.threeWritesThenBug('scope').catch((e: unknown) => e)) as Error & { pids: number[] };
    expect(err.message).toBe('a bug before COMMIT');
    expect(new Set(err.pids).size).toBe(1);
    await service.write('scope-after');
    for (const who of ['scope-kysely', 'scope-drizzle']) expect(await ledger.rowsOf(who)).toBe(0);
    expect(await ledger.rowsOf('scope-after')).toBe(1);
  });

  it("with the session reset, a tenant's setting never reaches another through the face: 20 tenants, 500 calls, 0 leaks", async () => {
    const pool = new ConnectionPool(pgConnector(URL, { reset: 'session' }), {
      name: 'face-tenants',
      maxSize: 4,
      logger: quiet,
    });
    const face = asPgPool(pool);
    let leaks = 0;
    await Promise.all(
      Array.from({ length: 500 }, async (_, i) => {
        const client = await face.connect();
        try {
          const seen = await client.query<{ t: string | null }>("SELECT current_setting('app.tenant', true) AS t");
          if ((seen.rows[0]!.t ?? '') !== '') leaks++;
          await client.query("SELECT set_config('app.tenant', $1, false)", [`tenant-${i % 20}`]);
        } finally {
          client.release();
        }
      }),
    );
    expect(leaks).toBe(0);
    await face.end();
  });

  it('release(err) retires the connection; a second release throws, as pg.Pool does; the counts follow the pool', async () => {
    const pool = new ConnectionPool(pgConnector(URL), { name: 'face-counts', maxSize: 2, logger: quiet });
    const face = asPgPool(pool, { closeOnEnd: false });
    const a = await face.connect();
    expect(face).toBeInstanceOf(pg.Pool);
    expect({ total: face.totalCount, idle: face.idleCount, waiting: face.waitingCount }).toMatchObject({
      total: expect.any(Number),
      waiting: 0,
    });
    const pid = (await a.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    a.release(new Error('broken'));
    expect(() => a.release()).toThrow('Release called on client which has already been released to the pool.');
    await until(() => pool.stats().counters.retiredBy.failed === 1);
    const b = await face.connect();
    expect((await b.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid).not.toBe(pid);
    b.release();
    await new Promise<void>((resolve) =>
      face.query('SELECT 1 AS one', (err: Error, result: pg.QueryResult) => {
        expect(err).toBeUndefined();
        expect(result.rows[0].one).toBe(1);
        resolve();
      }),
    );
    await face.end();
    expect(pool.closed).toBe(false);
    await expect(face.connect()).rejects.toThrow('Cannot use a pool after calling end on the pool');
    await pool.close();
  });

  it('bad arguments are refused, saying what to change', () => {
    expect(() => asPgPool({} as ConnectionPool<pg.Client>)).toThrow(/must be a ConnectionPool of pg clients/);
    const pool = new ConnectionPool(pgConnector(URL), { name: 'face-bad' });
    expect(() => asPgPool(pool, { closeOnEnd: 'yes' as unknown as boolean })).toThrow(PoolConfigError);
    expect(() => asPgPool(pool, { closeOnEnd: 'yes' as unknown as boolean })).toThrow(/option "closeOnEnd" must be/);
    expect(() => asPgPool(pool, { closeOnend: true } as never)).toThrow(/did you mean "closeOnEnd"/);
    return pool.close();
  });
});

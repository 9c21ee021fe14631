// Inside one @UsePooled scope, on the real PostgreSQL: the pg.Pool face lends the scope's
// connection to one unit of work at a time, so concurrent ORM transactions never interleave;
// a transaction begun inside the method's is a savepoint of it; a stale client refuses work.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { eq, sql as dsql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import { integer, pgTable } from 'drizzle-orm/pg-core';
import { Kysely, PostgresDialect, sql, type Generated } from 'kysely';
import pg from 'pg';
import {
  ConnectionPool,
  InjectPool,
  PoolModule,
  ScopeTurnTimeoutError,
  UsePooled,
  type PoolLogger,
} from '../../lib/index.js';
import { asPgPool, pgConnector } from '../../lib/connectors/pg/index.js';
import { boot } from '../support/nest.js';
import { DATABASE_URL, PgLedger, type Transfer } from '../support/pg-ledger.js';

const APP = 'nsp-scope-units';
const URL = `${DATABASE_URL}?application_name=${APP}`;
const ACCOUNTS = 'nsp_units_accounts';
const NOTES = 'nsp_units_notes';
const COUNT = 50;
const ledger = new PgLedger(ACCOUNTS, NOTES, COUNT, 2_000);
const quiet: PoolLogger = { warn: () => {}, error: () => {} };

beforeAll(() => ledger.open());
afterAll(() => ledger.close());

interface Db {
  [ACCOUNTS]: { id: number; balance: number };
  [NOTES]: { id: Generated<number>; who: string };
}

const accounts = pgTable(ACCOUNTS, { id: integer('id').primaryKey(), balance: integer('balance').notNull() });

@Injectable()
class Bank {
  readonly face: pg.Pool;
  readonly kysely: Kysely<Db>;
  readonly drizzle: ReturnType<typeof drizzle>;
  constructor(@InjectPool('db') readonly db: ConnectionPool<pg.Client>) {
    this.face = asPgPool(db, { closeOnEnd: false });
    this.kysely = new Kysely<Db>({ dialect: new PostgresDialect({ pool: this.face }) });
    this.drizzle = drizzle({ client: this.face });
  }

  async #kyselyTransfer(t: Transfer): Promise<void> {
    await this.kysely.transaction().execute(async (trx) => {
      await trx
        .updateTable(ACCOUNTS)
        .set({ balance: sql`balance - ${t.amount}` })
        .where('id', '=', t.from)
        .execute();
      await new Promise((resolve) => setImmediate(resolve)); // let a sibling try to interleave
      if (t.fails) throw new Error('the transfer failed half-way');
      await trx
        .updateTable(ACCOUNTS)
        .set({ balance: sql`balance + ${t.amount}` })
        .where('id', '=', t.to)
        .execute();
    });
  }

  async #drizzleTransfer(t: Transfer): Promise<void> {
    await this.drizzle.transaction(async (tx) => {
      await tx
        .update(accounts)
        .set({ balance: dsql`${accounts.balance} - ${t.amount}` })
        .where(eq(accounts.id, t.from));
      await new Promise((resolve) => setImmediate(resolve));
      if (t.fails) throw new Error('the transfer failed half-way');
      await tx
        .update(accounts)
        .set({ balance: dsql`${accounts.balance} + ${t.amount}` })
        .where(eq(accounts.id, t.to));
    });
  }

  /** 50 transfers at once inside one method: each its own transaction on the scope's connection. */
  @UsePooled('db')
  async manyTransfers(orm: 'kysely' | 'drizzle'): Promise<{ failed: number; pids: number[] }> {
    const run = orm === 'kysely' ? (t: Transfer) => this.#kyselyTransfer(t) : (t: Transfer) => this.#drizzleTransfer(t);
    const outcomes = await Promise.allSettled(ledger.transfers(COUNT, 11).map(run));
    const pids = await Promise.all([
      this.face.query('SELECT pg_backend_pid() AS pid').then((r) => (r.rows[0] as { pid: number }).pid),
      this.db.current.query('SELECT pg_backend_pid() AS pid').then((r) => (r.rows[0] as { pid: number }).pid),
    ]);
    return { failed: outcomes.filter((o) => o.status === 'rejected').length, pids };
  }

  /** A plain insert and a read beside a transaction that fails. */
  @UsePooled('db')
  async besideAFailingTransaction(tag: string): Promise<{ seen: number; failure: string }> {
    const [failure, , seen] = await Promise.all([
      this.kysely
        .transaction()
        .execute(async (trx) => {
          await trx
            .insertInto(NOTES)
            .values({ who: `${tag}-in-tx` })
            .execute();
          await new Promise((resolve) => setTimeout(resolve, 20));
          throw new Error('the transaction failed');
        })
        .catch((e: Error) => e.message),
      this.kysely
        .insertInto(NOTES)
        .values({ who: `${tag}-beside` })
        .execute(),
      this.kysely
        .selectFrom(NOTES)
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('who', '=', `${tag}-in-tx`)
        .executeTakeFirstOrThrow()
        .then((r) => Number(r.n)),
    ]);
    return { seen, failure };
  }

  /** The method's own transaction, an ORM's implicit one inside it, then a bug. */
  @UsePooled('db')
  async implicitThenBug(tag: string): Promise<void> {
    await this.db.current.query('BEGIN');
    await this.db.current.query(`INSERT INTO ${NOTES} (who) VALUES ($1)`, [`${tag}-method`]);
    await this.kysely.transaction().execute((trx) =>
      trx
        .insertInto(NOTES)
        .values({ who: `${tag}-kysely` })
        .execute(),
    );
    await this.drizzle.transaction((tx) =>
      tx.execute(dsql.raw(`INSERT INTO ${NOTES} (who) VALUES ('${tag}-drizzle')`)),
    );
    expect(this.db.current.getTransactionStatus()).toBe('T');
    throw new Error('a bug before COMMIT');
  }

  /** A nested transaction that fails rolls back to its savepoint; the method's goes on and commits. */
  @UsePooled('db')
  async nestedFailureThenCommit(tag: string): Promise<string> {
    await this.db.current.query('BEGIN');
    await this.kysely
      .insertInto(NOTES)
      .values({ who: `${tag}-before` })
      .execute();
    const failed = await this.kysely
      .transaction()
      .execute(async (trx) => {
        await trx
          .insertInto(NOTES)
          .values({ who: `${tag}-nested` })
          .execute();
        throw new Error('nested failure');
      })
      .catch((e: Error) => e.message);
    await this.kysely
      .insertInto(NOTES)
      .values({ who: `${tag}-after` })
      .execute();
    await this.db.current.query('COMMIT');
    return failed;
  }

  /** A unit that begins inside the method's transaction and gives its client back without ending: rolled back to its savepoint. */
  @UsePooled('db')
  async leftOpen(tag: string): Promise<void> {
    await this.db.current.query('BEGIN');
    const client = await this.face.connect();
    await client.query('BEGIN');
    await client.query(`INSERT INTO ${NOTES} (who) VALUES ($1)`, [`${tag}-left`]);
    client.release();
    await this.kysely
      .insertInto(NOTES)
      .values({ who: `${tag}-kept` })
      .execute();
    await this.db.current.query('COMMIT');
  }

  /** Forms that cannot nest are refused inside the method's transaction, which stays open. */
  @UsePooled('db')
  async refusedForms(): Promise<{ refusals: string[]; status: string | null }> {
    await this.db.current.query('BEGIN');
    const client = await this.face.connect();
    const refusals: string[] = [];
    for (const text of ['BEGIN ISOLATION LEVEL SERIALIZABLE', 'SELECT 1; COMMIT', 'select 1; /* x */ rollback']) {
      refusals.push(
        await client.query(text).then(
          () => 'ran',
          (e: Error) => e.message,
        ),
      );
    }
    await client.query('BEGIN');
    refusals.push(
      await client.query('COMMIT AND CHAIN').then(
        () => 'ran',
        (e: Error) => e.message,
      ),
    );
    await client.query('COMMIT');
    client.release();
    const status = this.db.current.getTransactionStatus();
    await this.db.current.query('ROLLBACK');
    return { refusals, status };
  }

  /** The holder of a checkout calls the face again from its own code: that call waits for the holder, and fails by name at its deadline. */
  @UsePooled('db')
  async waitsOnItself(): Promise<unknown> {
    const client = await this.face.connect();
    try {
      return await this.face.query('SELECT 1').catch((e: unknown) => e);
    } finally {
      client.release();
    }
  }
}

async function bank(acquireTimeoutMs = 30_000): Promise<Bank> {
  const moduleRef = await boot({
    imports: [
      PoolModule.forRoot({
        pools: [{ name: 'db', connector: pgConnector(URL), options: { maxSize: 4, acquireTimeoutMs, logger: quiet } }],
      }),
    ],
    providers: [Bank],
  });
  return moduleRef.get(Bank);
}

describe('the pg.Pool face inside one @UsePooled scope', () => {
  it.each(['kysely', 'drizzle'] as const)(
    '%s: 50 concurrent transfers inside one method keep the total, on the scope connection, none left open',
    async (orm) => {
      await ledger.freshAccounts();
      const b = await bank();
      const { failed, pids } = await b.manyTransfers(orm);
      expect(failed).toBe(Math.ceil((COUNT - 4) / 9));
      expect(await ledger.total()).toBe(2_000 * COUNT);
      expect(new Set(pids).size).toBe(1);
      expect(await ledger.idleInTransaction(APP)).toBe(0);
    },
  );

  it("a plain insert beside a failing transaction is kept, and a read beside it never sees the transaction's row", async () => {
    const b = await bank();
    const { seen, failure } = await b.besideAFailingTransaction('beside');
    expect(failure).toBe('the transaction failed');
    expect(seen).toBe(0);
    expect(await ledger.rowsOf('beside-beside')).toBe(1);
    expect(await ledger.rowsOf('beside-in-tx')).toBe(0);
  });

  it("an ORM's implicit transaction inside the method's is a savepoint: a throw after it leaves nothing committed", async () => {
    const b = await bank();
    await expect(b.implicitThenBug('implicit')).rejects.toThrow('a bug before COMMIT');
    for (const who of ['implicit-method', 'implicit-kysely', 'implicit-drizzle'])
      expect(await ledger.rowsOf(who)).toBe(0);
    expect(await ledger.idleInTransaction(APP)).toBe(0);
  });

  it("a nested transaction that fails rolls back to its savepoint and the method's own commits", async () => {
    const b = await bank();
    expect(await b.nestedFailureThenCommit('nested')).toBe('nested failure');
    expect(await ledger.rowsOf('nested-before')).toBe(1);
    expect(await ledger.rowsOf('nested-nested')).toBe(0);
    expect(await ledger.rowsOf('nested-after')).toBe(1);
  });

  it('a savepoint a unit leaves open is rolled back before the next unit', async () => {
    const b = await bank();
    await b.leftOpen('open');
    expect(await ledger.rowsOf('open-left')).toBe(0);
    expect(await ledger.rowsOf('open-kept')).toBe(1);
  });

  it("forms that cannot nest are refused, saying what to send, and the method's transaction stays open", async () => {
    const b = await bank();
    const { refusals, status } = await b.refusedForms();
    expect(refusals).toHaveLength(4);
    for (const refusal of refusals) {
      expect(refusal).toMatch(
        /(cannot nest|would end the transaction) inside the transaction of @UsePooled\('db'\) on Bank\.refusedForms/,
      );
      expect(refusal).toContain('send one BEGIN and then COMMIT or ROLLBACK, each on its own');
    }
    expect(status).toBe('T');
  });

  it('a call the holder makes through the pool, not its client, fails at its deadline naming the method', async () => {
    const b = await bank(300);
    const err = await b.waitsOnItself();
    expect(err).toBeInstanceOf(ScopeTurnTimeoutError);
    expect((err as Error).message).toMatch(
      /^pool "db": a query\(\) of the pg\.Pool face inside @UsePooled\('db'\) on Bank\.waitsOnItself waited \d+ ms/,
    );
  });
});

describe('the scope’s transaction is the method’s: what a unit sends never ends it', () => {
  const pool = () => new ConnectionPool(pgConnector(URL), { name: 'units', maxSize: 2, logger: quiet });

  /** Runs `unit` on a face checkout inside a scope whose own transaction wrote a row and then throws. */
  async function insideAFailingMethod(
    tag: string,
    unit: (client: pg.PoolClient) => Promise<void>,
  ): Promise<{ status: string | null }> {
    const p = pool();
    const face = asPgPool(p);
    let status: string | null = null;
    await expect(
      p.use(async (conn) => {
        await conn.query('BEGIN');
        await conn.query(`INSERT INTO ${NOTES} (who) VALUES ($1)`, [`${tag}-method`]);
        const client = await face.connect();
        await unit(client).finally(() => client.release());
        await new Promise((resolve) => setImmediate(resolve)); // the unit's clean-up, if any
        status = conn.getTransactionStatus();
        throw new Error('the method failed');
      }),
    ).rejects.toThrow('the method failed');
    await face.end();
    expect(await ledger.rowsOf(`${tag}-method`)).toBe(0);
    return { status };
  }

  it('a second BEGIN inside the unit’s savepoint is refused, so its extra COMMIT cannot commit the method’s', async () => {
    const sent: string[] = [];
    const { status } = await insideAFailingMethod('twice', async (client) => {
      for (const text of ['BEGIN', 'BEGIN', 'COMMIT', 'COMMIT']) {
        sent.push(
          await client.query(text).then(
            (r) => r.command,
            (e: Error) => e.message.slice(0, 60),
          ),
        );
      }
    });
    expect(sent[0]).toBe('SAVEPOINT');
    expect(sent[1]).toMatch(/^pool "units": "BEGIN" would begin a second/);
    expect(sent[2]).toBe('RELEASE');
    expect(sent[3]).toMatch(/^pool "units": "COMMIT" would end the trans/);
    expect(status).toBe('T');
  });

  it('a BEGIN behind nested block comments is still a savepoint', async () => {
    const { status } = await insideAFailingMethod('comments', async (client) => {
      expect((await client.query('/* a /* b */ c */ BEGIN')).command).toBe('SAVEPOINT');
      expect((await client.query('COMMIT')).command).toBe('RELEASE');
    });
    expect(status).toBe('T');
  });

  it('a COMMIT after an error in the unit rolls its savepoint back, as PostgreSQL’s COMMIT of a failed transaction does', async () => {
    const { status } = await insideAFailingMethod('failed', async (client) => {
      await client.query('BEGIN');
      await client.query(`INSERT INTO ${NOTES} (who) VALUES ('failed-unit')`);
      await expect(client.query('SELECT 1/0')).rejects.toThrow('division by zero');
      await client.query('COMMIT');
    });
    expect(status).toBe('T'); // usable again, not aborted
    expect(await ledger.rowsOf('failed-unit')).toBe(0);
  });

  it('a transaction statement with parameters is sent as given, and the server refuses it as with pg', async () => {
    await insideAFailingMethod('values', async (client) => {
      await expect(client.query({ text: 'BEGIN', values: [1] })).rejects.toThrow(/bind message supplies 1 parameters/);
    });
  });

  it('COMMIT AND NO CHAIN is a plain COMMIT', async () => {
    await insideAFailingMethod('nochain', async (client) => {
      await client.query('BEGIN');
      expect((await client.query('COMMIT AND NO CHAIN')).command).toBe('RELEASE');
    });
  });

  it('a unit’s own transaction never outlives it: a sibling’s plain insert is not rolled back with one released with an error', async () => {
    const p = pool();
    const face = asPgPool(p);
    await p.use(() =>
      Promise.all([
        (async () => {
          const client = await face.connect();
          await client.query('BEGIN');
          await client.query(`INSERT INTO ${NOTES} (who) VALUES ('erred-unit')`);
          client.release(new Error('bad'));
        })(),
        face.query(`INSERT INTO ${NOTES} (who) VALUES ('erred-sibling')`),
      ]),
    );
    await face.end();
    expect(await ledger.rowsOf('erred-unit')).toBe(0);
    expect(await ledger.rowsOf('erred-sibling')).toBe(1);
  });
});

describe('a checkout of the face is a handle that dies with it', () => {
  it("a released client refuses queries instead of running them in the next holder's transaction", async () => {
    const pool = new ConnectionPool(pgConnector(URL), { name: 'stale', maxSize: 1, logger: quiet });
    const face = asPgPool(pool);
    const stale = await face.connect();
    stale.release();
    const next = await face.connect();
    await next.query('BEGIN');
    await next.query(`INSERT INTO ${NOTES} (who) VALUES ('stale-next')`);
    await expect(stale.query(`INSERT INTO ${NOTES} (who) VALUES ('stale-old')`)).rejects.toThrow(
      'Release called on client which has already been released to the pool.',
    );
    const viaCallback = await new Promise<Error | undefined>((resolve) =>
      stale.query('SELECT 1', (err: Error | undefined) => resolve(err)),
    );
    expect(viaCallback?.message).toMatch(/runs no more queries/);
    await next.query('ROLLBACK');
    next.release();
    expect(await ledger.rowsOf('stale-old')).toBe(0);
    expect(next).toBeInstanceOf(pg.Client);
    await face.end();
  });

  it('a client checked out inside a scope and kept past its end refuses work: the connection is another caller’s by then', async () => {
    const pool = new ConnectionPool(pgConnector(URL), { name: 'outlived', maxSize: 1, logger: quiet });
    const face = asPgPool(pool);
    const kept = await pool.use(() => face.connect());
    const next = await face.connect(); // the scope's connection, lent again
    await expect(kept.query('SELECT 1')).rejects.toThrow(/this client's scope \(a pool\.use\(\) callback\) has ended/);
    kept.release(); // nothing to clean: the connection is next's
    expect(next.getTransactionStatus()).toBe('I');
    next.release();
    await face.end();
  });

  it('a query() inside a scope whose onConnect fails fails with it, and end() still ends: nothing is left counted', async () => {
    const pool = new ConnectionPool(pgConnector(URL), { name: 'hook-fails', maxSize: 1, logger: quiet });
    const face = asPgPool(pool, {
      onConnect: () => {
        throw new Error('the hook refused');
      },
    });
    await expect(pool.use(() => face.query('SELECT 1'))).rejects.toThrow('the hook refused');
    await expect(pool.use(() => face.connect())).rejects.toThrow('the hook refused');
    const ended = await Promise.race([
      face.end().then(() => 'ended'),
      new Promise((resolve) => setTimeout(resolve, 2_000, 'still waiting for a query that is over')),
    ]);
    expect(ended).toBe('ended');
    expect(pool.stats().closed).toBe(true);
  });

  it('listeners a holder adds through its client leave with it', async () => {
    const pool = new ConnectionPool(pgConnector(URL), { name: 'listeners', maxSize: 1, logger: quiet });
    const face = asPgPool(pool);
    const first = await face.connect();
    const before = first.listenerCount('notice');
    first.on('notice', () => {});
    first.once('notification', () => {});
    expect(first.listenerCount('notice')).toBe(before + 1);
    first.release();
    const second = await face.connect();
    expect(second.listenerCount('notice')).toBe(before);
    expect(second.listenerCount('notification')).toBe(0);
    second.release();
    await face.end();
  });
});

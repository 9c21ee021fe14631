// MikroORM 7 on the pool: a Kysely PostgresDialect over the face as its driverOptions, with
// MikroORM's own type parsers given to the face (its pg.Pool would have them). The issue's
// checks, and MikroORM reading on the face what it reads on its own pool.
import { describe, expect, it } from '@jest/globals';
import { Injectable, type OnModuleDestroy } from '@nestjs/common';
import { createPostgreSqlTypeParsers, EntitySchema, MikroORM, raw } from '@mikro-orm/postgresql';
import { PostgresDialect } from 'kysely';
import pg from 'pg';
import Cursor from 'pg-cursor';
import array from 'postgres-array';
import { ConnectionPool, InjectPool, type PoolLogger } from '../../lib/index.js';
import { asPgPool, pgConnector } from '../../lib/connectors/pg/index.js';
import { ORM, ormChecks, poolModule, type OrmUnderTest, type TransferStep } from '../support/orm-checks.js';
import { DATABASE_URL, PgLedger } from '../support/pg-ledger.js';

const APP = 'nsp-orm-mikro';
const ledger = new PgLedger('nsp_mikro_accounts', 'nsp_mikro_notes', 50, 10_000);
const quiet: PoolLogger = { warn: () => {}, error: () => {} };

interface Account {
  id: number;
  balance: number;
}
interface Note {
  id: number;
  who: string;
}
const Account = new EntitySchema<Account>({
  name: 'Account',
  tableName: 'nsp_mikro_accounts',
  properties: { id: { type: 'integer', primary: true, autoincrement: false }, balance: { type: 'integer' } },
});
const Note = new EntitySchema<Note>({
  name: 'Note',
  tableName: 'nsp_mikro_notes',
  properties: { id: { type: 'integer', primary: true }, who: { type: 'text' } },
});

/** MikroORM's type parsers (dates and intervals as the server's text), as its own pg.Pool is given them. */
function mikroTypes(): pg.CustomTypesConfig {
  const types = new pg.TypeOverrides();
  for (const [oid, parse] of Object.entries(createPostgreSqlTypeParsers((text: string) => array.parse(text)))) {
    types.setTypeParser(Number(oid), parse as (text: string) => unknown);
  }
  return types;
}

/** MikroORM on the pool: the docs' route. */
function mikroOn(db: ConnectionPool<pg.Client>): Promise<MikroORM> {
  return MikroORM.init({
    entities: [Account, Note],
    dbName: 'test',
    driverOptions: new PostgresDialect({
      pool: asPgPool(db, { closeOnEnd: false, types: mikroTypes() }),
      cursor: Cursor,
    }),
  });
}

@Injectable()
class MikroBank implements OrmUnderTest, OnModuleDestroy {
  #orm: Promise<MikroORM>;
  constructor(@InjectPool('db') db: ConnectionPool<pg.Client>) {
    this.#orm = mikroOn(db);
  }
  async onModuleDestroy(): Promise<void> {
    await (await this.#orm).close();
  }

  async transfer(steps: readonly [TransferStep, TransferStep], failHalfWay: () => void): Promise<void> {
    const orm = await this.#orm;
    await orm.em.fork().transactional(async (em) => {
      await em.nativeUpdate(Account, { id: steps[0].id }, { balance: raw('balance + ?', [steps[0].delta]) });
      await new Promise((resolve) => setImmediate(resolve));
      failHalfWay();
      await em.nativeUpdate(Account, { id: steps[1].id }, { balance: raw('balance + ?', [steps[1].delta]) });
    });
  }

  async implicitWrite(who: string): Promise<void> {
    // flush() wraps its inserts in a transaction of its own.
    const em = (await this.#orm).em.fork();
    em.create(Note, { who });
    await em.flush();
  }
}

ormChecks('MikroORM 7 (a Kysely dialect over the face)', {
  ledger,
  application: APP,
  imports: [poolModule(APP)],
  providers: [MikroBank, { provide: ORM, useExisting: MikroBank }],
});

describe('MikroORM on the face reads what it reads on its own pool', () => {
  it('dates, timestamps and intervals as the server sends them, and close() leaves the pool open', async () => {
    const text = "SELECT '2026-12-02'::date AS d, '2026-12-02 10:00:00'::timestamp AS t, '1 day'::interval AS i";
    const own = await MikroORM.init({ entities: [Account, Note], clientUrl: DATABASE_URL });
    const db = new ConnectionPool(pgConnector(`${DATABASE_URL}?application_name=${APP}`), {
      maxSize: 2,
      logger: quiet,
    });
    const onPool = await mikroOn(db);
    const [expected, seen] = await Promise.all([
      own.em.getConnection().execute(text),
      onPool.em.getConnection().execute(text),
    ]);
    expect(expected).toEqual([{ d: '2026-12-02', t: '2026-12-02 10:00:00', i: '1 day' }]);
    expect(seen).toEqual(expected);
    await Promise.all([own.close(), onPool.close()]);
    expect(await db.use((c) => c.query('SELECT 1 AS one').then((r) => r.rows[0]))).toEqual({ one: 1 });
    await db.close();
  });
});

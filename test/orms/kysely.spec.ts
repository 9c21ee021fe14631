// Kysely on the pool: `new PostgresDialect({ pool: asPgPool(db, { closeOnEnd: false }) })`. The checks.
import { Injectable, type OnModuleDestroy } from '@nestjs/common';
import { Kysely, PostgresDialect, sql, type Generated } from 'kysely';
import type pg from 'pg';
import { ConnectionPool, InjectPool } from '../../lib/index.js';
import { asPgPool } from '../../lib/connectors/pg/index.js';
import { ORM, ormChecks, poolModule, type OrmUnderTest, type TransferStep } from '../support/orm-checks.js';
import { PgLedger } from '../support/pg-ledger.js';

const APP = 'nsp-orm-kysely';
const ledger = new PgLedger('nsp_kysely_accounts', 'nsp_kysely_notes', 50, 10_000);

interface Db {
  nsp_kysely_accounts: { id: number; balance: number };
  nsp_kysely_notes: { id: Generated<number>; who: string };
}

@Injectable()
class KyselyBank implements OrmUnderTest, OnModuleDestroy {
  readonly db: Kysely<Db>;
  constructor(@InjectPool('db') pool: ConnectionPool<pg.Client>) {
    this.db = new Kysely<Db>({ dialect: new PostgresDialect({ pool: asPgPool(pool, { closeOnEnd: false }) }) });
  }
  async onModuleDestroy(): Promise<void> {
    await this.db.destroy();
  }

  async transfer(steps: readonly [TransferStep, TransferStep], failHalfWay: () => void): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const add = (step: TransferStep) =>
        trx
          .updateTable('nsp_kysely_accounts')
          .set({ balance: sql`balance + ${step.delta}` })
          .where('id', '=', step.id)
          .execute();
      await add(steps[0]);
      await new Promise((resolve) => setImmediate(resolve));
      failHalfWay();
      await add(steps[1]);
    });
  }

  async implicitWrite(who: string): Promise<void> {
    await this.db.transaction().execute((trx) => trx.insertInto('nsp_kysely_notes').values({ who }).execute());
  }
}

ormChecks('Kysely (PostgresDialect over the face)', {
  ledger,
  application: APP,
  imports: [poolModule(APP)],
  providers: [KyselyBank, { provide: ORM, useExisting: KyselyBank }],
});

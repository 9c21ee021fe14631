// Drizzle on the pool: `drizzle({ client: asPgPool(db, { closeOnEnd: false }) })`. The checks.
import { Injectable } from '@nestjs/common';
import { eq, sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import { integer, pgTable, serial, text } from 'drizzle-orm/pg-core';
import type pg from 'pg';
import { ConnectionPool, InjectPool } from '../../lib/index.js';
import { asPgPool } from '../../lib/connectors/pg/index.js';
import { ORM, ormChecks, poolModule, type OrmUnderTest, type TransferStep } from '../support/orm-checks.js';
import { PgLedger } from '../support/pg-ledger.js';

const APP = 'nsp-orm-drizzle';
const ledger = new PgLedger('nsp_drizzle_accounts', 'nsp_drizzle_notes', 50, 10_000);
const accounts = pgTable('nsp_drizzle_accounts', {
  id: integer('id').primaryKey(),
  balance: integer('balance').notNull(),
});
const notes = pgTable('nsp_drizzle_notes', { id: serial('id').primaryKey(), who: text('who').notNull() });

@Injectable()
class DrizzleBank implements OrmUnderTest {
  readonly db: ReturnType<typeof drizzle>;
  constructor(@InjectPool('db') pool: ConnectionPool<pg.Client>) {
    this.db = drizzle({ client: asPgPool(pool, { closeOnEnd: false }) });
  }

  async transfer(steps: readonly [TransferStep, TransferStep], failHalfWay: () => void): Promise<void> {
    await this.db.transaction(async (tx) => {
      const add = (step: TransferStep) =>
        tx
          .update(accounts)
          .set({ balance: sql`${accounts.balance} + ${step.delta}` })
          .where(eq(accounts.id, step.id));
      await add(steps[0]);
      await new Promise((resolve) => setImmediate(resolve));
      failHalfWay();
      await add(steps[1]);
    });
  }

  async implicitWrite(who: string): Promise<void> {
    await this.db.transaction((tx) => tx.insert(notes).values({ who }));
  }
}

ormChecks('Drizzle (node-postgres over the face)', {
  ledger,
  application: APP,
  imports: [poolModule(APP)],
  providers: [DrizzleBank, { provide: ORM, useExisting: DrizzleBank }],
});

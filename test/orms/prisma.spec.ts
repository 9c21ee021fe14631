// Prisma 7 on the pool: `new PrismaPg(asPgPool(db, { closeOnEnd: false }))` as the client's
// adapter, in a Nest service. The checks, who closes what, and Prisma's batching of
// findUnique across callers, which no pool can see: the documented rule, and why it is needed.
import { describe, expect, it } from '@jest/globals';
import { Injectable, type OnModuleDestroy } from '@nestjs/common';
import { PrismaPg } from '@prisma/adapter-pg';
import { AsyncResource } from 'node:async_hooks';
import type pg from 'pg';
import { ConnectionPool, InjectPool, UsePooled } from '../../lib/index.js';
import { asPgPool } from '../../lib/connectors/pg/index.js';
import { boot } from '../support/nest.js';
import { ORM, ormChecks, poolModule, type OrmUnderTest, type TransferStep } from '../support/orm-checks.js';
import { PgLedger } from '../support/pg-ledger.js';
import { PrismaClient } from './prisma/client/client.js';

const APP = 'nsp-orm-prisma';
const ledger = new PgLedger('nsp_prisma_accounts', 'nsp_prisma_notes', 50, 10_000);

/** Nest's Prisma service, on the pool: Prisma's $disconnect() leaves the pool to its module. */
@Injectable()
class PrismaService extends PrismaClient implements OnModuleDestroy {
  constructor(@InjectPool('db') readonly db: ConnectionPool<pg.Client>) {
    super({
      adapter: new PrismaPg(asPgPool(db, { closeOnEnd: false })),
      // 2,000 transactions at once wait for 10 connections: longer than Prisma's 2 s default.
      transactionOptions: { maxWait: 60_000, timeout: 60_000 },
    });
  }
  async onModuleDestroy(): Promise<void> {
    await this.$disconnect();
  }
}

@Injectable()
class PrismaBank implements OrmUnderTest {
  constructor(readonly prisma: PrismaService) {}

  async transfer(steps: readonly [TransferStep, TransferStep], failHalfWay: () => void): Promise<void> {
    await this.prisma.$transaction(async (tx) => {
      await tx.account.update({ where: { id: steps[0].id }, data: { balance: { increment: steps[0].delta } } });
      await new Promise((resolve) => setImmediate(resolve));
      failHalfWay();
      await tx.account.update({ where: { id: steps[1].id }, data: { balance: { increment: steps[1].delta } } });
    });
  }

  async implicitWrite(who: string): Promise<void> {
    // Prisma's own transaction around the write (its BEGIN and COMMIT).
    await this.prisma.$transaction((tx) => tx.note.create({ data: { who } }));
  }
}

ormChecks('Prisma 7 (PrismaPg over the face)', {
  ledger,
  application: APP,
  imports: [poolModule(APP)],
  providers: [PrismaService, PrismaBank, { provide: ORM, useExisting: PrismaBank }],
});

/**
 * Reads by id made in the same tick from inside a scope (which holds a row only it can see) and
 * by another request outside any scope. Prisma sends the findUnique calls of one tick, and the
 * queries of its interactive transactions, from the context of the first caller of the tick.
 */
@Injectable()
class Readers {
  /** The rule's second client: for work inside scopes, in interactive transactions only. */
  readonly scoped: PrismaClient;
  constructor(
    readonly prisma: PrismaService,
    @InjectPool('db') readonly db: ConnectionPool<pg.Client>,
  ) {
    this.scoped = new PrismaClient({ adapter: new PrismaPg(asPgPool(db, { closeOnEnd: false })) });
  }

  @UsePooled('db')
  async sameTick(
    outside: (id: number) => Promise<{ who: string } | null>,
    read: 'findUnique on the app client' | 'the rule',
    first: 'scope' | 'outside',
  ): Promise<{ scope: string | null; outside: string | null }> {
    await this.db.current.query('BEGIN');
    const made = await this.db.current.query<{ id: number }>(
      "INSERT INTO nsp_prisma_notes (who) VALUES ('uncommitted') RETURNING id",
    );
    const id = made.rows[0]!.id;
    const mine = () =>
      (read === 'the rule'
        ? this.scoped.$transaction((tx) => tx.note.findUnique({ where: { id } }))
        : this.prisma.note.findUnique({ where: { id } })
      ).then((row) => row);
    const [scope, theirs] =
      first === 'scope'
        ? await Promise.all([mine(), outside(id)])
        : await Promise.all([outside(id), mine()]).then(([a, b]) => [b, a] as const);
    await this.db.current.query('ROLLBACK');
    return { scope: scope?.who ?? null, outside: theirs?.who ?? null };
  }
}

describe('Prisma sends the findUnique calls of a tick together: inside a scope, the documented rule', () => {
  async function readers() {
    const moduleRef = await boot({ imports: [poolModule(APP)], providers: [PrismaService, Readers] });
    const r = moduleRef.get(Readers);
    // Another request, outside any scope: bound here, it runs outside the method that calls it
    // (then() inside, as a Prisma query starts where it is first awaited).
    const outside = AsyncResource.bind((id: number) => r.prisma.note.findUnique({ where: { id } }).then((row) => row));
    return { r, outside };
  }

  it("without it, the scope's read first: Prisma sends both from the scope's context, and the outside request sees the scope's uncommitted row", async () => {
    const { r, outside } = await readers();
    expect(await r.sameTick(outside, 'findUnique on the app client', 'scope')).toEqual({
      scope: 'uncommitted',
      outside: 'uncommitted',
    });
    await r.scoped.$disconnect();
  });

  it('without it, the outside read first: Prisma sends both from outside, and the scope misses its own row', async () => {
    const { r, outside } = await readers();
    expect(await r.sameTick(outside, 'findUnique on the app client', 'outside')).toEqual({
      scope: null,
      outside: null,
    });
    await r.scoped.$disconnect();
  });

  it.each(['scope', 'outside'] as const)(
    'with it (a client of its own for scopes, used in interactive transactions), %s first: the scope sees its row, the outside request nothing',
    async (first) => {
      const { r, outside } = await readers();
      expect(await r.sameTick(outside, 'the rule', first)).toEqual({ scope: 'uncommitted', outside: null });
      await r.scoped.$disconnect();
    },
  );
});

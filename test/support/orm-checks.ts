// The checks every ORM on the pool passes on the real PostgreSQL (issue 61): many transfers at
// once outside a scope and inside one @UsePooled method keep the total; an ORM's implicit
// transaction inside the method's, then a throw, leaves nothing committed; no session is left idle
// in a transaction; nothing is sent on a client already running a statement (pg's deprecation).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { Inject, Injectable, type ModuleMetadata, type Provider } from '@nestjs/common';
import pg from 'pg';
import { ConnectionPool, InjectPool, PoolModule, UsePooled, type PoolLogger } from '../../lib/index.js';
import { pgConnector } from '../../lib/connectors/pg/index.js';
import { boot } from './nest.js';
import { DATABASE_URL, PgLedger, type Transfer } from './pg-ledger.js';

/** One step of a transfer: `delta` added to account `id`. */
export interface TransferStep {
  readonly id: number;
  readonly delta: number;
}

/** What a spec gives for its ORM: its transfer, as one of its own transactions, and a write it wraps in one implicitly. */
export interface OrmUnderTest {
  /**
   * `steps` in order, as one transaction of the ORM's: after the first, a turn for a sibling to
   * interleave, then `failHalfWay()` (which throws for a failing transfer), then the second.
   */
  transfer(steps: readonly [TransferStep, TransferStep], failHalfWay: () => void): Promise<void>;
  /** A note by `who`, written the way the ORM wraps in a transaction of its own (save(), flush(), create()). */
  implicitWrite(who: string): Promise<void>;
}

/** The token of the spec's OrmUnderTest. */
export const ORM = Symbol('the ORM under test');
/** The token of the ledger's notes table, which the checks' methods write to. */
const NOTES = Symbol('the notes table');

const quiet: PoolLogger = { warn: () => {}, error: () => {} };

/** A transfer's steps in account order, so concurrent transfers take their row locks in one order and never deadlock. */
function stepsOf(t: Transfer): readonly [TransferStep, TransferStep] {
  const debit = { id: t.from, delta: -t.amount };
  const credit = { id: t.to, delta: t.amount };
  return t.from < t.to ? [debit, credit] : [credit, debit];
}

function run(orm: OrmUnderTest, t: Transfer): Promise<void> {
  return orm.transfer(stepsOf(t), () => {
    if (t.fails) throw new Error('the transfer failed half-way');
  });
}

/**
 * Counts what pg's deprecation counts: a query sent on a client while another waits in its queue
 * (pg warns once per process, so a count per test says more than the warning).
 */
function countPipelined(): { count: () => number; restore: () => void } {
  const proto = pg.Client.prototype as unknown as {
    query: (...a: unknown[]) => unknown;
  };
  const original = proto.query;
  let count = 0;
  proto.query = function (this: { _queryQueue?: unknown[]; pipeline?: boolean }, ...args: unknown[]) {
    if ((this._queryQueue?.length ?? 0) > 0 && this.pipeline !== true) count++;
    return original.apply(this, args);
  };
  return { count: () => count, restore: () => void (proto.query = original) };
}

@Injectable()
class Bank {
  constructor(
    @InjectPool('db') readonly db: ConnectionPool<pg.Client>,
    @Inject(ORM) readonly orm: OrmUnderTest,
    @Inject(NOTES) readonly notes: string,
  ) {}

  /** `transfers` at once, each the ORM's own transaction, outside any scope. */
  async outside(transfers: Transfer[]): Promise<PromiseSettledResult<void>[]> {
    return Promise.allSettled(transfers.map((t) => run(this.orm, t)));
  }

  /** The same inside one method's scope. */
  @UsePooled('db')
  async inside(transfers: Transfer[]): Promise<PromiseSettledResult<void>[]> {
    return Promise.allSettled(transfers.map((t) => run(this.orm, t)));
  }

  /** The method's own transaction, an ORM's implicit one inside it, then a bug. */
  @UsePooled('db')
  async implicitThenBug(tag: string): Promise<string> {
    await this.db.current.query('BEGIN');
    await this.db.current.query(`INSERT INTO ${this.notes} (who) VALUES ($1)`, [`${tag}-method`]);
    await this.orm.implicitWrite(`${tag}-orm`);
    const status = this.db.current.getTransactionStatus() ?? 'none';
    throw new Error(`a bug before COMMIT (the transaction was ${status})`);
  }

  /** The same, committed: the ORM's write is kept with the method's. */
  @UsePooled('db')
  async implicitThenCommit(tag: string): Promise<void> {
    await this.db.current.query('BEGIN');
    await this.db.current.query(`INSERT INTO ${this.notes} (who) VALUES ($1)`, [`${tag}-method`]);
    await this.orm.implicitWrite(`${tag}-orm`);
    await this.db.current.query('COMMIT');
  }
}

export interface OrmChecks {
  /** The accounts and notes tables, named for this ORM (the spec's schema maps its models to them). */
  readonly ledger: PgLedger;
  /** The connection string's application_name, to find this spec's sessions. */
  readonly application: string;
  /** Modules the ORM needs (TypeOrmModule.forRootAsync), given the pool's module. */
  readonly imports?: ModuleMetadata['imports'];
  /** Providers; one of them provides ORM. */
  readonly providers: Provider[];
}

/** The pool's module for a spec: the pg connector on `application`, 10 connections, generous deadlines. */
export function poolModule(application: string) {
  return PoolModule.forRoot({
    pools: [
      {
        name: 'db',
        connector: pgConnector(`${DATABASE_URL}?application_name=${application}`),
        options: { maxSize: 10, acquireTimeoutMs: 60_000, logger: quiet },
      },
    ],
  });
}

/** The checks, as one describe block, for the ORM a spec gives. */
export function ormChecks(name: string, checks: OrmChecks): void {
  const { ledger, application } = checks;
  let pipelined: ReturnType<typeof countPipelined>;
  beforeAll(async () => {
    await ledger.open();
    pipelined = countPipelined();
  });
  afterAll(async () => {
    pipelined.restore();
    await ledger.close();
  });
  beforeEach(() => ledger.freshAccounts());

  async function start(): Promise<Bank> {
    const moduleRef = await boot({
      imports: [...(checks.imports ?? [])],
      providers: [...checks.providers, { provide: NOTES, useValue: ledger.notes }, Bank],
    });
    return moduleRef.get(Bank);
  }

  /** What every check ends with: no session of this spec idle in a transaction, nothing pipelined. */
  async function clean(before: number): Promise<void> {
    expect(await ledger.idleInTransaction(application)).toBe(0);
    expect(pipelined.count() - before).toBe(0);
  }

  describe(`${name} on the pool (the real PostgreSQL)`, () => {
    it.each([
      ['2,000 transfers at once outside a scope', 'outside', 2_000, 3],
      ['50 transfers started with Promise.all inside one @UsePooled method', 'inside', 50, 11],
    ] as const)(
      '%s keep the total, and exactly the failing ones fail',
      async (_what, where, n, seed) => {
        const before = pipelined.count();
        const bank = await start();
        const transfers = ledger.transfers(n, seed);
        const outcomes = await bank[where](transfers);
        expect(failures(outcomes)).toEqual(transfers.filter((t) => t.fails).map(() => 'the transfer failed half-way'));
        expect(await ledger.total()).toBe(ledger.count * ledger.start);
        await clean(before);
      },
      60_000,
    );

    it("an implicit transaction of the ORM inside the method's BEGIN, then a throw, leaves nothing committed", async () => {
      const before = pipelined.count();
      const bank = await start();
      await expect(bank.implicitThenBug('bug')).rejects.toThrow('a bug before COMMIT (the transaction was T)');
      await bank.implicitThenCommit('kept');
      expect([await ledger.rowsOf('bug-method'), await ledger.rowsOf('bug-orm')]).toEqual([0, 0]);
      expect([await ledger.rowsOf('kept-method'), await ledger.rowsOf('kept-orm')]).toEqual([1, 1]);
      await clean(before);
    });
  });
}

function failures(outcomes: PromiseSettledResult<void>[]): string[] {
  return outcomes.flatMap((o) => (o.status === 'rejected' ? [String((o.reason as Error)?.message ?? o.reason)] : []));
}

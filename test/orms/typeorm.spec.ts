// TypeORM 1.x on the pool through @nestjs/typeorm: `driver: typeormDriver(db)` in
// TypeOrmModule.forRootAsync, with the pool injected. The checks, and the driver's own
// refusals (settings that name another server, pool sizing given to TypeORM).
import { describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { TypeOrmModule, InjectDataSource } from '@nestjs/typeorm';
import pg from 'pg';
import { Column, DataSource, Entity, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
import { ConnectionPool, getPoolToken } from '../../lib/index.js';
import { pgConnector, typeormDriver } from '../../lib/connectors/pg/index.js';
import { ORM, ormChecks, poolModule, type OrmUnderTest, type TransferStep } from '../support/orm-checks.js';
import { DATABASE_URL, PgLedger } from '../support/pg-ledger.js';

const APP = 'nsp-orm-typeorm';
const ledger = new PgLedger('nsp_typeorm_accounts', 'nsp_typeorm_notes', 50, 10_000);

@Entity({ name: 'nsp_typeorm_accounts' })
class Account {
  @PrimaryColumn({ type: 'integer' })
  id!: number;
  @Column({ type: 'integer' })
  balance!: number;
}

@Entity({ name: 'nsp_typeorm_notes' })
class Note {
  @PrimaryGeneratedColumn()
  id!: number;
  @Column({ type: 'text' })
  who!: string;
}

@Injectable()
class TypeOrmBank implements OrmUnderTest {
  constructor(@InjectDataSource() readonly dataSource: DataSource) {}

  async transfer(steps: readonly [TransferStep, TransferStep], failHalfWay: () => void): Promise<void> {
    await this.dataSource.transaction(async (em) => {
      const accounts = em.getRepository(Account);
      await accounts.increment({ id: steps[0].id }, 'balance', steps[0].delta);
      await new Promise((resolve) => setImmediate(resolve));
      failHalfWay();
      await accounts.increment({ id: steps[1].id }, 'balance', steps[1].delta);
    });
  }

  async implicitWrite(who: string): Promise<void> {
    // save() wraps its insert in a transaction of its own.
    await this.dataSource.getRepository(Note).save({ who });
  }
}

const typeorm = TypeOrmModule.forRootAsync({
  inject: [getPoolToken('db')],
  useFactory: (db: ConnectionPool<pg.Client>) => ({
    type: 'postgres' as const,
    driver: typeormDriver(db),
    entities: [Account, Note],
  }),
});

ormChecks('TypeORM through @nestjs/typeorm', {
  ledger,
  application: APP,
  imports: [poolModule(APP), typeorm],
  providers: [TypeOrmBank, { provide: ORM, useExisting: TypeOrmBank }],
});

describe('typeormDriver()', () => {
  const pool = () => new ConnectionPool(pgConnector(`${DATABASE_URL}?application_name=${APP}`), { maxSize: 2 });

  it('refuses server settings that name another server, saying which, and leaves the pool open', async () => {
    const db = pool();
    const source = new DataSource({ type: 'postgres', driver: typeormDriver(db), database: 'elsewhere' });
    await expect(source.initialize()).rejects.toThrow(
      `TypeORM names database "elsewhere" but pool "${db.name}" connects to "test": the pool connects`,
    );
    expect(await db.use((c) => c.query('SELECT 1 AS one').then((r) => r.rows[0]))).toEqual({ one: 1 });
    await db.close();
  });

  it("refuses TypeORM's poolSize and a pg option in extra, naming the pool's option", async () => {
    const db = pool();
    await expect(
      new DataSource({ type: 'postgres', driver: typeormDriver(db), poolSize: 30 }).initialize(),
    ).rejects.toThrow(
      'option "poolSize" is the pool\'s to set: leave TypeORM\'s poolSize out and give the pool { maxSize }',
    );
    await expect(
      new DataSource({ type: 'postgres', driver: typeormDriver(db), extra: { statement_timeout: 5 } }).initialize(),
    ).rejects.toThrow('pg client settings go to the pool');
    await db.close();
  });

  it('takes the same server settings as given, routes each replication host to its pool, and destroy() leaves the pools open', async () => {
    const primary = pool();
    const replica = new ConnectionPool(pgConnector(`${DATABASE_URL}?application_name=${APP}-replica`), { maxSize: 2 });
    const hosts: string[] = [];
    const source = new DataSource({
      type: 'postgres',
      driver: typeormDriver((host) => {
        hosts.push(String(host.application_name));
        return host.application_name === 'replica' ? replica : primary;
      }),
      replication: {
        master: { host: '127.0.0.1', database: 'test', applicationName: 'primary' },
        slaves: [{ host: '127.0.0.1', database: 'test', applicationName: 'replica' }],
      },
    });
    await source.initialize();
    const app = async (mode: 'master' | 'slave') => {
      const runner = source.createQueryRunner(mode);
      try {
        const rows = (await runner.query("SELECT current_setting('application_name') AS app")) as { app: string }[];
        return rows[0]!.app;
      } finally {
        await runner.release();
      }
    };
    expect(await app('master')).toBe(APP);
    expect(await app('slave')).toBe(`${APP}-replica`);
    expect(hosts.sort()).toEqual(['primary', 'replica']);
    await source.destroy();
    expect(primary.stats().closed).toBe(false);
    await Promise.all([primary.close(), replica.close()]);
  });

  it("parseInt8 gives this DataSource's bigints as numbers, and nobody else's, over the face's own types", async () => {
    const db = pool();
    const source = new DataSource({ type: 'postgres', driver: typeormDriver(db), parseInt8: true });
    await source.initialize();
    expect(await source.query('SELECT 9007199254740991::int8 AS n')).toEqual([{ n: 9007199254740991 }]);
    expect(await db.use((c) => c.query('SELECT 7::int8 AS n').then((r) => r.rows[0]))).toEqual({ n: '7' });
    await source.destroy();
    const types = new pg.TypeOverrides();
    types.setTypeParser(1114, (text: string) => `timestamp ${text}`);
    const both = new DataSource({ type: 'postgres', driver: typeormDriver(db, { types }), parseInt8: true });
    await both.initialize();
    expect(await both.query("SELECT 7::int8 AS n, '2026-12-02 10:00:00'::timestamp AS t")).toEqual([
      { n: 7, t: 'timestamp 2026-12-02 10:00:00' },
    ]);
    await both.destroy();
    await db.close();
  });
});

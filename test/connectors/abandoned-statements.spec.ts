// A connection retired while its statement still runs (its reset outlived resetTimeoutMs behind
// it) has that statement cancelled at the server, against the real PostgreSQL and MariaDB: the
// statement stops, the row lock it held is released for another session, the close is bounded,
// and a cancel that cannot be made is logged.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { ConnectionPool } from '../../lib/index.js';
import { mysql2Connector } from '../../lib/connectors/mysql2/index.js';
import { pgConnector } from '../../lib/connectors/pg/index.js';
import { RecordingLogger } from '../support/harness.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { until } from '../support/wait.js';

const PG_URL = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';
const MYSQL = { host: '127.0.0.1', port: 3306, user: 'root', database: 'test' };
const TABLE = `nsp_abandoned_${process.pid}`;
const MARK = `nsp-abandoned-${process.pid}`;

describe('pgConnector: a statement left running on a retired connection is cancelled', () => {
  let observer: pg.Client;
  beforeAll(async () => {
    observer = new pg.Client(PG_URL);
    await observer.connect();
    await observer.query(`CREATE TABLE IF NOT EXISTS ${TABLE} (id int PRIMARY KEY, n int NOT NULL)`);
    await observer.query(`INSERT INTO ${TABLE} VALUES (1, 0) ON CONFLICT (id) DO NOTHING`);
  });
  afterAll(async () => {
    await observer.query(`DROP TABLE IF EXISTS ${TABLE}`);
    await observer.end();
  });

  const running = async (mark: string) =>
    Number(
      (
        await observer.query<{ n: string }>(
          `SELECT count(*) AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE $1 AND pid <> pg_backend_pid()`,
          [`%${mark}%`],
        )
      ).rows[0]!.n,
    );

  it('a hung reset retires the connection; its statement stops at once and its row lock is released', async () => {
    const logger = new RecordingLogger();
    const pool = new ConnectionPool(pgConnector(PG_URL), {
      name: 'pg-abandoned',
      maxSize: 1,
      resetTimeoutMs: 200,
      logger,
    });
    const mark = `${MARK}-pg`;
    await pool.use(async (client) => {
      await client.query('BEGIN');
      await client.query(`UPDATE ${TABLE} SET n = n + 1 WHERE id = 1`);
      void client.query(`SELECT pg_sleep(60) /* ${mark} */`).catch(() => {});
    });
    await until(() => pool.stats().counters.retired === 1, 3_000);
    await until(async () => (await running(mark)) === 0, 3_000);
    // The lock the abandoned transaction held is gone: another session updates the row at once.
    await observer.query(`SET lock_timeout = '2s'`);
    await observer.query(`UPDATE ${TABLE} SET n = n + 10 WHERE id = 1`);
    expect((await observer.query(`SELECT n FROM ${TABLE} WHERE id = 1`)).rows[0].n).toBe(10); // the +1 rolled back
    await pool.close();
    expect(logger.errors).toEqual([]);
  });

  it('a connection whose cancel cannot be sent is closed anyway, and the failure logged', async () => {
    const proxy = await TcpProxy.start({ host: '127.0.0.1', port: 5432 }, false);
    const logger = new RecordingLogger();
    const url = new URL(PG_URL);
    url.host = `127.0.0.1:${proxy.port}`;
    const pool = new ConnectionPool(pgConnector(url.toString()), {
      name: 'pg-no-cancel',
      maxSize: 1,
      resetTimeoutMs: 200,
      logger,
    });
    const mark = `${MARK}-refused`;
    try {
      await pool.use(async (client) => {
        void client.query(`SELECT pg_sleep(60) /* ${mark} */`).catch(() => {});
        proxy.refuse(); // the session stays, new connects are refused: the cancel cannot reach the server
      });
      await until(() => logger.errors.length > 0, 5_000);
      expect(logger.errors[0]).toMatch(/could not be cancelled, and may still run at the server/);
    } finally {
      await pool.close();
      await proxy.close();
      await observer.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE $1 AND pid <> pg_backend_pid()`,
        [`%${mark}%`],
      );
    }
  });
});

describe('mysql2Connector: a statement left running on a retired connection is killed', () => {
  let observer: mysql.Connection;
  beforeAll(async () => {
    observer = await mysql.createConnection(MYSQL);
    await observer.query(`CREATE TABLE IF NOT EXISTS ${TABLE} (id int PRIMARY KEY, n int NOT NULL) ENGINE=InnoDB`);
    await observer.query(`INSERT IGNORE INTO ${TABLE} VALUES (1, 0)`);
  });
  afterAll(async () => {
    await observer.query(`DROP TABLE IF EXISTS ${TABLE}`);
    await observer.end();
  });

  const running = async (mark: string) => {
    const [rows] = await observer.query<mysql.RowDataPacket[]>(
      `SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE INFO LIKE ? AND ID <> CONNECTION_ID()`,
      [`%${mark}%`],
    );
    return Number(rows[0]!.n);
  };

  it('a hung reset retires the connection; its statement is killed, its row lock released, the close not kept waiting', async () => {
    const logger = new RecordingLogger();
    const pool = new ConnectionPool(mysql2Connector(MYSQL), {
      name: 'mysql-abandoned',
      maxSize: 1,
      resetTimeoutMs: 200,
      closeTimeoutMs: 10_000,
      logger,
    });
    const mark = `${MARK}-mysql`;
    await pool.use(async (conn) => {
      await conn.query('START TRANSACTION');
      await conn.query(`UPDATE ${TABLE} SET n = n + 1 WHERE id = 1`);
      void conn.query(`SELECT SLEEP(60) /* ${mark} */`).catch(() => {});
    });
    await until(() => pool.stats().counters.retired === 1, 3_000);
    const started = Date.now();
    await until(async () => (await running(mark)) === 0, 3_000);
    await observer.query('SET SESSION innodb_lock_wait_timeout = 2');
    await observer.query(`UPDATE ${TABLE} SET n = n + 10 WHERE id = 1`);
    const [rows] = await observer.query<mysql.RowDataPacket[]>(`SELECT n FROM ${TABLE} WHERE id = 1`);
    expect(rows[0]!.n).toBe(10);
    await pool.close();
    expect(Date.now() - started).toBeLessThan(5_000); // not behind the SLEEP(60)
    expect(logger.errors).toEqual([]);
    expect(logger.warnings.filter((w) => /did not settle within closeTimeoutMs/.test(w))).toEqual([]);
  });
});

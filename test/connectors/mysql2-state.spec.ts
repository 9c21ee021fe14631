// The mysql2 connector's reset decided by what MariaDB reports, tried as an adversary would: a
// caller leaves a transaction, a table lock or a session change behind, spelt every way we could
// think of (lower case, comments, a procedure, a prepared statement, parameters), and the next
// caller on the same connection is checked from another session. Callers that leave nothing cost
// no statement of the pool's own.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import mysql from 'mysql2/promise';
import { ConnectionPool, type PoolLogger } from '../../lib/index.js';
import { mysql2Connector, type Mysql2Reset } from '../../lib/connectors/mysql2/index.js';
import { tenantLeaks, type TenantState } from '../support/connector-runs.js';
import { until } from '../support/wait.js';

const CONFIG = { host: '127.0.0.1', port: 3306, user: 'root', database: 'test' };
const TABLE = `nsp_state_${process.pid}`;
const OTHER = `nsp_state_other_${process.pid}`;
const PROC = `nsp_state_begin_${process.pid}`;
const quiet: PoolLogger = { warn: () => {}, error: () => {} };

let observer: mysql.Connection;

beforeAll(async () => {
  observer = await mysql.createConnection(CONFIG);
  for (const table of [TABLE, OTHER])
    await observer.query(
      `CREATE TABLE IF NOT EXISTS ${table} (id int AUTO_INCREMENT PRIMARY KEY, who varchar(64) NOT NULL) ENGINE=InnoDB`,
    );
  await observer.query(`DROP PROCEDURE IF EXISTS ${PROC}`);
  await observer.query(`CREATE PROCEDURE ${PROC}() BEGIN START TRANSACTION; END`);
});

afterAll(async () => {
  await observer.query(`DROP PROCEDURE IF EXISTS ${PROC}`);
  for (const table of [TABLE, OTHER]) await observer.query(`DROP TABLE IF EXISTS ${table}`);
  await observer.end();
});

async function rowsOf(who: string): Promise<number> {
  const [rows] = await observer.query<mysql.RowDataPacket[]>(`SELECT count(*) AS n FROM ${TABLE} WHERE who = ?`, [who]);
  return Number(rows[0]!.n);
}

const poolOf = (reset?: Mysql2Reset) =>
  new ConnectionPool(mysql2Connector(CONFIG, reset === undefined ? {} : { reset }), {
    name: 'mysql-state',
    maxSize: 1,
    logger: quiet,
  });

/** Statements the pool's one session has run, as MariaDB counts them (the SHOW included). */
const questions = (pool: ConnectionPool<mysql.Connection>) =>
  pool.use(async (conn) =>
    Number((await conn.query<mysql.RowDataPacket[]>("SHOW SESSION STATUS LIKE 'Questions'"))[0][0]!.Value),
  );

type Step = (conn: mysql.Connection) => Promise<unknown>;

/** Ways to begin a transaction that the server sees and no SQL-text matcher should be trusted with. */
const OPENS: [string, Step][] = [
  ["SET autocommit='OFF'", (c) => c.query("SET autocommit='OFF'")],
  ['set autocommit = off', (c) => c.query('set autocommit = off')],
  ['SET @@session.autocommit := 0', (c) => c.query('SET @@session.autocommit := 0')],
  ["execute('SET autocommit = ?', ['OFF'])", (c) => c.execute('SET autocommit = ?', ['OFF'])],
  ['START/**/TRANSACTION', (c) => c.query('START/**/TRANSACTION')],
  ['-- a comment, then begin', (c) => c.query('-- a comment\nbegin')],
  ['/*!50000 START TRANSACTION */', (c) => c.query('/*!50000 START TRANSACTION */')],
  ['BEGIN WORK', (c) => c.query('BEGIN WORK')],
  ['START TRANSACTION READ WRITE', (c) => c.query('START TRANSACTION READ WRITE')],
  ['a CALL of a procedure that begins one', (c) => c.query(`CALL ${PROC}()`)],
  ["query({ sql: 'START TRANSACTION' })", (c) => c.query({ sql: 'START TRANSACTION' })],
];

describe("mysql2Connector's reset reads the server, not the SQL", () => {
  it.each(OPENS)(
    'a transaction begun by %s and left open loses nothing of the next caller, and keeps what it left uncommitted',
    async (how, open) => {
      const tag = `t${OPENS.findIndex(([name]) => name === how)}`;
      const pool = poolOf();
      await expect(
        pool.use(async (conn) => {
          await open(conn);
          await conn.query(`INSERT INTO ${TABLE} (who) VALUES (?)`, [`${tag}-lost`]);
          throw new TypeError('a plain bug before COMMIT');
        }),
      ).rejects.toThrow('a plain bug');
      await pool.use((conn) => conn.execute(`INSERT INTO ${TABLE} (who) VALUES (?)`, [`${tag}-next`]));
      await pool.use((conn) => conn.query(`INSERT INTO ${TABLE} (who) VALUES (?)`, [`${tag}-later`]));
      expect(await rowsOf(`${tag}-next`)).toBe(1);
      expect(await rowsOf(`${tag}-later`)).toBe(1);
      expect(await rowsOf(`${tag}-lost`)).toBe(0);
      const [[{ ac }]] = await pool.use((conn) => conn.query<mysql.RowDataPacket[]>('SELECT @@autocommit AS ac'));
      expect(Number(ac)).toBe(1);
      expect(pool.stats().counters).toMatchObject({ opened: 1, retired: 0 }); // cleaned, not replaced
      await pool.close();
    },
  );

  it.each([
    ['LOCK TABLES … WRITE', `LOCK TABLES ${TABLE} WRITE`],
    ['lock table … read', `lock table ${TABLE} read`],
    ['/* c */ LOCK TABLES', `/* c */ LOCK TABLES ${TABLE} WRITE, ${OTHER} READ`],
  ])(
    '%s left behind is released: the next caller writes elsewhere, another session is not blocked',
    async (how, lock) => {
      const tag = `lock-${how.replace(/\W/g, '')}`;
      for (const reset of ['changed', 'transaction'] as const) {
        const pool = poolOf(reset);
        await pool.use((conn) => conn.query(lock));
        await pool.use((conn) => conn.query(`INSERT INTO ${OTHER} (who) VALUES ('after-lock')`));
        await observer.query('SET SESSION lock_wait_timeout = 2');
        await observer.query(`INSERT INTO ${TABLE} (who) VALUES (?)`, [tag]);
        await pool.close();
      }
      expect(await rowsOf(tag)).toBe(2);
    },
  );

  /** Session state a caller leaves, and how the next caller would see it (null: not there). */
  const SESSION: [string, Step, (c: mysql.Connection) => Promise<unknown>][] = [
    ['SET @tenant', (c) => c.query("SET @tenant = 'a'"), async (c) => first(c, 'SELECT @tenant AS v')],
    [
      'a user variable set in a SELECT',
      (c) => c.query("SELECT @tenant := 'b'"),
      async (c) => first(c, 'SELECT @tenant AS v'),
    ],
    ['set time_zone', (c) => c.query("set time_zone = '+05:00'"), async (c) => nonDefault(c, '@@time_zone', 'SYSTEM')],
    ['SET sql_mode', (c) => c.query("SET sql_mode = 'ANSI_QUOTES'"), async (c) => hasMode(c, 'ANSI_QUOTES')],
    [
      'a temporary table',
      (c) => c.query('CREATE TEMPORARY TABLE nsp_tmp (id int)'),
      async (c) => exists(c, 'SELECT * FROM nsp_tmp'),
    ],
    ['a prepared statement', (c) => c.query("PREPARE nsp_q FROM 'SELECT 1'"), async (c) => exists(c, 'EXECUTE nsp_q')],
    ['USE another schema', (c) => c.query('USE mysql'), async (c) => nonDefault(c, 'DATABASE()', 'test')],
    // Found from outside: changes the server does not report.
    ['SELECT … INTO @v', (c) => c.query('SELECT 1 INTO @tenant'), async (c) => first(c, 'SELECT @tenant AS v')],
    [
      'DO GET_LOCK()',
      (c) => c.query("DO GET_LOCK('nsp_state_lock', 0)"),
      async (c) => first(c, "SELECT IS_USED_LOCK('nsp_state_lock') = CONNECTION_ID() AS v"),
    ],
  ];

  it.each(SESSION)(
    "%s does not reach the next caller with the default reset, and does with 'transaction'",
    async (_, leave, seen) => {
      const pool = poolOf();
      await pool.use((conn) => leave(conn));
      expect(await pool.use((conn) => seen(conn))).toBeNull();
      expect(pool.stats().counters.retired).toBe(0);
      await pool.close();
      const keeping = poolOf('transaction');
      await keeping.use((conn) => leave(conn));
      expect(await keeping.use((conn) => seen(conn))).not.toBeNull(); // the check can fail
      await keeping.close();
    },
  );

  it.each<Mysql2Reset>(['changed', 'session'])(
    "after a session reset (%s) sql_mode is a fresh connection's, with what the client's flags add (IGNORE_SPACE)",
    async (reset) => {
      const fresh = await mysql.createConnection(CONFIG);
      const [rows] = await fresh.query<mysql.RowDataPacket[]>('SELECT @@session.sql_mode AS v');
      await fresh.end();
      const pool = poolOf(reset);
      await pool.use((conn) => conn.query("SET sql_mode = 'ANSI_QUOTES'"));
      const after = await pool.use((conn) => first(conn, 'SELECT @@session.sql_mode AS v'));
      expect(after).toBe(rows[0]!.v);
      expect(String(after).split(',')).toContain('IGNORE_SPACE');
      await pool.close();
    },
  );

  it('a changeUser() is never handed on: the connection is retired, and the next caller has the configured schema', async () => {
    const pool = poolOf();
    await pool.use((conn) => conn.changeUser({ database: 'mysql' }));
    expect(await pool.use((conn) => first(conn, 'SELECT DATABASE() AS v'))).toBe('test');
    expect(pool.stats().counters).toMatchObject({ opened: 2, retired: 1 });
    await pool.close();
  });

  it('a read-only transaction (BEGIN, SELECT, COMMIT or ROLLBACK) costs no statement of the pool', async () => {
    const pool = poolOf();
    const start = await questions(pool);
    for (const end of ['COMMIT', 'ROLLBACK'])
      for (let i = 0; i < 5; i++)
        await pool.use(async (conn) => {
          await conn.query('BEGIN');
          await conn.query(`SELECT COUNT(*) FROM ${TABLE}`);
          await conn.query(end);
        });
    expect((await questions(pool)) - start).toBe(30 + 1); // 10 × 3 statements, and the SHOW
    expect(pool.stats().counters.resets).toBe(0);
    await pool.close();
  });

  it("with the default reset, a tenant's session state never reaches another: 20 tenants, 500 interleaved calls", async () => {
    const pool = new ConnectionPool(mysql2Connector(CONFIG), { name: 'tenants', maxSize: 4, logger: quiet });
    const tenant: TenantState<mysql.Connection> = {
      read: async (conn) => (await first(conn, 'SELECT @tenant AS v')) as string | null,
      write: async (conn, name) => void (await conn.query('SET @tenant = ?', [name])),
    };
    expect(await tenantLeaks(pool, tenant, 500)).toBe(0);
    expect(pool.stats().counters.retired).toBe(0);
    await pool.close();
  });

  it('callers that leave nothing cost no statement of the pool; one that changes the session is reset once', async () => {
    const pool = poolOf();
    const start = await questions(pool);
    for (let i = 0; i < 30; i++) {
      if (i % 3 === 0) await pool.use((conn) => conn.query('SELECT 1'));
      else if (i % 3 === 1) await pool.use((conn) => conn.execute('SELECT ?', [i]));
      else
        await pool.use(async (conn) => {
          await conn.beginTransaction();
          await conn.query(`INSERT INTO ${TABLE} (who) VALUES ('committed')`);
          await conn.commit();
        });
    }
    // 10 + 10 statements, 10 × (START TRANSACTION, INSERT, COMMIT), the SHOW: nothing of the pool's.
    expect((await questions(pool)) - start).toBe(20 + 30 + 1);
    expect(pool.stats().counters.resets).toBe(0);
    await pool.use((conn) => conn.query("SET @left = 'x'"));
    await until(() => pool.stats().clients === 0);
    expect(pool.stats().counters.resets).toBe(1);
    expect(await pool.use((conn) => first(conn, 'SELECT @left AS v'))).toBeNull();
    await pool.close();
  });

  it('with SESSION_TRACK turned off in the config, nothing reports changes: every return resets the session', async () => {
    const pool = new ConnectionPool(mysql2Connector({ ...CONFIG, flags: ['-SESSION_TRACK'] }), {
      name: 'untracked',
      maxSize: 1,
      logger: quiet,
    });
    await pool.use((conn) => conn.query(`LOCK TABLES ${TABLE} WRITE`));
    await pool.use((conn) => conn.query(`INSERT INTO ${OTHER} (who) VALUES ('untracked')`));
    await pool.use((conn) => conn.query("SET @left = 'y'"));
    expect(await pool.use((conn) => first(conn, 'SELECT @left AS v'))).toBeNull();
    expect(pool.stats().counters.resets).toBe(4);
    await pool.close();
  });

  it('a failed statement (its error reports no state) counts as a change: a procedure that began a transaction, then failed', async () => {
    await observer.query(`DROP PROCEDURE IF EXISTS ${PROC}_fails`);
    await observer.query(
      `CREATE PROCEDURE ${PROC}_fails() BEGIN START TRANSACTION; INSERT INTO ${TABLE} (who) VALUES ('proc-lost'); SELECT * FROM nsp_no_such_table; END`,
    );
    const pool = poolOf();
    await pool.use((conn) => conn.query(`CALL ${PROC}_fails()`).catch(() => 'failed'));
    await pool.use((conn) => conn.query(`INSERT INTO ${TABLE} (who) VALUES ('proc-next')`));
    expect(await rowsOf('proc-next')).toBe(1);
    expect(await rowsOf('proc-lost')).toBe(0);
    await pool.close();
    await observer.query(`DROP PROCEDURE IF EXISTS ${PROC}_fails`);
  });
});

async function first(conn: mysql.Connection, sql: string): Promise<unknown> {
  const [rows] = await conn.query<mysql.RowDataPacket[]>(sql);
  return rows[0]!.v ?? null;
}

async function nonDefault(conn: mysql.Connection, expression: string, usual: string): Promise<unknown> {
  const [rows] = await conn.query<mysql.RowDataPacket[]>(`SELECT ${expression} AS v`);
  return rows[0]!.v === usual ? null : rows[0]!.v;
}

async function hasMode(conn: mysql.Connection, mode: string): Promise<unknown> {
  const [rows] = await conn.query<mysql.RowDataPacket[]>('SELECT @@sql_mode AS v');
  return String(rows[0]!.v).split(',').includes(mode) ? rows[0]!.v : null;
}

async function exists(conn: mysql.Connection, sql: string): Promise<unknown> {
  return conn.query(sql).then(
    () => 'there',
    () => null,
  );
}

// The mysql2 connector against the real MariaDB: the same guarantees as on PostgreSQL. A connection
// comes back clean (a transaction left open, a session's state with the session reset), at no round
// trip when callers end cleanly, and a killed connection or a server restart retires what broke.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import mysql from 'mysql2/promise';
import { ConnectionPool, PoolConfigError, type PoolLogger, type PoolOptions } from '../../lib/index.js';
import { mysql2Connector, type Mysql2ConnectorOptions } from '../../lib/connectors/mysql2/index.js';
import { tenantLeaks, throughOutage, type TenantState } from '../support/connector-runs.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { sleep, until } from '../support/wait.js';

const CONFIG = { host: '127.0.0.1', port: 3306, user: 'root', database: 'test' };
const TABLE = `nsp_mysql2_${process.pid}`;
const quiet: PoolLogger = { warn: () => {}, error: () => {} };

let observer: mysql.Connection;

beforeAll(async () => {
  observer = await mysql.createConnection(CONFIG);
  await observer.query(
    `CREATE TABLE IF NOT EXISTS ${TABLE} (id int AUTO_INCREMENT PRIMARY KEY, who varchar(64) NOT NULL) ENGINE=InnoDB`,
  );
});

afterAll(async () => {
  await observer.query(`DROP TABLE IF EXISTS ${TABLE}`);
  await observer.end();
});

async function rowsOf(who: string): Promise<number> {
  const [rows] = await observer.query<mysql.RowDataPacket[]>(`SELECT count(*) AS n FROM ${TABLE} WHERE who = ?`, [who]);
  return Number(rows[0]!.n);
}

function poolOf(
  options: Mysql2ConnectorOptions = {},
  pool: PoolOptions = {},
  config: string | mysql.ConnectionOptions = CONFIG,
) {
  return new ConnectionPool(mysql2Connector(config, options), { name: 'mysql', maxSize: 1, logger: quiet, ...pool });
}

async function bugBeforeCommit(
  pool: ConnectionPool<mysql.Connection>,
  tag: string,
  begin: (conn: mysql.Connection) => Promise<unknown>,
): Promise<void> {
  await expect(
    pool.use(async (conn) => {
      await begin(conn);
      await conn.query(`INSERT INTO ${TABLE} (who) VALUES (?)`, [`${tag}-lost`]);
      throw new TypeError('a plain bug before COMMIT');
    }),
  ).rejects.toThrow('a plain bug');
  await pool.use((conn) => conn.execute(`INSERT INTO ${TABLE} (who) VALUES (?)`, [`${tag}-next`]));
}

/** Statements this session has run (MariaDB counts them per session), read on the pool's one connection. */
const questions = (pool: ConnectionPool<mysql.Connection>) =>
  pool.use(async (conn) =>
    Number((await conn.query<mysql.RowDataPacket[]>("SHOW SESSION STATUS LIKE 'Questions'"))[0][0]!.Value),
  );

describe('mysql2Connector: a connection comes back clean', () => {
  it.each([
    ['beginTransaction()', (conn: mysql.Connection) => conn.beginTransaction()],
    ['START TRANSACTION', (conn: mysql.Connection) => conn.query('START TRANSACTION')],
    ['BEGIN', (conn: mysql.Connection) => conn.query('BEGIN')],
    ['SET autocommit = 0', (conn: mysql.Connection) => conn.query('SET autocommit = 0')],
  ])(
    "after a caller throws inside a transaction (%s), the next caller's autocommit write is visible to another session",
    async (how, begin) => {
      const tag = `rb-${how.replace(/\W/g, '')}`;
      const pool = poolOf();
      await bugBeforeCommit(pool, tag, begin);
      expect(await rowsOf(`${tag}-next`)).toBe(1);
      expect(await rowsOf(`${tag}-lost`)).toBe(0);
      expect(pool.stats().counters).toMatchObject({ resets: 1, resetFailures: 0, retired: 0 }); // cleaned, not replaced
      await pool.close();
    },
  );

  it('without the reset the same calls lose the write: the check can fail', async () => {
    const pool = poolOf({ reset: false });
    await bugBeforeCommit(pool, 'no-reset', (conn) => conn.beginTransaction());
    expect(await rowsOf('no-reset-next')).toBe(0);
    await pool.close();
    expect(await rowsOf('no-reset-next')).toBe(0);
  });

  it('a statement still running when its caller leaves is rolled back behind it', async () => {
    const pool = poolOf();
    await pool.use(async (conn) => {
      await conn.beginTransaction();
      void conn.query(`INSERT INTO ${TABLE} (who) SELECT 'unawaited' FROM (SELECT SLEEP(0.05)) s`).catch(() => {});
    });
    await pool.use((conn) => conn.query(`INSERT INTO ${TABLE} (who) VALUES ('after-unawaited')`));
    expect(await rowsOf('unawaited')).toBe(0);
    expect(await rowsOf('after-unawaited')).toBe(1);
    await pool.close();
  });

  it('callers that end cleanly cost no statement beyond their own; a left transaction one ROLLBACK', async () => {
    const pool = poolOf();
    const start = await questions(pool);
    for (let i = 0; i < 50; i++)
      await pool.use((conn) => (i % 2 === 0 ? conn.query('SELECT 1') : conn.execute('SELECT ?', [i])));
    await pool.use(async (conn) => {
      await conn.beginTransaction();
      await conn.commit();
    });
    // 50 statements, BEGIN and COMMIT, and the SHOW that reads the count: nothing of the pool's own.
    expect((await questions(pool)) - start).toBe(53);
    await pool.use((conn) => conn.beginTransaction());
    await until(() => pool.stats().clients === 0);
    expect((await questions(pool)) - start).toBe(53 + 2 + 1); // START TRANSACTION, its ROLLBACK, the SHOW
    expect(pool.stats().counters).toMatchObject({ resets: 1, resetFailures: 0 });
    await pool.close();
  });

  const mysqlTenant: TenantState<mysql.Connection> = {
    read: async (conn) => (await conn.query<mysql.RowDataPacket[]>('SELECT @tenant AS t'))[0][0]!.t as string | null,
    write: async (conn, tenant) => void (await conn.query('SET @tenant = ?', [tenant])),
  };

  async function tenants(reset: Mysql2ConnectorOptions['reset'], calls = 500): Promise<number> {
    const pool = poolOf({ reset }, { maxSize: 4 });
    const leaks = await tenantLeaks(pool, mysqlTenant, calls);
    await pool.close();
    return leaks;
  }

  it("with the session reset, a tenant's session state never reaches another: 20 tenants, 500 interleaved calls, 0 leaks", async () => {
    expect(await tenants('session')).toBe(0);
  });

  it('with only the transaction reset, session state does leak: the check can fail', async () => {
    expect(await tenants('transaction', 100)).toBeGreaterThan(0);
  });

  it('prepared statements keep working after a session reset', async () => {
    const pool = poolOf({ reset: 'session' });
    for (let i = 0; i < 3; i++) {
      const [rows] = await pool.use((conn) => conn.execute<mysql.RowDataPacket[]>('SELECT ? + 0 AS n', [i]));
      expect(Number(rows[0]!.n)).toBe(i);
    }
    await pool.close();
  });
});

describe('mysql2Connector: broken connections', () => {
  const alive = async (ids: number[]) => {
    if (ids.length === 0) return 0;
    const [rows] = await observer.query<mysql.RowDataPacket[]>(
      'SELECT count(*) AS n FROM information_schema.PROCESSLIST WHERE ID IN (?)',
      [ids],
    );
    return Number(rows[0]!.n);
  };

  it('killed connections are retired, idle or in use; callers go on; nothing leaks', async () => {
    const pool = poolOf({}, { maxSize: 3, minSize: 3 });
    await pool.warmup();
    const ids = new Set<number>();
    const idOf = (conn: mysql.Connection) =>
      conn.query<mysql.RowDataPacket[]>('SELECT CONNECTION_ID() AS id').then(([rows]) => Number(rows[0]!.id));
    // The pool's own sessions, one per connection (three at once on three): only these are killed,
    // never those of a spec running beside this one on the same server.
    await Promise.all(
      Array.from({ length: 3 }, () =>
        pool.use(async (conn) => {
          ids.add(await idOf(conn));
          await sleep(20);
        }),
      ),
    );
    expect(ids.size).toBe(3);
    const holding = pool.use(async (conn) => {
      await conn.beginTransaction();
      await conn.query('SELECT SLEEP(0.5)');
    });
    await sleep(50);
    for (const id of [...ids]) await observer.query('KILL ?', [id]).catch(() => {});
    await expect(holding).rejects.toThrow();
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        pool.use(async (conn) => (ids.add(await idOf(conn)), i), { retry: { attempts: 3 } }),
      ),
    );
    expect(results).toEqual(Array.from({ length: 30 }, (_, i) => i));
    expect(pool.stats().counters.retired).toBeGreaterThanOrEqual(1);
    await pool.close();
    await until(async () => (await alive([...ids])) === 0);
  });

  it('a server restart mid-run: sessions cut, connects refused, then served again; nothing hangs or leaks', async () => {
    const proxy = await TcpProxy.start({ host: '127.0.0.1', port: 3306 });
    const pool = poolOf(
      {},
      { maxSize: 4, minSize: 2, acquireTimeoutMs: 3_000, createTimeoutMs: 1_000 },
      { ...CONFIG, port: proxy.port, connectTimeout: 1_000 },
    );
    try {
      await pool.warmup();
      await throughOutage(proxy, () =>
        pool.use((conn) => conn.query('SELECT SLEEP(0.005)'), { retry: { attempts: 3, baseDelayMs: 20 } }),
      );
      const { counters } = pool.stats();
      expect(counters.retired).toBeGreaterThanOrEqual(2);
      expect(counters.createFailures).toBeGreaterThan(0);
      expect(pool.stats()).toMatchObject({ clients: 0, waiting: 0 });
      const [rows] = await pool.use((conn) => conn.query<mysql.RowDataPacket[]>('SELECT 1 AS one'));
      expect(rows[0]!.one).toBe(1);
    } finally {
      await pool.close();
      expect(pool.stats().size).toBe(0);
      await until(() => proxy.sessions === 0);
      await proxy.close();
    }
  });
});

describe('mysql2Connector options', () => {
  it.each([
    [{ reset: 'sesion' }, /option "reset" must be 'changed', 'transaction', 'session' or false, got "sesion"/],
    [{ rest: 'session' }, /did you mean "reset"\?/],
  ])('%p is refused, saying what to change', (options, message) => {
    expect(() => mysql2Connector(CONFIG, options as Mysql2ConnectorOptions)).toThrow(PoolConfigError);
    expect(() => mysql2Connector(CONFIG, options as Mysql2ConnectorOptions)).toThrow(message);
  });

  it('a config that is neither a URI nor options is refused', () => {
    expect(() => mysql2Connector(7 as unknown as string)).toThrow(
      /must be a connection URI \(mysql:\/\/user@host:3306\/db\) or mysql2 connection options, got 7/,
    );
  });

  it('a URI works as well as options', async () => {
    const pool = poolOf({}, {}, 'mysql://root@127.0.0.1:3306/test');
    const [rows] = await pool.use((conn) => conn.query<mysql.RowDataPacket[]>('SELECT DATABASE() AS db'));
    expect(rows[0]!.db).toBe('test');
    await pool.close();
  });
});

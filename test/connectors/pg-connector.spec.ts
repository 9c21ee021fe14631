// The pg connector against the real PostgreSQL: connections come back clean (a transaction a
// caller left open, a tenant's session setting), at no round trip when callers end cleanly, and a
// killed backend or a server restart retires what broke while the pool serves on.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import pg from 'pg';
import {
  ConnectionPool,
  InjectPool,
  PoolConfigError,
  PoolModule,
  UsePooled,
  type PoolOptions,
  type PoolLogger,
} from '../../lib/index.js';
import { pgConnector, type PgConnectorOptions } from '../../lib/connectors/pg/index.js';
import { RecordingLogger } from '../support/harness.js';
import { boot } from '../support/nest.js';
import { tenantLeaks, throughOutage, type TenantState } from '../support/connector-runs.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { sleep, until } from '../support/wait.js';

const URL = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';
const TABLE = `nsp_pg_connector_${process.pid}`;

/** Another session, outside every pool: what the rest of the world sees. */
let observer: pg.Client;

beforeAll(async () => {
  observer = new pg.Client(URL);
  await observer.connect();
  await observer.query(`CREATE TABLE IF NOT EXISTS ${TABLE} (id serial PRIMARY KEY, who text NOT NULL)`);
});

afterAll(async () => {
  await observer.query(`DROP TABLE IF EXISTS ${TABLE}`);
  await observer.end();
});

async function rowsOf(who: string): Promise<number> {
  const { rows } = await observer.query<{ n: string }>(`SELECT count(*) AS n FROM ${TABLE} WHERE who = $1`, [who]);
  return Number(rows[0]!.n);
}

const quiet: PoolLogger = { warn: () => {}, error: () => {} };

function poolOf(options: PgConnectorOptions = {}, pool: PoolOptions = {}, url: string | pg.ClientConfig = URL) {
  return new ConnectionPool(pgConnector(url, options), { name: 'pg', maxSize: 1, logger: quiet, ...pool });
}

/** One caller opens a transaction, writes, then a plain bug throws before COMMIT; the next writes in autocommit. */
async function bugBeforeCommit(pool: ConnectionPool<pg.Client>, tag: string): Promise<void> {
  await expect(
    pool.use(async (client) => {
      await client.query('BEGIN');
      await client.query(`INSERT INTO ${TABLE} (who) VALUES ($1)`, [`${tag}-lost`]);
      throw new TypeError('a plain bug before COMMIT');
    }),
  ).rejects.toThrow('a plain bug');
  await pool.use((client) => client.query(`INSERT INTO ${TABLE} (who) VALUES ($1)`, [`${tag}-next`]));
}

describe('pgConnector: a connection comes back clean', () => {
  it("after a caller throws inside a transaction, the next caller's autocommit write is visible to another session", async () => {
    const pool = poolOf();
    await bugBeforeCommit(pool, 'rollback');
    expect(await rowsOf('rollback-next')).toBe(1);
    expect(await rowsOf('rollback-lost')).toBe(0);
    expect(pool.stats().counters).toMatchObject({ resets: 1, resetFailures: 0, retired: 0 });
    await pool.close();
  });

  it('without the reset the same calls lose the write, as pg-pool does: the check can fail', async () => {
    const pool = poolOf({ reset: false });
    await bugBeforeCommit(pool, 'no-reset');
    expect(await rowsOf('no-reset-next')).toBe(0); // inside the open transaction: nobody else sees it
    await pool.close(); // and the close loses it for good
    expect(await rowsOf('no-reset-next')).toBe(0);
  });

  it('a failed transaction (status E) is rolled back too', async () => {
    const pool = poolOf();
    await expect(
      pool.use(async (client) => {
        await client.query('BEGIN');
        await client.query('SELECT 1 / 0');
      }),
    ).rejects.toThrow('division by zero');
    expect(await pool.use((client) => client.getTransactionStatus())).toBe('I');
    expect(await pool.use((client) => client.query('SELECT 1 AS one').then((r) => r.rows[0].one))).toBe(1);
    await pool.close();
  });

  it('a statement still running when its caller leaves is rolled back behind it', async () => {
    const pool = poolOf();
    await pool.use(async (client) => {
      await client.query('BEGIN');
      void client.query(`INSERT INTO ${TABLE} (who) VALUES ('unawaited') RETURNING pg_sleep(0.05)`).catch(() => {});
    });
    expect(await pool.use((client) => client.getTransactionStatus())).toBe('I');
    expect(await rowsOf('unawaited')).toBe(0);
    await pool.close();
  });

  const pgTenant: TenantState<pg.Client> = {
    read: async (client) =>
      (await client.query<{ t: string | null }>("SELECT current_setting('app.tenant', true) AS t")).rows[0]!.t,
    write: async (client, tenant) => void (await client.query("SELECT set_config('app.tenant', $1, false)", [tenant])),
  };

  async function tenants(reset: PgConnectorOptions['reset'], calls = 500): Promise<number> {
    const pool = poolOf({ reset }, { maxSize: 4 });
    const leaks = await tenantLeaks(pool, pgTenant, calls);
    await pool.close();
    return leaks;
  }

  it("with the session reset, a tenant's setting never reaches another tenant: 20 tenants, 500 interleaved calls, 0 leaks", async () => {
    expect(await tenants('session')).toBe(0);
    expect(await tenants({ statement: 'RESET ALL' }, 200)).toBe(0);
  });

  it('with only the transaction reset, session settings do leak: the check can fail', async () => {
    expect(await tenants('transaction', 100)).toBeGreaterThan(0);
  });

  it('SET LOCAL inside a transaction, the documented pattern, never leaks with the default reset', async () => {
    const pool = poolOf({}, { maxSize: 4 });
    let leaks = 0;
    await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        pool
          .use(async (client) => {
            const seen = await client.query<{ t: string | null }>("SELECT current_setting('app.tenant', true) AS t");
            if ((seen.rows[0]!.t ?? '') !== '') leaks++;
            await client.query('BEGIN');
            await client.query("SELECT set_config('app.tenant', $1, true)", [`tenant-${i % 20}`]); // SET LOCAL
            if (i % 7 === 0) throw new Error('the tenant code failed');
            await client.query('COMMIT');
          })
          .catch((err: Error) => expect(err.message).toBe('the tenant code failed')),
      ),
    );
    expect(leaks).toBe(0);
    await pool.close();
  });

  it('named prepared statements keep working after a session reset', async () => {
    const pool = poolOf({ reset: 'session' });
    for (let i = 0; i < 3; i++) {
      const { rows } = await pool.use((client) =>
        client.query({ name: 'nsp-one', text: 'SELECT $1::int AS n', values: [i] }),
      );
      expect(rows[0].n).toBe(i);
    }
    await pool.close();
  });
});

describe('pgConnector: what a reset costs, counted at the server', () => {
  let proxy: TcpProxy;
  beforeAll(async () => {
    proxy = await TcpProxy.start();
  });
  afterAll(() => proxy.close());

  it('callers that end cleanly cost no statement beyond their own; a left transaction one ROLLBACK', async () => {
    const pool = poolOf({}, { maxSize: 3, minSize: 3 }, proxy.url);
    await pool.warmup();
    const start = proxy.statements;
    await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        pool.use((client) => (i % 2 === 0 ? client.query('SELECT 1') : client.query('SELECT $1::int', [i]))),
      ),
    );
    expect(proxy.statements - start).toBe(300);
    await pool.use(async (client) => {
      await client.query('BEGIN');
    });
    await until(() => pool.stats().clients === 0); // the caller has left; its ROLLBACK is under way
    expect(proxy.statements - start).toBe(302);
    expect(proxy.queries.slice(-1)).toEqual(['ROLLBACK']);
    expect(pool.stats().counters.resets).toBe(1);
    await pool.close();
  });

  it('the session reset costs one DISCARD ALL per call', async () => {
    const pool = poolOf({ reset: 'session' }, { maxSize: 2, minSize: 2 }, proxy.url);
    await pool.warmup();
    const start = proxy.statements;
    await Promise.all(Array.from({ length: 50 }, () => pool.use((client) => client.query('SELECT 1'))));
    await until(() => pool.stats().clients === 0);
    expect(proxy.statements - start).toBe(100);
    expect(proxy.queries.filter((q) => q === 'DISCARD ALL').length).toBeGreaterThanOrEqual(50);
    await pool.close();
  });
});

describe('pgConnector: broken connections', () => {
  const sessionsOf = async (app: string) =>
    Number(
      (
        await observer.query<{ n: string }>('SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1', [
          app,
        ])
      ).rows[0]!.n,
    );

  it('a killed backend is retired, idle or in use; callers go on; nothing leaks', async () => {
    const app = `nsp-kill-${process.pid}`;
    const logger = new RecordingLogger();
    const pool = new ConnectionPool(pgConnector({ connectionString: URL, application_name: app }), {
      name: 'pg-kill',
      maxSize: 3,
      minSize: 3,
      logger,
    });
    await pool.warmup();
    const holding = pool.use(async (client) => {
      await client.query('BEGIN');
      await client.query('SELECT pg_sleep(0.3)'); // killed under it
    });
    await sleep(50);
    await observer.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [app]);
    await expect(holding).rejects.toThrow(/terminat/i);
    // Every later call is served, on new connections, with no error reaching the caller.
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        pool.use((client) => client.query('SELECT $1::int AS n', [i]), { retry: { attempts: 3 } }),
      ),
    );
    expect(results.map((r) => r.rows[0].n)).toEqual(Array.from({ length: 30 }, (_, i) => i));
    await until(() => pool.stats().ready === 3);
    const { counters } = pool.stats();
    expect(counters.retired).toBeGreaterThanOrEqual(3);
    expect(counters.retiredBy.connector + counters.retiredBy.failed + counters.retiredBy.reset).toBe(counters.retired);
    await pool.close();
    await until(async () => (await sessionsOf(app)) === 0);
  });

  it('a connection killed while its caller holds a transaction is never handed out again', async () => {
    const app = `nsp-kill-held-${process.pid}`;
    const pool = new ConnectionPool(pgConnector({ connectionString: URL, application_name: app }), {
      name: 'pg-kill-held',
      maxSize: 1,
      logger: quiet,
    });
    const first = await pool.use(async (client) => {
      await client.query('BEGIN');
      const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      await observer.query('SELECT pg_terminate_backend($1)', [pid]);
      await sleep(50);
      return pid;
    });
    const second = await pool.use(
      async (client) => (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid,
    );
    expect(second).not.toBe(first);
    await pool.close();
    await until(async () => (await sessionsOf(app)) === 0);
  });

  it('a server restart mid-run: sessions cut, connects refused, then served again; nothing hangs or leaks', async () => {
    const proxy = await TcpProxy.start();
    const pool = new ConnectionPool(pgConnector(proxy.url), {
      name: 'pg-restart',
      maxSize: 4,
      minSize: 2,
      logger: quiet,
      acquireTimeoutMs: 3_000,
      createTimeoutMs: 1_000,
    });
    try {
      await pool.warmup();
      await throughOutage(proxy, () =>
        pool.use((client) => client.query('SELECT pg_sleep(0.005)'), { retry: { attempts: 3, baseDelayMs: 20 } }),
      );
      // The outage was real: every session was cut, and connects were refused while it lasted.
      const { counters } = pool.stats();
      expect(counters.retired).toBeGreaterThanOrEqual(2);
      expect(counters.createFailures).toBeGreaterThan(0);
      expect(pool.stats()).toMatchObject({ clients: 0, waiting: 0 });
      expect(await pool.use((client) => client.query('SELECT 1 AS one').then((r) => r.rows[0].one))).toBe(1);
    } finally {
      await pool.close();
      expect(pool.stats().size).toBe(0);
      await until(() => proxy.sessions === 0);
      await proxy.close();
    }
  });
});

describe('pgConnector: through @UsePooled', () => {
  @Injectable()
  class Accounts {
    constructor(@InjectPool('pg') readonly pool: ConnectionPool<pg.Client>) {}

    @UsePooled('pg')
    async transferThenBug(tag: string): Promise<void> {
      await this.pool.current.query('BEGIN');
      await this.pool.current.query(`INSERT INTO ${TABLE} (who) VALUES ($1)`, [`${tag}-lost`]);
      throw new Error('a bug before COMMIT');
    }

    @UsePooled('pg')
    async write(who: string): Promise<void> {
      await this.pool.current.query(`INSERT INTO ${TABLE} (who) VALUES ($1)`, [who]);
    }

    @UsePooled('pg')
    async asTenant(tenant: string): Promise<string> {
      const { rows } = await this.pool.current.query<{ t: string | null }>(
        "SELECT current_setting('app.tenant', true) AS t",
      );
      await this.pool.current.query("SELECT set_config('app.tenant', $1, false)", [tenant]);
      return rows[0]!.t ?? '';
    }
  }

  it('a method that throws mid-transaction leaves the next method a clean connection; tenants never leak', async () => {
    const moduleRef = await boot({
      imports: [
        PoolModule.forRoot({
          pools: [
            { name: 'pg', connector: pgConnector(URL, { reset: 'session' }), options: { maxSize: 2, logger: quiet } },
          ],
        }),
      ],
      providers: [Accounts],
    });
    const accounts = moduleRef.get(Accounts);
    await expect(accounts.transferThenBug('nest')).rejects.toThrow('a bug before COMMIT');
    await expect(accounts.transferThenBug('nest')).rejects.toThrow('a bug before COMMIT');
    await accounts.write('nest-next');
    expect(await rowsOf('nest-next')).toBe(1);
    expect(await rowsOf('nest-lost')).toBe(0);
    const seen = await Promise.all(Array.from({ length: 500 }, (_, i) => accounts.asTenant(`tenant-${i % 20}`)));
    expect(seen.filter((t) => t !== '')).toEqual([]);
  });
});

describe('pgConnector options', () => {
  it.each([
    [{ reset: 'sesion' }, /option "reset" must be 'changed', 'transaction', 'session', false or \{ statement/],
    [{ reset: { statement: '' } }, /option "reset" must be/],
    [{ rest: 'session' }, /option "rest" is not one of pgConnector\(\)'s options: did you mean "reset"\?/],
    [{ Client: 'pg.Client' }, /option "Client" must be a function/],
  ])('%p is refused, saying what to change', (options, message) => {
    expect(() => pgConnector(URL, options as PgConnectorOptions)).toThrow(PoolConfigError);
    expect(() => pgConnector(URL, options as PgConnectorOptions)).toThrow(message);
  });

  it('a pg older than 8.21 (no getTransactionStatus) fails its creates with the fix, unless the reset is off', async () => {
    class OldClient extends pg.Client {
      declare getTransactionStatus: never;
      constructor(config: string | pg.ClientConfig) {
        super(config);
        Object.defineProperty(this, 'getTransactionStatus', { value: undefined });
      }
    }
    const old = new ConnectionPool(pgConnector(URL, { Client: OldClient }), {
      name: 'old-pg',
      logger: quiet,
      createTimeoutMs: 1_000,
    });
    await expect(old.use(() => 1, { timeoutMs: 500 })).rejects.toMatchObject({
      cause: { cause: { message: expect.stringMatching(/npm install pg@\^8\.21 \(or pass \{ reset: false \}\)/) } },
    });
    await old.close();
    const plain = new ConnectionPool(pgConnector(URL, { Client: OldClient, reset: false }), {
      name: 'old-pg-plain',
      logger: quiet,
    });
    expect(await plain.use((c) => c.query('SELECT 2 AS n').then((r) => r.rows[0].n))).toBe(2);
    await plain.close();
  });

  it('a client that is neither a string nor a config is refused', () => {
    expect(() => pgConnector(42 as unknown as string)).toThrow(
      /must be a connection string \(postgres:\/\/user@host:5432\/db, or key=value pairs\) or a pg.ClientConfig, got 42/,
    );
  });

  it('sharing its clients needs the reset off, and the pool says so', () => {
    expect(() => new ConnectionPool(pgConnector(URL), { name: 'shared', clientLimit: 10 })).toThrow(
      /pgConnector\(url, \{ reset: false \}\)/,
    );
    expect(
      new ConnectionPool(pgConnector(URL, { reset: false }), { name: 'shared', clientLimit: 10 }).options.clientLimit,
    ).toBe(10);
  });
});

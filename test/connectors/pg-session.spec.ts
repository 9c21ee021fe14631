// The pg connector's default reset decided by what PostgreSQL reports (command tags and
// ParameterStatus), tried as an adversary would: a caller leaves a role, a search path, a date
// style, a temporary table, a prepared statement, a setting, a LISTEN or an advisory lock
// behind, in several spellings, and the next caller on the same connection must not see it.
// Callers that leave nothing cost no statement of the pool's own (counted at a proxy).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { ConnectionPool, type PoolLogger } from '../../lib/index.js';
import { pgConnector, type PgReset } from '../../lib/connectors/pg/index.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { until } from '../support/wait.js';

const URL = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';
const ROLE = `nsp_reader_${process.pid}`;
const SCHEMA = `nsp_tenant_${process.pid}`;
const quiet: PoolLogger = { warn: () => {}, error: () => {} };

let admin: pg.Client;

beforeAll(async () => {
  admin = new pg.Client(URL);
  await admin.connect();
  await admin.query(`DROP ROLE IF EXISTS ${ROLE}`);
  await admin.query(`CREATE ROLE ${ROLE} NOLOGIN`);
  await admin.query(`CREATE SCHEMA IF NOT EXISTS ${SCHEMA}`);
});

afterAll(async () => {
  await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await admin.query(`DROP ROLE IF EXISTS ${ROLE}`);
  await admin.end();
});

const poolOf = (reset?: PgReset, url = URL) =>
  new ConnectionPool(pgConnector(url, reset === undefined ? {} : { reset }), {
    name: 'pg-session',
    maxSize: 1,
    logger: quiet,
  });

type Step = (c: pg.Client) => Promise<unknown>;
const value = async (c: pg.Client, sql: string) => Object.values((await c.query(sql)).rows[0] as object)[0];

/** State a caller leaves, and what the next caller reads of it (null: as a fresh session). */
const LEFT: [string, Step, Step][] = [
  [
    'SET ROLE',
    (c) => c.query(`SET ROLE ${ROLE}`),
    async (c) => nonDefault(await value(c, 'SELECT current_user'), 'postgres'),
  ],
  [
    'set role (lower case, a comment)',
    (c) => c.query(`/* x */ set role ${ROLE}`),
    async (c) => nonDefault(await value(c, 'SELECT current_user'), 'postgres'),
  ],
  [
    'SET SESSION AUTHORIZATION',
    (c) => c.query(`SET SESSION AUTHORIZATION ${ROLE}`),
    async (c) => nonDefault(await value(c, 'SELECT session_user'), 'postgres'),
  ],
  [
    "set_config('role', …, false)",
    (c) => c.query(`SELECT set_config('role', '${ROLE}', false)`),
    async (c) => nonDefault(await value(c, 'SELECT current_user'), 'postgres'),
  ],
  [
    'SET search_path',
    (c) => c.query(`SET search_path = ${SCHEMA}`),
    async (c) => nonDefault(await value(c, 'SHOW search_path'), '"$user", public'),
  ],
  [
    "set_config('search_path', …)",
    (c) => c.query(`SELECT set_config('search_path', $1, false)`, [SCHEMA]),
    async (c) => nonDefault(await value(c, 'SHOW search_path'), '"$user", public'),
  ],
  [
    'SET DateStyle',
    (c) => c.query("SET DateStyle = 'SQL, DMY'"),
    async (c) => nonDefault(await value(c, 'SHOW DateStyle'), 'ISO, MDY'),
  ],
  [
    'SET TIME ZONE',
    (c) => c.query("SET TIME ZONE 'Asia/Tokyo'"),
    async (c) => nonDefault(await value(c, 'SHOW TimeZone'), 'Etc/UTC'),
  ],
  [
    'a custom setting',
    (c) => c.query("SET app.tenant = 'a'"),
    async (c) => nonDefault(await value(c, "SELECT current_setting('app.tenant', true)"), ''),
  ],
  [
    'CREATE TEMP TABLE',
    (c) => c.query('CREATE TEMP TABLE nsp_tmp (id int)'),
    async (c) => exists(c, 'SELECT * FROM nsp_tmp'),
  ],
  [
    'CREATE TEMPORARY TABLE … AS',
    (c) => c.query('CREATE TEMPORARY TABLE nsp_tmp2 AS SELECT 1 AS id'),
    async (c) => exists(c, 'SELECT * FROM nsp_tmp2'),
  ],
  ['PREPARE', (c) => c.query('PREPARE nsp_q AS SELECT 1'), async (c) => exists(c, 'EXECUTE nsp_q')],
  [
    'LISTEN',
    (c) => c.query('LISTEN nsp_channel'),
    async (c) => nonDefault(await value(c, 'SELECT count(*)::int FROM pg_listening_channels()'), 0),
  ],
  [
    'an advisory lock',
    (c) => c.query('SELECT pg_advisory_lock(4242)'),
    async (c) =>
      nonDefault(
        await value(c, "SELECT count(*)::int FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"),
        0,
      ),
  ],
  // Found from outside: spellings the text fallback missed.
  [
    'a quoted "set_config"',
    (c) => c.query(`SELECT "set_config"('search_path', '${SCHEMA}', false)`),
    async (c) => nonDefault(await value(c, 'SHOW search_path'), '"$user", public'),
  ],
  [
    'set_config with a comment before its arguments',
    (c) => c.query(`SELECT set_config/**/('search_path', '${SCHEMA}', false)`),
    async (c) => nonDefault(await value(c, 'SHOW search_path'), '"$user", public'),
  ],
  [
    'pg_try_advisory_lock_shared',
    (c) => c.query('SELECT pg_try_advisory_lock_shared(4243)'),
    async (c) =>
      nonDefault(
        await value(c, "SELECT count(*)::int FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"),
        0,
      ),
  ],
  [
    'CREATE TEMP VIEW',
    (c) => c.query('CREATE TEMP VIEW nsp_tmpv AS SELECT 1 AS id'),
    async (c) => exists(c, 'SELECT * FROM nsp_tmpv'),
  ],
  [
    'CREATE TEMP SEQUENCE',
    (c) => c.query('CREATE TEMP SEQUENCE nsp_tmps'),
    async (c) => exists(c, "SELECT nextval('nsp_tmps')"),
  ],
  [
    'SELECT … INTO TEMP',
    (c) => c.query('SELECT 1 AS id INTO TEMP nsp_tmpi'),
    async (c) => exists(c, 'SELECT * FROM nsp_tmpi'),
  ],
];

describe("pgConnector's default reset reads the server, not the SQL", () => {
  it.each(LEFT)("%s does not reach the next caller; under 'transaction' it does", async (_, leave, read) => {
    const pool = poolOf();
    await pool.use((c) => leave(c));
    expect(await pool.use((c) => read(c))).toBeNull();
    expect(pool.stats().counters).toMatchObject({ opened: 1, retired: 0 }); // cleaned, not replaced
    await pool.close();
    const keeping = poolOf('transaction');
    await keeping.use((c) => leave(c));
    expect(await keeping.use((c) => read(c))).not.toBeNull(); // the check can fail
    await keeping.close();
  });

  it('a role set inside a transaction left open, and a statement still running, are cleaned too', async () => {
    const pool = poolOf();
    await pool.use(async (c) => {
      await c.query('BEGIN');
      await c.query(`SET ROLE ${ROLE}`);
    });
    expect(await pool.use((c) => value(c, 'SELECT current_user'))).toBe('postgres');
    await pool.use(async (c) => {
      void c.query(`SELECT pg_sleep(0.05); SET search_path = ${SCHEMA}`).catch(() => {});
    });
    expect(await pool.use((c) => value(c, 'SHOW search_path'))).toBe('"$user", public');
    await pool.close();
  });

  it('named prepared statements keep working across session resets (pg prepares them again)', async () => {
    const pool = poolOf();
    for (let i = 0; i < 4; i++) {
      const { rows } = await pool.use(async (c) => {
        if (i % 2 === 0) await c.query("SET app.tenant = 'x'"); // a change: the return resets the session
        return c.query({ name: 'nsp_named', text: 'SELECT $1::int AS n', values: [i] });
      });
      expect(rows[0].n).toBe(i);
    }
    await pool.close();
  });

  describe('at a counting proxy', () => {
    let proxy: TcpProxy;
    beforeAll(async () => {
      proxy = await TcpProxy.start();
    });
    afterAll(() => proxy.close());

    it('callers that leave nothing cost no statement of the pool; one that changes the session one DISCARD ALL', async () => {
      const pool = new ConnectionPool(pgConnector(proxy.url), {
        name: 'counted',
        maxSize: 2,
        minSize: 2,
        logger: quiet,
      });
      await pool.warmup();
      const start = proxy.statements;
      await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          pool.use(async (c) => {
            if (i % 4 === 0) return c.query('SELECT 1');
            if (i % 4 === 1) return c.query('SELECT $1::int', [i]);
            // Settings for the transaction only (row-level security's tenant) end with it: no change.
            await c.query('BEGIN');
            if (i % 4 === 2) await c.query("SET LOCAL statement_timeout = '5s'");
            else await c.query("SELECT set_config('app.tenant', $1, true)", [`t${i}`]);
            await c.query('COMMIT');
          }),
        ),
      );
      await until(() => pool.stats().clients === 0);
      expect(proxy.statements - start).toBe(25 + 25 + 50 * 3);
      // One that sets the session for good costs one DISCARD ALL.
      await pool.use((c) => c.query("SELECT set_config('app.tenant', 'x', false)"));
      await until(() => pool.stats().clients === 0);
      expect(proxy.statements - start).toBe(25 + 25 + 50 * 3 + 2);
      expect(proxy.queries.slice(-1)).toEqual(['DISCARD ALL']);
      await pool.close();
    });
  });
});

describe('reading the wire', () => {
  it("never reads pg's deprecated activeQuery getter (it prints a deprecation warning)", async () => {
    const pool = poolOf();
    let reads = 0;
    await pool.use(async (c) => {
      const proto = Object.getPrototypeOf(c) as object;
      const getter = Object.getOwnPropertyDescriptor(proto, 'activeQuery')?.get;
      expect(getter).toBeDefined(); // pg 8.x has it, and warns when it is read
      Object.defineProperty(c, 'activeQuery', {
        configurable: true,
        get() {
          reads++;
          return getter!.call(this);
        },
      });
    });
    await pool.use((c) => c.query("SELECT set_config('app.x', 'y', false)"));
    await pool.use((c) => c.query('SELECT 1'));
    expect(await pool.use((c) => value(c, "SELECT current_setting('app.x', true)"))).toBe('');
    await pool.close();
    expect(reads).toBe(0);
  });
});

function nonDefault(seen: unknown, usual: unknown): unknown {
  return seen === usual ? null : seen;
}

async function exists(c: pg.Client, sql: string): Promise<unknown> {
  return c.query(sql).then(
    () => 'there',
    () => null,
  );
}

/**
 * Connector-level chaos, on the real servers: one seed makes a schedule of concurrent callers on
 * a small pool of a ready-made connector (pg, mysql2, exclusive ioredis), each of which, after a
 * write of its own, leaves the session some state at random, spelled at random (a transaction
 * opened, a setting, a role, a search path, a database, a temporary table, a prepared statement,
 * a lock, a user variable, a WATCH, a subscription, a statement still running), and may throw.
 * Every caller first checks that its connection is clean, as a fresh one would be; at the end
 * every caller's write must be there. The default reset of each connector is under test.
 */
import mysql from 'mysql2/promise';
import { Redis } from 'ioredis';
import pg from 'pg';
import { ConnectionPool, type Connector, type PoolLogger } from '../../lib/core/index.js';
import { redisConnector } from '../../lib/connectors/ioredis/index.js';
import { mysql2Connector } from '../../lib/connectors/mysql2/index.js';
import { pgConnector } from '../../lib/connectors/pg/index.js';
import { random } from './chaos.js';

export type ConnectorKind = 'pg' | 'mysql2' | 'ioredis';

export interface ConnectorChaosResult {
  kind: ConnectorKind;
  seed: number;
  calls: number;
  /** How many callers left each kind of state. */
  left: Record<string, number>;
  violations: string[];
}

const PG_URL = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';
const MYSQL = { host: '127.0.0.1', port: 3306, user: 'root', database: 'test' };
const REDIS_URL = 'redis://127.0.0.1:6379/0';
const quiet: PoolLogger = { warn: () => {}, error: () => {} };

/** One kind of state a caller may leave: its name and its spellings, each run on the caller's connection. */
interface Leave<C> {
  what: string;
  spellings: ((conn: C, tag: string) => Promise<unknown> | void)[];
}

/** What a connector's chaos needs: its connector, the check of a clean connection, the writes, the states. */
interface Target<C> {
  connector: () => Connector<C>;
  setUp(tag: string): Promise<void>;
  /** What the connection's session is: compared with a fresh connection's. */
  snapshot(conn: C): Promise<Record<string, unknown>>;
  /** A connection of its own, opened for the baseline and closed after. */
  fresh<R>(run: (conn: C) => Promise<R>): Promise<R>;
  write(conn: C, tag: string, id: number): Promise<unknown>;
  /** Ids written that are not there. */
  missing(tag: string, ids: number[]): Promise<number[]>;
  tearDown(tag: string): Promise<void>;
  leaves: Leave<C>[];
}

const pgTarget: Target<pg.Client> = {
  connector: () => pgConnector(PG_URL),
  async setUp(tag) {
    await onPg(async (c) => {
      await c.query(`CREATE TABLE IF NOT EXISTS ${tag} (id int PRIMARY KEY)`);
      await c.query(`DO $$ BEGIN CREATE ROLE ${tag}_role NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$`);
      await c.query(`CREATE SCHEMA IF NOT EXISTS ${tag}_other`);
    });
  },
  async snapshot(c) {
    const { rows } = await c.query<Record<string, unknown>>(
      `SELECT now() = statement_timestamp() AS idle, current_user AS role, session_user AS session_role,
              current_setting('search_path') AS search_path, current_setting('DateStyle') AS date_style,
              current_setting('statement_timeout') AS statement_timeout,
              (SELECT count(*) FROM pg_prepared_statements)::int AS prepared,
              (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid())::int AS advisory,
              (SELECT count(*) FROM pg_class WHERE relnamespace = pg_my_temp_schema())::int AS temp,
              (SELECT count(*) FROM pg_listening_channels())::int AS listening`,
    );
    return rows[0]!;
  },
  fresh: (run) => onPg(run),
  write: (c, tag, id) => c.query(`INSERT INTO ${tag} (id) VALUES ($1)`, [id]),
  async missing(tag, ids) {
    const { rows } = await onPg((c) => c.query<{ id: number }>(`SELECT id FROM ${tag}`));
    const have = new Set(rows.map((r) => r.id));
    return ids.filter((id) => !have.has(id));
  },
  async tearDown(tag) {
    await onPg(async (c) => {
      await c.query(`DROP TABLE IF EXISTS ${tag}`);
      await c.query(`DROP SCHEMA IF EXISTS ${tag}_other`);
      await c.query(`DROP ROLE IF EXISTS ${tag}_role`);
    });
  },
  leaves: [
    {
      what: 'a transaction',
      spellings: [
        (c, t) => c.query(`BEGIN; INSERT INTO ${t} (id) VALUES (-1)`).then(() => undefined),
        (c) => c.query('start transaction'),
        (c) => c.query('/* open */ BEGIN ISOLATION LEVEL SERIALIZABLE'),
        (c) => c.query('BEGIN').then(() => c.query('SELECT 1/0').catch(() => {})), // failed, still open
      ],
    },
    {
      what: 'a setting',
      spellings: [
        (c) => c.query(`SET DateStyle = 'SQL, DMY'`),
        (c) => c.query(`set statement_timeout to 12345`),
        (c) => c.query(`SELECT set_config('statement_timeout', '777', false)`),
      ],
    },
    {
      what: 'a role or a search path',
      spellings: [
        (c, t) => c.query(`SET ROLE ${t}_role`),
        (c, t) => c.query(`SET search_path = ${t}_other`),
        (c, t) => c.query(`select set_config('search_path', '${t}_other', false)`),
        (c, t) => c.query(`SET SESSION AUTHORIZATION ${t}_role`),
      ],
    },
    {
      what: 'a prepared statement, a temporary table, a lock, a LISTEN',
      spellings: [
        (c, t) => c.query(`PREPARE ${t}_q AS SELECT 1`),
        (c, t) => c.query(`CREATE TEMP TABLE ${t}_tmp (x int)`),
        (c, t) => c.query(`CREATE TEMPORARY TABLE ${t}_tmp2 AS SELECT 1 AS x`),
        (c) => c.query('SELECT pg_advisory_lock(4242)'),
        (c, t) => c.query(`LISTEN ${t}_channel`),
      ],
    },
    {
      what: 'a statement still running',
      spellings: [(c) => void c.query('SELECT pg_sleep(0.02)').catch(() => {})],
    },
  ],
};

async function onPg<R>(run: (c: pg.Client) => Promise<R>): Promise<R> {
  const c = new pg.Client(PG_URL);
  await c.connect();
  try {
    return await run(c);
  } finally {
    await c.end();
  }
}

const mysqlTarget: Target<mysql.Connection> = {
  connector: () => mysql2Connector(MYSQL),
  async setUp(tag) {
    await onMysql((c) => c.query(`CREATE TABLE IF NOT EXISTS ${tag} (id int PRIMARY KEY) ENGINE=InnoDB`));
  },
  async snapshot(c) {
    const [rows] = await c.query<mysql.RowDataPacket[]>(
      `SELECT @@in_transaction AS in_transaction, @@autocommit AS autocommit, @@session.time_zone AS time_zone,
              @@session.sql_mode AS sql_mode, @nsp_chaos AS user_variable, DATABASE() AS db,
              IS_USED_LOCK('nsp_chaos_lock') <=> CONNECTION_ID() AS named_lock`,
    );
    return { ...rows[0]! };
  },
  fresh: (run) => onMysql(run),
  write: (c, tag, id) => c.query(`INSERT INTO ${tag} (id) VALUES (?)`, [id]),
  async missing(tag, ids) {
    const [rows] = await onMysql((c) => c.query<mysql.RowDataPacket[]>(`SELECT id FROM ${tag}`));
    const have = new Set(rows.map((r) => r.id as number));
    return ids.filter((id) => !have.has(id));
  },
  tearDown: (tag) => onMysql((c) => c.query(`DROP TABLE IF EXISTS ${tag}`)).then(() => undefined),
  leaves: [
    {
      what: 'a transaction',
      spellings: [
        (c) => c.query('START TRANSACTION'),
        (c) => c.query('begin'),
        (c) => c.query('START/**/TRANSACTION'),
        (c) => c.query(`SET autocommit='OFF'`),
        (c) => c.execute('SET autocommit = ?', [0]),
      ],
    },
    {
      what: 'a session setting or a user variable',
      spellings: [
        (c) => c.query(`SET time_zone = '+05:00'`),
        (c) => c.query(`set session sql_mode = ''`),
        (c) => c.query('SET @nsp_chaos = 1'),
        (c) => c.query('SELECT @nsp_chaos := 2'),
      ],
    },
    {
      what: 'a schema, a lock',
      spellings: [
        (c) => c.query('USE mysql'),
        (c) => c.query(`SELECT GET_LOCK('nsp_chaos_lock', 0)`),
        (c, t) => c.query(`LOCK TABLES ${t} READ`),
      ],
    },
  ],
};

async function onMysql<R>(run: (c: mysql.Connection) => Promise<R>): Promise<R> {
  const c = await mysql.createConnection(MYSQL);
  try {
    return await run(c);
  } finally {
    await c.end();
  }
}

let redisObserver: Redis | undefined;
const observer = () => (redisObserver ??= new Redis(REDIS_URL));

const redisTarget: Target<Redis> = {
  connector: () => redisConnector(REDIS_URL),
  setUp: async () => {},
  async snapshot(c) {
    const line = String(await c.call('CLIENT', 'INFO'));
    const info = Object.fromEntries(
      line
        .trim()
        .split(' ')
        .map((p) => p.split('=') as [string, string]),
    );
    const { db, multi, sub, psub, flags, name, resp } = info;
    return { db, multi, sub, psub, flags, name, resp };
  },
  async fresh(run) {
    const c = new Redis(REDIS_URL);
    try {
      return await run(c);
    } finally {
      c.disconnect();
    }
  },
  // A WATCH left on the key by another caller aborts this EXEC, and the write is lost.
  write: (c, tag, id) => c.multi().sadd(tag, String(id)).exec(),
  async missing(tag, ids) {
    const have = new Set(await observer().smembers(tag));
    return ids.filter((id) => !have.has(String(id)));
  },
  tearDown: async (tag) => {
    await observer().del(tag);
    redisObserver?.disconnect();
    redisObserver = undefined;
  },
  leaves: [
    {
      what: 'a database',
      spellings: [(c) => c.select(3), (c) => c.call('SELECT', 5), (c) => c.call('select', '7')],
    },
    {
      what: 'a transaction or a WATCH',
      spellings: [
        (c) => c.call('MULTI'),
        (c) => c.multi({ pipeline: false }),
        async (c, t) => {
          await c.call('WATCH', t);
          await observer().sadd(t, 'touched'); // a later EXEC on a watching connection would abort
        },
      ],
    },
    {
      what: 'connection settings, a subscription, a blocking command',
      spellings: [
        (c) => c.client('SETNAME', 'left-behind'),
        (c, t) => c.call('SUBSCRIBE', `${t}:channel`),
        (c, t) => void c.call('BLPOP', `${t}:list`, 0.05).catch(() => {}),
        (c) => c.disconnect(),
      ],
    },
  ],
};

const TARGETS: { [K in ConnectorKind]: unknown } = {
  pg: pgTarget,
  mysql2: mysqlTarget,
  ioredis: redisTarget,
};

/** Runs seed `seed` against `kind`: `calls` calls by 6 concurrent callers on at most 2 connections. */
export async function runConnectorChaos(kind: ConnectorKind, seed: number, calls = 60): Promise<ConnectorChaosResult> {
  const target = TARGETS[kind] as Target<unknown>;
  const rand = random(seed);
  const tag = `nsp_cchaos_${process.pid}_${seed}`;
  const violations: string[] = [];
  const left: Record<string, number> = {};
  const written: number[] = [];
  await target.setUp(tag);
  const baseline = await target.fresh((conn) => target.snapshot(conn));
  const dirt = async (conn: unknown) => {
    const now = await target.snapshot(conn);
    const off = Object.keys(baseline).filter((k) => now[k] !== baseline[k]);
    return off.length === 0
      ? undefined
      : off.map((k) => `${k} ${String(now[k])} (fresh: ${String(baseline[k])})`).join(', ');
  };
  const pool = new ConnectionPool(target.connector(), { name: `chaos-${kind}`, maxSize: 2, logger: quiet });
  let next = 0;
  const caller = async () => {
    while (next < calls) {
      const id = next++;
      const leave = rand() < 0.7 ? target.leaves[Math.floor(rand() * target.leaves.length)] : undefined;
      const spelling = leave?.spellings[Math.floor(rand() * leave.spellings.length)];
      const throws = rand() < 0.3;
      try {
        await pool.use(async (conn) => {
          const found = await dirt(conn);
          if (found !== undefined) violations.push(`call ${id} found its connection dirty: ${found}`);
          await target.write(conn, tag, id);
          written.push(id);
          if (spelling !== undefined) {
            left[leave!.what] = (left[leave!.what] ?? 0) + 1;
            await Promise.resolve(spelling(conn, tag)).catch(() => {});
          }
          if (throws) throw new Error('the caller’s bug');
        });
      } catch (err) {
        if (!(err instanceof Error && err.message === 'the caller’s bug'))
          violations.push(`call ${id} failed: ${String(err)}`);
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: 6 }, caller));
    const missing = await target.missing(tag, written);
    if (missing.length > 0) violations.push(`writes lost: ${missing.join(', ')}`);
  } finally {
    await pool.close();
    await target.tearDown(tag);
  }
  return { kind, seed, calls, left, violations };
}

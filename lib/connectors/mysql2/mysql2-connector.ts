import mysql from 'mysql2/promise';
import {
  type Connector,
  type CreateContext,
  type HandleLending,
  keysOf,
  messageOf,
  OptionReader,
  shown,
} from '../../core/index.js';
import { checkTarget, ofDriver, type TargetSpec } from '../index.js';
import { hasStatementRunning, killStatement } from './mysql2-cancel.js';
import {
  autocommitAsBegun,
  begun,
  followWire,
  reportsChanges,
  TRACKING,
  transactionClean,
  wireState,
} from './mysql2-session.js';

/**
 * What a connection given back is cleaned of before its next caller, decided by what the server
 * reported on its last replies (status flags and session tracking, turned on at connect), never
 * by reading SQL text. A connection its caller left clean costs no round trip.
 * - `'changed'` (the default): whatever the server says the caller changed is undone. A transaction
 *   left open (however it began: `BEGIN`, `START TRANSACTION` with a comment inside, `SET autocommit
 *   = 0`, a procedure) is rolled back and autocommit set back; a changed session (`LOCK TABLES`, a setting,
 *   a user variable, a temporary table, a prepared statement, the schema, a role) is reset with
 *   `COM_RESET_CONNECTION`. A statement still running, or one that failed (an error reports no
 *   state), counts as a change.
 * - `'transaction'`: only the transaction: rolled back, autocommit set back, table locks released;
 *   the session's settings and variables stay for the next caller.
 * - `'session'`: every return resets the whole session (`COM_RESET_CONNECTION`), one round trip.
 * - `false`: no reset; the only choice that lets a pool share its connections.
 *
 * On a server without session tracking (MySQL before 5.7, MariaDB before 10.3), `'changed'`
 * resets the session on every return, and `'transaction'` releases table locks on every return.
 */
export type Mysql2Reset = 'changed' | 'transaction' | 'session' | false;

/** Options of {@link mysql2Connector}. */
export interface Mysql2ConnectorOptions {
  /** What a connection given back is cleaned of (see {@link Mysql2Reset}). Default `'changed'`. */
  reset?: Mysql2Reset;
}

/** What mysql2Connector() connects with: a URI or connection options, never a live pool or connection. */
/** The promise connection's methods that answer with a promise. */
const MYSQL_PROMISES = new Set([
  'query',
  'execute',
  'ping',
  'beginTransaction',
  'commit',
  'rollback',
  'changeUser',
  'prepare',
  'connect',
  'end',
]);

/** A handle per lease: a statement its holder sends after the lease ended rejects, and runs nothing. */
const MYSQL_LENDING: HandleLending = { returnsPromise: (name) => MYSQL_PROMISES.has(name) };

const MYSQL_TARGET: TargetSpec = {
  what: 'a connection URI (mysql://user@host:3306/db) or mysql2 connection options',
  schemes: ['mysql:', 'mysql2:', 'mariadb:'],
  ports: ['port'],
  durations: ['connectTimeout'],
  wholes: { maxPreparedStatements: 1 },
  urlField: 'uri',
  live: (value) =>
    typeof (value as { getConnection?: unknown }).getConnection === 'function' ||
    typeof (value as { query?: unknown }).query === 'function'
      ? 'is a live mysql2 pool or connection, where connection settings belong: mysql2Connector() makes its own connections; give it the settings or a URI'
      : undefined,
};

/** Error codes after which a MySQL or MariaDB connection is gone. */
const FATAL_CODES = new Set([
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ECONNREFUSED',
  'ER_SERVER_SHUTDOWN',
  'ER_CONNECTION_KILLED',
  'ER_CLIENT_INTERACTION_TIMEOUT',
]);
/** MariaDB's "Connection was killed" (1927) and the server's shutdown (1053), by number. */
const FATAL_ERRNOS = new Set([1053, 1927, 4031]);

/** Whether an error from `mysql2` means its connection is broken, not that one statement failed. */
export function isMysqlConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const e = err as { fatal?: unknown; code?: unknown; errno?: unknown };
  if (e.fatal === true) return true;
  if (typeof e.code === 'string' && FATAL_CODES.has(e.code)) return true;
  if (typeof e.errno === 'number' && FATAL_ERRNOS.has(e.errno)) return true;
  return /closed state|Connection lost/i.test(err.message);
}

/**
 * MySQL and MariaDB connections from `mysql2` (its promise API), one caller at a time each. A
 * connection is ready after a `PING`, validated the same way; its `'error'` or `'end'` while idle
 * retires it quietly; `isFatal` knows mysql2's fatal errors; a connection comes back clean (see
 * {@link Mysql2Reset}).
 *
 * @param config a connection URI or `mysql2` connection options, as `createConnection()` takes.
 */
export function mysql2Connector(
  config: string | mysql.ConnectionOptions,
  options: Mysql2ConnectorOptions = {},
): Connector<mysql.Connection> {
  const read = new OptionReader({ subject: 'module', name: 'mysql2Connector()' }, options).only(
    keysOf<Mysql2ConnectorOptions>({ reset: true }),
    "mysql2Connector()'s options",
  );
  checkTarget('mysql2Connector()', 'config', config, MYSQL_TARGET);
  const reset: Mysql2Reset = options.reset ?? 'changed';
  if (reset !== 'changed' && reset !== 'transaction' && reset !== 'session' && reset !== false)
    read.fail('reset', `must be 'changed', 'transaction', 'session' or false, got ${shown(reset)}`);
  const connector: Connector<mysql.Connection> = {
    clientLimit: 1,
    lendsHandles: MYSQL_LENDING,
    create: (ctx) => connect(config, ctx, reset === 'changed' || reset === 'transaction'),
    ready: async (conn) => {
      await conn.ping();
    },
    validate: (conn) =>
      conn.ping().then(
        () => true,
        () => false,
      ),
    close: (conn) => closeConnection(conn, config),
    isFatal: isMysqlConnectionError,
  };
  if (reset === 'session') {
    connector.create = async (ctx) => {
      const conn = await connect(config, ctx, false);
      connectedModes.set(conn, await sqlModeOf(conn));
      return conn;
    };
    // The reset takes the session's sql_mode back to the server's, without what the client's flags added.
    connector.reset = async (conn) => {
      await conn.reset();
      await conn.query('SET SESSION sql_mode = ?', [connectedModes.get(conn) ?? '']);
      return true;
    };
  }
  if (reset === 'changed') connector.reset = (conn) => undoChanges(conn, true);
  if (reset === 'transaction') connector.reset = (conn) => undoChanges(conn, false);
  return ofDriver(connector, 'mysql2');
}

/**
 * Ends `conn`; a statement still running on it (the pool retired it for a hung reset) is killed
 * at the server first (`KILL QUERY`), bounded in time. A kill that fails fails the close, which
 * the pool logs: the statement may still run, holding its locks.
 */
async function closeConnection(conn: mysql.Connection, config: string | mysql.ConnectionOptions): Promise<void> {
  const failure = hasStatementRunning(conn)
    ? await killStatement(conn, config).then(
        () => undefined,
        (err: unknown) => err,
      )
    : undefined;
  await conn.end().catch(() => conn.destroy());
  if (failure !== undefined)
    throw new Error(
      `the statement the connection was running could not be killed, and may still run at the server: ${messageOf(failure)}`,
      { cause: failure },
    );
}

async function connect(
  config: string | mysql.ConnectionOptions,
  ctx: CreateContext,
  following: boolean,
): Promise<mysql.Connection> {
  const conn = await (typeof config === 'string' ? mysql.createConnection(config) : mysql.createConnection(config));
  // Broken while idle: retired quietly, never an unhandled 'error'.
  conn.on('error', (err: Error) => ctx.retire(err));
  conn.on('end', () => ctx.retire(new Error('the connection to the MySQL server ended')));
  if (ctx.signal.aborted) {
    conn.destroy();
    throw ctx.signal.reason;
  }
  if (following) await follow(conn);
  return conn;
}

/** Follows what the server reports of the connection, with session tracking on where the server has it. */
async function follow(conn: mysql.Connection): Promise<void> {
  const state = followWire(conn);
  try {
    await conn.query(TRACKING);
    // Without SESSION_TRACK (a config's flags may turn it off), nothing says what changed.
    state.tracking = reportsChanges(conn);
  } catch (err) {
    if (isMysqlConnectionError(err)) throw err;
    // No session tracking on this server (older than MySQL 5.7, MariaDB 10.3). Its refusal reported
    // no status; this reply does.
    await conn.query('DO 0');
  }
  state.sqlMode = await sqlModeOf(conn);
  begun(state);
}

/** The sql_mode of each connection as it connected, for the `'session'` reset. */
const connectedModes = new WeakMap<mysql.Connection, string>();

async function sqlModeOf(conn: mysql.Connection): Promise<string> {
  const [rows] = await conn.query<mysql.RowDataPacket[]>('SELECT @@session.sql_mode AS mode');
  return String(rows[0]?.mode ?? '');
}

/**
 * Undoes what the server reported changed since the connection was lent. `session`: a changed
 * session is reset too (the `'changed'` reset); else only the transaction and table locks.
 * Without session tracking, locks and session changes are unknown: they count as made.
 */
function undoChanges(conn: mysql.Connection, session: boolean): boolean | Promise<boolean> {
  const state = wireState(conn);
  if (state === undefined) return false; // not made by this connector: its state is unknown
  if (state.userChanged) return false; // no reset makes it the configured user's session again
  const unknown = state.status === undefined || state.running > 0 || !state.tracking;
  const resetSession = session && (state.changed || unknown);
  if (!resetSession && transactionClean(state) && state.tracking) return true;
  return (async () => {
    if (resetSession) {
      await conn.reset(); // rolls back, releases locks, restores every setting but the schema
      if (state.schemaChanged) {
        const schema = (conn as unknown as { config: { database?: string } }).config.database;
        if (schema === undefined) return false; // none to go back to: retired
        await conn.query(`USE ${conn.escapeId(schema)}`);
      }
      // The reset takes the session's sql_mode back to the server's, without what the client's flags added.
      if (state.tracking) await conn.query(`${TRACKING}, sql_mode = ?`, [state.sqlMode]);
      else await conn.query('SET SESSION sql_mode = ?', [state.sqlMode]);
      begun(state);
    } else {
      await conn.query('ROLLBACK');
      if (state.locked || !state.tracking) await conn.query('UNLOCK TABLES');
      if (!autocommitAsBegun(state)) await conn.query(`SET autocommit = ${state.autocommit ? 1 : 0}`);
    }
    return transactionClean(state);
  })();
}

import mysql from 'mysql2/promise';
import { type Connector, type CreateContext, keysOf, OptionReader, shown } from '../../core/index.js';
import { checkTarget } from '../index.js';

/**
 * What a connection given back is cleaned of before its next caller:
 * - `'transaction'` (the default): a transaction left open is rolled back. The connector follows
 *   what the connection sends (`beginTransaction()`, `BEGIN`, `START TRANSACTION`, `XA START`,
 *   `SET autocommit = 0`, `LOCK TABLES`, ended by `COMMIT` or `ROLLBACK`), so a clean connection
 *   costs no round trip; one with a transaction possibly open, or a statement still running, gets
 *   a `ROLLBACK` queued behind it, and autocommit turned off is turned on again.
 * - `'session'`: every return resets the whole session (`COM_RESET_CONNECTION`: transaction, user
 *   variables, session settings, temporary tables, locks, prepared statements), one round trip.
 * - `false`: no reset; the only choice that lets a pool share its connections.
 */
export type Mysql2Reset = 'transaction' | 'session' | false;

/** Options of {@link mysql2Connector}. */
export interface Mysql2ConnectorOptions {
  /** What a connection given back is cleaned of (see {@link Mysql2Reset}). Default `'transaction'`. */
  reset?: Mysql2Reset;
}

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

/** Statements that may open a transaction, or keep one open after they end. */
const OPENS = /\b(BEGIN|START\s+TRANSACTION|XA\s+START|LOCK\s+TABLES?)\b/i;
/** Autocommit turned off, and on again: a session setting the next caller must not inherit. */
const AUTOCOMMIT_OFF = /\bAUTOCOMMIT\s*(=|:=)\s*(0|OFF|FALSE)\b/i;
const AUTOCOMMIT_ON = /\bAUTOCOMMIT\s*(=|:=)\s*(1|ON|TRUE)\b/i;
/** A statement that ends whatever transaction is open. */
const ENDS = /^\s*(COMMIT|ROLLBACK)(\s+WORK)?\s*;?\s*$/i;

/** What the connector knows of one connection from the commands it sent. */
interface Tracked {
  /** Commands sent and not ended. */
  running: number;
  /** A transaction may be open. */
  open: boolean;
  /** Autocommit was turned off: every statement opens a transaction until it is on again. */
  manual: boolean;
}

/** A command of mysql2's core connection, as far as the tracking reads it. */
interface Command {
  sql?: unknown;
  once(event: 'end', listener: () => void): unknown;
}

const tracked = new WeakMap<mysql.Connection, Tracked>();

/** Follows every command the core connection sends: how many run, and whether a transaction may be open. */
function track(conn: mysql.Connection): void {
  const state: Tracked = { running: 0, open: false, manual: false };
  tracked.set(conn, state);
  const core = (conn as unknown as { connection: { addCommand(cmd: Command): unknown } }).connection;
  const send = core.addCommand.bind(core);
  core.addCommand = (cmd) => {
    const sql = typeof cmd.sql === 'string' ? cmd.sql : '';
    if (AUTOCOMMIT_OFF.test(sql)) state.manual = state.open = true;
    else if (AUTOCOMMIT_ON.test(sql))
      state.manual = state.open = false; // turning it on commits
    else if (ENDS.test(sql)) state.open = state.manual;
    else if (OPENS.test(sql) || state.manual) state.open = true;
    state.running++;
    cmd.once('end', () => void state.running--);
    return send(cmd);
  };
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
  checkTarget('mysql2Connector()', 'config', config, 'a connection URI or mysql2 connection options');
  const reset: Mysql2Reset = options.reset ?? 'transaction';
  if (reset !== 'transaction' && reset !== 'session' && reset !== false)
    read.fail('reset', `must be 'transaction', 'session' or false, got ${shown(reset)}`);
  const connector: Connector<mysql.Connection> = {
    clientLimit: 1,
    create: (ctx) => connect(config, ctx, reset === 'transaction'),
    ready: async (conn) => {
      await conn.ping();
    },
    validate: (conn) =>
      conn.ping().then(
        () => true,
        () => false,
      ),
    close: (conn) => conn.end().catch(() => conn.destroy()),
    isFatal: isMysqlConnectionError,
  };
  if (reset === 'session') connector.reset = (conn) => conn.reset().then(() => true);
  if (reset === 'transaction') connector.reset = rollbackIfOpen;
  return connector;
}

async function connect(
  config: string | mysql.ConnectionOptions,
  ctx: CreateContext,
  tracking: boolean,
): Promise<mysql.Connection> {
  const conn = await (typeof config === 'string' ? mysql.createConnection(config) : mysql.createConnection(config));
  // Broken while idle: retired quietly, never an unhandled 'error'.
  conn.on('error', (err: Error) => ctx.retire(err));
  conn.on('end', () => ctx.retire(new Error('the connection to the MySQL server ended')));
  if (ctx.signal.aborted) {
    conn.destroy();
    throw ctx.signal.reason;
  }
  if (tracking) track(conn);
  return conn;
}

/**
 * The transaction reset: a `ROLLBACK` only when a transaction may be open or a statement still
 * runs, and autocommit back on if a caller turned it off.
 */
function rollbackIfOpen(conn: mysql.Connection): boolean | Promise<boolean> {
  const state = tracked.get(conn);
  if (state === undefined) return false; // not made by this connector: its state is unknown
  if (state.running === 0 && !state.open && !state.manual) return true;
  return (async () => {
    await conn.query('ROLLBACK');
    if (state.manual) await conn.query('SET autocommit = 1');
    return !state.open && !state.manual;
  })();
}

import pg from 'pg';
import {
  type ConnectionPool,
  type Connector,
  type CreateContext,
  type HandleLending,
  is,
  kConnector,
  keysOf,
  messageOf,
  OptionReader,
  shown,
} from '../../core/index.js';
import { checkTarget, connectAbortably, ofDriver, type TargetSpec } from '../index.js';
import { cancelStatement, hasStatementRunning } from './pg-cancel.js';
import { followSession, sessionOf } from './pg-session.js';

/**
 * What a connection given back is cleaned of before its next caller, decided by what the server
 * reported: the transaction status of its last ReadyForQuery, each statement's command tag, and
 * the ParameterStatus messages of settings that changed. A clean connection costs no round trip.
 * - `'changed'` (the default): what the server reports changed is undone. A transaction left open
 *   or failed is rolled back; a changed session (`SET` and `SET ROLE`, `RESET`, `SET SESSION
 *   AUTHORIZATION`, a reported setting such as DateStyle, `PREPARE`, `LISTEN`, a cursor, a
 *   temporary table, `set_config()`, an advisory lock) gets `DISCARD ALL`. A statement still
 *   running counts as a change.
 * - `'transaction'`: only a transaction left open or failed is rolled back; the session's
 *   settings, role and search path stay for the next caller.
 * - `'session'`: every return also runs `DISCARD ALL` (`SET`, `set_config(…, false)`, the role,
 *   temporary tables, prepared statements, advisory locks, `LISTEN`), one round trip per call.
 * - `{ statement }`: like `'session'`, with your own statement (`'SELECT app.clear()'`). Note that
 *   `RESET ALL` keeps the role (`SET ROLE`) and the session authorization.
 * - `false`: no reset; the only choice that lets a pool share its clients (`clientLimit` above 1).
 */
export type PgReset = 'changed' | 'transaction' | 'session' | false | { readonly statement: string };

/** Options of {@link pgConnector}. */
export interface PgConnectorOptions {
  /** What a connection given back is cleaned of (see {@link PgReset}). Default `'changed'`. */
  reset?: PgReset;
  /** The client class to make clients of (a subclass, a `pg` of your own). Default: `pg.Client`. */
  Client?: new (config: string | pg.ClientConfig) => pg.Client;
}

/** SQLSTATE classes and codes after which a session is gone: connection exceptions, shutdowns. */
/** A handle per lease: a query its holder sends after the lease ended rejects (or calls back), and runs nothing. */
const PG_ASYNC = new Set(['query', 'connect', 'end']);
const PG_LENDING: HandleLending = {
  returnsPromise: (name) => PG_ASYNC.has(name),
  callsBack: (name) => PG_ASYNC.has(name),
};

const FATAL_STATES = /^(08|57P0[1-3])/;
const FATAL_ERRNOS = new Set(['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH']);
const FATAL_MESSAGES = /Connection terminated|connection error|not queryable|Query read timeout/i;

/**
 * Whether an error from `pg` means its connection is broken (the server shut down or killed the
 * backend, the socket failed, the client was closed), not that one statement failed.
 */
export function isPgConnectionError(err: unknown): boolean {
  // Not `instanceof Error`: a socket's error may come from another realm (a test sandbox's).
  if (typeof err !== 'object' || err === null) return false;
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && (FATAL_STATES.test(code) || FATAL_ERRNOS.has(code))) return true;
  return typeof message === 'string' && FATAL_MESSAGES.test(message);
}

/** SQLSTATEs of a connect that retrying cannot mend: credentials refused (class 28), no such database. */
const PERMANENT_STATES = /^(28|3D000$)/;

/**
 * Whether a connect error from `pg` is one retrying cannot mend: the server refused the
 * credentials (a wrong password, no such role, no `pg_hba.conf` entry) or the database does not
 * exist. The pool then fails its callers at once, as pg.Pool does, rather than retrying.
 */
export function isPgPermanentError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && PERMANENT_STATES.test(code);
}

/** What pgConnector() connects with: a connection string or a pg.ClientConfig, never a live pool or client. */
const PG_TARGET: TargetSpec = {
  what: 'a connection string (postgres://user@host:5432/db, or key=value pairs) or a pg.ClientConfig',
  schemes: ['postgres:', 'postgresql:', 'socket:'],
  plain: (text) => text.startsWith('/') || /^\w+\s*=/.test(text),
  ports: ['port'],
  urlField: 'connectionString',
  durations: [
    'connectionTimeoutMillis',
    'statement_timeout',
    'query_timeout',
    'lock_timeout',
    'idle_in_transaction_session_timeout',
    'keepAliveInitialDelayMillis',
  ],
  live: (value) =>
    typeof (value as { connect?: unknown }).connect === 'function' ||
    typeof (value as { query?: unknown }).query === 'function'
      ? `is a live ${value instanceof pg.Pool ? 'pg.Pool' : 'pg client'}, where client settings belong: pgConnector() makes its own clients; give it the settings (pgConnector(pool.options)) or a connection string, or run an ORM on this pool through asPgPool(pool)`
      : undefined,
};

/** What of a `pg.Client` the reset reads beyond its typed surface. */
interface ClientState {
  /** False while a statement runs or waits (a caller that did not await one). */
  readyForQuery?: boolean;
  /** The client's record of the named statements the server holds, which `DISCARD ALL` drops. */
  connection?: { parsedStatements?: Record<string, unknown>; submittedNamedStatements?: Record<string, unknown> };
}

/**
 * PostgreSQL clients from `pg`, one caller at a time each (a transaction is state of its
 * connection). A client is ready after a real round trip; an idle client's `'error'` or `'end'`
 * retires it quietly (never an unhandled `'error'`); `isFatal` knows pg's connection-level
 * errors; `validate` runs `SELECT 1`; a connection comes back clean (see {@link PgReset}).
 *
 * @param client a connection string or `pg.ClientConfig`, as `new pg.Client()` takes.
 */
export function pgConnector(client: string | pg.ClientConfig, options: PgConnectorOptions = {}): Connector<pg.Client> {
  const read = new OptionReader({ subject: 'module', name: 'pgConnector()' }, options).only(
    keysOf<PgConnectorOptions>({ reset: true, Client: true }),
    "pgConnector()'s options",
  );
  checkTarget('pgConnector()', 'client', client, PG_TARGET);
  const Client = read.get('Client', is.function);
  const statement = sessionStatement(read, options.reset);
  const changes = options.reset === undefined || options.reset === 'changed';
  // The tags tell the reset what its own statement did (whether it dropped prepared statements).
  const follows = options.reset !== false && options.reset !== 'transaction';
  const connector: Connector<pg.Client> = {
    clientLimit: 1,
    lendsHandles: PG_LENDING,
    create: async (ctx) => {
      const made = new (Client ?? pg.Client)(client);
      if (options.reset !== false && typeof made.getTransactionStatus !== 'function') {
        throw new Error(
          'pgConnector() resets connections from client.getTransactionStatus(), which pg has from 8.21: npm install pg@^8.21 (or pass { reset: false })',
        );
      }
      return connect(made, ctx, follows);
    },
    ready: async (c) => {
      await c.query('SELECT 1');
    },
    validate: (c) =>
      c.query('SELECT 1').then(
        () => true,
        () => false,
      ),
    close: closeClient,
    isFatal: isPgConnectionError,
    isPermanent: isPgPermanentError,
  };
  settings.set(connector, client);
  ofDriver(connector, 'pg');
  if (options.reset === false) return connector;
  connector.reset = (c) => resetClient(c, changes ? () => changedStatement(c) : () => statement);
  return connector;
}

/**
 * Ends `client`; a statement still running on it (the pool retired it for a hung reset) is
 * cancelled at the server first, bounded in time. A cancel that fails fails the close, which the
 * pool logs: the statement may still run, holding its locks.
 */
async function closeClient(client: pg.Client): Promise<void> {
  const cancelled = hasStatementRunning(client)
    ? cancelStatement(client).then(
        () => undefined,
        (err: unknown) => err,
      )
    : undefined;
  const failure = await cancelled;
  await client.end();
  if (failure !== undefined)
    throw new Error(
      `the statement the connection was running could not be cancelled, and may still run at the server: ${messageOf(failure)}`,
      { cause: failure },
    );
}

/** What each connector made by {@link pgConnector} connects with. */
const settings = new WeakMap<object, string | pg.ClientConfig>();

/**
 * The connection settings of a pool made with {@link pgConnector}, as `pg.Pool`'s `options` give
 * them (a driver such as Prisma's adapter reads them), without the password: a connection
 * string loses it, a config its `password` field. Empty for a pool of another connector.
 */
export function connectionSettings(pool: ConnectionPool<pg.Client>): pg.ClientConfig {
  const config = settings.get(pool[kConnector]);
  if (config === undefined) return {};
  if (typeof config === 'string') return { connectionString: withoutPassword(config) };
  const { password: _password, ...rest } = config;
  void _password;
  return typeof rest.connectionString === 'string'
    ? { ...rest, connectionString: withoutPassword(rest.connectionString) }
    : rest;
}

/** A connection string without its password (one that is not a URL, `host=… password=…`, loses the password's pair). */
function withoutPassword(connectionString: string): string {
  try {
    const url = new URL(connectionString);
    if (url.password === '') return connectionString;
    url.password = '';
    return url.toString();
  } catch {
    return connectionString.replace(/\bpassword\s*=\s*(?:'(?:[^'\\]|\\.)*'|\S*)\s*/gi, '').trim();
  }
}

/** The statement a session reset runs after any rollback; undefined for `'transaction'`. */
function sessionStatement(read: OptionReader<PgConnectorOptions>, reset: unknown): string | undefined {
  if (reset === undefined || reset === 'changed' || reset === 'transaction' || reset === false) return undefined;
  if (reset === 'session') return 'DISCARD ALL';
  const statement = (reset as { statement?: unknown } | null)?.statement;
  if (
    typeof reset === 'object' &&
    reset !== null &&
    Object.keys(reset).length === 1 &&
    typeof statement === 'string' &&
    statement.trim() !== ''
  )
    return statement;
  return read.fail(
    'reset',
    `must be 'changed', 'transaction', 'session', false or { statement: 'DISCARD ALL' } (a statement that clears your session state), got ${shown(reset)}`,
  );
}

/** Connects `client`; the pool's abort (its createTimeoutMs, its close) ends the attempt. */
/** The `'changed'` reset's session statement: `DISCARD ALL` when the server reported a change (or none could be followed). */
function changedStatement(client: pg.Client): string | undefined {
  const session = sessionOf(client);
  return session === undefined || session.changed ? 'DISCARD ALL' : undefined;
}

async function connect(client: pg.Client, ctx: CreateContext, follows: boolean): Promise<pg.Client> {
  // Broken while idle: retired quietly. Without a listener pg's 'error' would crash the process.
  client.on('error', (err: Error) => ctx.retire(err));
  client.on('end', () => ctx.retire(new Error('the connection to PostgreSQL ended')));
  await connectAbortably(
    ctx.signal,
    () => client.connect(),
    () => void client.end().catch(() => {}),
  );
  if (follows) followSession(client);
  return client;
}

/**
 * Cleans a client given back. Idle with nothing in flight and no session statement: clean at
 * once, no round trip. A transaction open or failed, or a statement still running (whose
 * transaction is not known yet): `ROLLBACK`, queued behind it. Then the session statement, if any.
 */
function resetClient(client: pg.Client, statementOf: () => string | undefined): boolean | Promise<boolean> {
  const state = client as unknown as ClientState;
  const settled = state.readyForQuery !== false && client.getTransactionStatus() === 'I';
  if (settled && statementOf() === undefined) return true;
  return (async () => {
    if (!settled) await client.query('ROLLBACK');
    // Asked after the ROLLBACK: what was still running has reported what it changed.
    const statement = statementOf();
    if (statement !== undefined) {
      await client.query(statement);
      // DISCARD ALL and DEALLOCATE ALL drop the server's prepared statements: pg must prepare them
      // again. Any other statement leaves them, and pg must not prepare them twice.
      const session = sessionOf(client);
      const tag = session?.lastTag ?? 'DISCARD ALL';
      if (tag === 'DISCARD ALL' || tag === 'DEALLOCATE ALL') {
        for (const cache of [state.connection?.parsedStatements, state.connection?.submittedNamedStatements]) {
          if (cache !== undefined) for (const name of Object.keys(cache)) delete cache[name];
        }
      }
      if (session !== undefined) {
        session.changed = false;
        session.resets++;
      }
    }
    return client.getTransactionStatus() === 'I';
  })();
}

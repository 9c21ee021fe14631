import { Redis, type RedisOptions } from 'ioredis';
import {
  type Connector,
  type CreateContext,
  type HandleLending,
  is,
  keysOf,
  messageOf,
  OptionReader,
  optionError,
  scrubbedCause,
} from '../../core/index.js';
import { checkTarget, connectAbortably, ofDriver, type TargetSpec } from '../index.js';
import { gateShared, openGateToClose } from './redis-gate.js';
import { followSession, mustHangUp, resetSession } from './redis-session.js';

/** Whether an ioredis error means its connection is broken, not that one command failed. */
export function isRedisConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && ['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ECONNREFUSED'].includes(code)) return true;
  return /Connection is closed|Stream isn't writeable|enableOfflineQueue options is false|MaxRetriesPerRequest/i.test(
    err.message,
  );
}

/** Options every pooled client gets: the pool, not ioredis, replaces a broken connection. */
/** The client's methods that answer at once (the rest, its commands, answer with a promise, or call back). */
const REDIS_SYNC = new Set([
  'pipeline',
  'multi',
  'duplicate',
  'disconnect',
  'defineCommand',
  'createBuiltinCommand',
  'emit',
]);

/** A handle per lease: a command its holder sends after the lease ended rejects, and runs nothing. */
const isCommand = (name: string) => !REDIS_SYNC.has(name) && !name.endsWith('Stream'); // scanStream() and its kin answer a stream
const REDIS_LENDING: HandleLending = {
  returnsPromise: isCommand,
  callsBack: isCommand,
  // A pipeline made during the lease and sent after it would land on the next holder's connection.
  sendsLater: (name) => (name === 'pipeline' || name === 'multi' ? ['exec'] : undefined),
};

/** The shared client's handles: as the exclusive one's, and no caller may cut the others off. */
const SHARED_LENDING: HandleLending = {
  ...REDIS_LENDING,
  refuses: (name) =>
    name === 'disconnect' || name === 'end'
      ? 'it would close the connection every other caller of sharedRedisConnector shares; the pool closes it'
      : undefined,
};

const POOLED: RedisOptions = {
  lazyConnect: true,
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  retryStrategy: () => null,
  autoResubscribe: false,
  reconnectOnError: () => false,
};

/** Closes `client` at once; one already closed is left alone (ioredis's disconnect() would leave a 2 s timer behind for nothing). */
function hangUp(client: Redis): void {
  if (client.status !== 'end') client.disconnect();
}

/** The first error each client reported while it was being opened; {@link OPENED} once it is open. */
const openingErrors = new WeakMap<Redis, Error>();
const OPENED = new Error('opened');

/**
 * Opens a client the pool can replace: ioredis's own reconnects and offline queue off. A connect
 * that fails says why in the client's own words (WRONGPASS, ECONNREFUSED), not in ioredis's
 * "Connection is closed.".
 */
async function connect(config: string | RedisOptions, extra: RedisOptions, ctx: CreateContext): Promise<Redis> {
  const client =
    typeof config === 'string'
      ? new Redis(config, { ...extra, ...POOLED })
      : new Redis({ ...config, ...extra, ...POOLED });
  // Broken while idle: retired quietly, never an unhandled 'error'.
  client.on('error', (err: Error) => {
    if (!openingErrors.has(client)) openingErrors.set(client, err);
    ctx.retire(err);
  });
  client.on('end', () => ctx.retire(new Error('the connection to Redis ended')));
  // A caller that changed the prefix would put its own and every later caller's keys elsewhere.
  Object.defineProperty(client.options, 'keyPrefix', { value: client.options.keyPrefix, writable: false });
  try {
    await connectAbortably(
      ctx.signal,
      () => client.connect(),
      () => hangUp(client),
    );
  } catch (err) {
    throw openingFailure(client) ?? err;
  }
  return client;
}

/** The error `client` reported while it was being opened, scrubbed, as a create's failure. */
function openingFailure(client: Redis): Error | undefined {
  const own = openingErrors.get(client);
  if (own === undefined || own === OPENED) return undefined;
  return new Error(`could not open a Redis connection: ${messageOf(own)}`, { cause: scrubbedCause(own) });
}

const common = {
  /** A PING, behind what ioredis sends as it connects (a SELECT, a CLIENT SETNAME): a failure of those fails the create. */
  ready: async (client: Redis) => {
    await client.ping();
    const failed = openingFailure(client);
    if (failed !== undefined) throw failed;
    openingErrors.set(client, OPENED);
  },
  validate: (client: Redis) =>
    client.status === 'ready' &&
    client.ping().then(
      (pong) => pong === 'PONG',
      () => false,
    ),
  close: async (client: Redis) => {
    if (client.status === 'end' || mustHangUp(client)) return hangUp(client);
    openGateToClose(client);
    await client.quit().catch(() => hangUp(client));
  },
  isFatal: isRedisConnectionError,
};

/**
 * Exclusive ioredis connections, one caller at a time each: for what needs a connection to
 * itself (blocking commands, WATCH/MULTI/EXEC, SELECT, a subscription). Ready after a PING; an
 * idle client's `'error'` or `'end'` retires it quietly; ioredis's own reconnects and offline
 * queue are off (the pool replaces a broken connection). A client comes back clean: a WATCH or
 * MULTI left open is ended and its own database selected again (nothing is sent when there is
 * nothing to clean); one in subscriber or monitor mode, or blocked by a command still waiting, is
 * retired. For plain commands use {@link sharedRedisConnector}.
 *
 * @param config a `redis://` URL or ioredis options.
 */
export function redisConnector(config: string | RedisOptions, ...more: never[]): Connector<Redis> {
  checkTarget('redisConnector()', 'config', config, REDIS_TARGET);
  if (more.length > 0)
    throw optionError(
      { subject: 'module', name: 'redisConnector()' },
      'config',
      'takes one argument, a redis:// URL or ioredis options, and got a second: put its settings in the URL (redis://host:6379/3 for db 3) or in the options (redisConnector({ host, port, db: 3 }))',
    );
  return ofDriver(
    {
      clientLimit: 1,
      lendsHandles: REDIS_LENDING,
      create: async (ctx) => {
        const client = await connect(config, {}, ctx);
        followSession(client);
        return client;
      },
      reset: resetSession,
      ...common,
    },
    'ioredis',
  );
}

/** What the Redis connectors connect with: a URL, a socket path or ioredis options, never a live client. */
const REDIS_TARGET: TargetSpec = {
  what: 'a redis:// URL (rediss:// for TLS), a socket path or ioredis options',
  schemes: ['redis:', 'rediss:'],
  plain: (text) => text.startsWith('/'),
  ports: ['port'],
  durations: ['connectTimeout', 'commandTimeout', 'socketTimeout', 'keepAlive'],
  wholes: { db: 0 },
  urlPath: (path) =>
    path === '' || path === '/' || /^\/\d+$/.test(path)
      ? undefined
      : `names the database ${JSON.stringify(path.slice(1))}: Redis takes a database index there (redis://host:6379/3)`,
  live: (value) =>
    typeof (value as { sendCommand?: unknown }).sendCommand === 'function'
      ? 'is a live ioredis client, where its settings belong: the connector makes its own clients; give it the settings (client.options) or a URL'
      : undefined,
};

/** Options of {@link sharedRedisConnector}. */
export interface SharedRedisConnectorOptions {
  /** Callers one client serves at once: the pool's default `clientLimit`. Default 100. */
  clientLimit?: number;
}

/**
 * ioredis clients shared by many callers (`clientLimit`, default 100): plain commands, pipelined
 * by ioredis (`enableAutoPipelining` on unless you set it), and `multi()` as a pipeline (MULTI
 * and EXEC go out together, so no other caller's command falls between them). Commands that would
 * change or hold the connection for everyone (blocking commands, SELECT, WATCH, subscriptions,
 * MONITOR, CLIENT) and `multi({ pipeline: false })` are refused before they reach the server,
 * with an error that says to use {@link redisConnector}.
 */
export function sharedRedisConnector(
  config: string | RedisOptions,
  options: SharedRedisConnectorOptions = {},
): Connector<Redis> {
  checkTarget('sharedRedisConnector()', 'config', config, REDIS_TARGET);
  const read = new OptionReader({ subject: 'module', name: 'sharedRedisConnector()' }, options).only(
    keysOf<SharedRedisConnectorOptions>({ clientLimit: true }),
    "sharedRedisConnector()'s options",
  );
  const clientLimit = read.get('clientLimit', is.whole(1), 100);
  const pipelining: RedisOptions =
    typeof config === 'object' && config.enableAutoPipelining !== undefined ? {} : { enableAutoPipelining: true };
  return ofDriver(
    {
      clientLimit,
      lendsHandles: SHARED_LENDING,
      create: async (ctx) => gateShared(await connect(config, pipelining, ctx)),
      ...common,
    },
    'ioredis',
  );
}

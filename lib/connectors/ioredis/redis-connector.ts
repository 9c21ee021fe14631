import { Redis, type RedisOptions } from 'ioredis';
import { type Connector, type CreateContext, is, keysOf, OptionReader, optionError } from '../../core/index.js';
import { checkTarget, connectAbortably, ofDriver, type TargetSpec } from '../index.js';

/** A command as ioredis sends it, as far as the connectors read it. */
interface SentCommand {
  name: string;
  args: unknown[];
  promise: Promise<unknown>;
  reject(err: Error): void;
}

type SendCommand = (command: SentCommand, ...rest: unknown[]) => unknown;

/** Commands that hold their connection until they answer. */
const BLOCKING = new Set([
  'blpop',
  'brpop',
  'brpoplpush',
  'blmove',
  'blmpop',
  'bzpopmin',
  'bzpopmax',
  'bzmpop',
  'wait',
  'waitaof',
]);

/** A blocking command: one of {@link BLOCKING}, or a stream read with BLOCK. */
function blocks(command: SentCommand): boolean {
  if (BLOCKING.has(command.name)) return true;
  return (
    (command.name === 'xread' || command.name === 'xreadgroup') &&
    command.args.some((a) => typeof a === 'string' && a.toUpperCase() === 'BLOCK')
  );
}

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

/** Opens a client the pool can replace: ioredis's own reconnects and offline queue off. */
async function connect(config: string | RedisOptions, extra: RedisOptions, ctx: CreateContext): Promise<Redis> {
  const client =
    typeof config === 'string'
      ? new Redis(config, { ...extra, ...POOLED })
      : new Redis({ ...config, ...extra, ...POOLED });
  // Broken while idle: retired quietly, never an unhandled 'error'.
  client.on('error', (err: Error) => ctx.retire(err));
  client.on('end', () => ctx.retire(new Error('the connection to Redis ended')));
  await connectAbortably(
    ctx.signal,
    () => client.connect(),
    () => hangUp(client),
  );
  return client;
}

/** What the exclusive connector knows of each of its clients (see track()). */
const tracked = new WeakMap<Redis, Tracked>();

const common = {
  ready: async (client: Redis) => {
    await client.ping();
  },
  validate: (client: Redis) =>
    client.status === 'ready' &&
    client.ping().then(
      (pong) => pong === 'PONG',
      () => false,
    ),
  close: async (client: Redis) => {
    // QUIT waits behind a blocking command still waiting for its answer: cut that connection instead.
    if (client.status === 'end' || (tracked.get(client)?.blocked ?? 0) > 0) return hangUp(client);
    await client.quit().catch(() => hangUp(client));
  },
  isFatal: isRedisConnectionError,
};

/** What the exclusive connector knows of a client from the commands it sent. */
interface Tracked {
  /** The database the client is configured for, and the one selected now. */
  readonly home: number;
  db: number;
  watching: boolean;
  /** A MULTI sent outside a pipeline, not yet ended by EXEC or DISCARD. */
  multi: boolean;
  /** Blocking commands sent and not answered. */
  blocked: number;
}

function track(client: Redis): void {
  const state: Tracked = {
    home: client.options.db ?? 0,
    db: client.options.db ?? 0,
    watching: false,
    multi: false,
    blocked: 0,
  };
  tracked.set(client, state);
  client.on('select', (db: number) => void (state.db = db));
  const send = client.sendCommand.bind(client) as unknown as SendCommand;
  (client as unknown as { sendCommand: SendCommand }).sendCommand = (command, ...rest) => {
    const name = command.name;
    if (name === 'watch') state.watching = true;
    else if (name === 'unwatch') state.watching = false;
    else if (name === 'multi') state.multi = true;
    else if (name === 'exec' || name === 'discard') state.multi = state.watching = false;
    else if (blocks(command)) {
      state.blocked++;
      const answered = () => void state.blocked--;
      command.promise.then(answered, answered);
    }
    return send(command, ...rest);
  };
}

/** Why `client` cannot be made clean for another caller, if it cannot. */
function uncleanable(client: Redis, state: Tracked | undefined): string | undefined {
  if (state === undefined) return 'the client was not made by redisConnector: its state is unknown';
  if (client.status !== 'ready') return `the client is ${client.status}, not ready`;
  if (client.mode !== 'normal') return `the client was left in ${client.mode} mode`;
  if ((client as unknown as { condition?: { subscriber?: unknown } }).condition?.subscriber)
    return 'the client was left subscribed';
  if (state.blocked > 0) return 'a blocking command was still waiting on the client';
  return undefined;
}

/**
 * Cleans a client given back: a WATCH or a MULTI left open is ended, the client's own database
 * selected again; nothing is sent when there is nothing to clean. A client in subscriber or
 * monitor mode, blocked by a command still waiting, or no longer ready cannot be made clean: it
 * is retired.
 */
function resetClient(client: Redis): boolean | Promise<boolean> {
  const state = tracked.get(client);
  const unclean = uncleanable(client, state);
  if (unclean !== undefined || state === undefined) throw new Error(unclean);
  if (!state.multi && !state.watching && state.db === state.home) return true;
  return (async () => {
    if (state.multi)
      await client.discard(); // DISCARD also ends a WATCH
    else if (state.watching) await client.unwatch();
    if (state.db !== state.home) await client.select(state.home);
    return !state.multi && !state.watching && state.db === state.home;
  })();
}

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
      create: async (ctx) => {
        const client = await connect(config, {}, ctx);
        track(client);
        return client;
      },
      reset: resetClient,
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

/** Commands that change or hold the state of a connection that other callers share. */
const UNSHARABLE = new Set([
  'select',
  'watch',
  'unwatch',
  'subscribe',
  'psubscribe',
  'ssubscribe',
  'unsubscribe',
  'punsubscribe',
  'sunsubscribe',
  'monitor',
  'quit',
  'reset',
  'hello',
  'auth',
  'client',
  'readonly',
  'readwrite',
  'swapdb',
]);

/** Why `command` may not run on a shared connection, or undefined. */
function unsharable(command: SentCommand): string | undefined {
  const name = command.name.toUpperCase();
  if (blocks(command))
    return `${name} blocks its connection until it answers, and every other caller's commands would wait behind it`;
  if (UNSHARABLE.has(command.name))
    return `${name} changes the state of its connection (its database, a WATCH, a subscription, its client settings), which every caller of the connection would then share`;
  return undefined;
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
      create: async (ctx) => guard(await connect(config, pipelining, ctx)),
      ...common,
    },
    'ioredis',
  );
}

/** Refuses, on `client`, whatever would change or hold the connection for the callers sharing it. */
function guard(client: Redis): Redis {
  const send = client.sendCommand.bind(client) as unknown as SendCommand;
  (client as unknown as { sendCommand: SendCommand }).sendCommand = (command, ...rest) => {
    const why = unsharable(command);
    if (why === undefined) return send(command, ...rest);
    command.reject(
      new Error(
        `${why}: not on a shared connection (sharedRedisConnector); run it on an exclusive one (redisConnector)`,
      ),
    );
    return command.promise;
  };
  const multi = client.multi.bind(client) as (...args: unknown[]) => unknown;
  (client as unknown as { multi: (...args: unknown[]) => unknown }).multi = (...args) => {
    const options = args.find((a) => typeof a === 'object' && a !== null && !Array.isArray(a)) as
      { pipeline?: boolean } | undefined;
    if (options?.pipeline === false) {
      throw new Error(
        'multi({ pipeline: false }) leaves MULTI open on its connection between calls: not on a shared connection (sharedRedisConnector); use multi() (a pipeline) or an exclusive connection (redisConnector)',
      );
    }
    return multi(...args);
  };
  return client;
}

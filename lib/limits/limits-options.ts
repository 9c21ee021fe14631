import { PoolConfigError, type Clock, type PoolLogger } from '../core/index.js';
import { is, keysOf, OptionReader, shown, violation } from '../core/option-rules.js';

/** Limits every limiter takes. */
export interface LimitOptions {
  /** Most leases at once (across every instance, for a Redis limiter). Default: no limit. */
  global?: number;
  /** Most leases at once per key (user, tenant). Default: no limit. */
  perKey?: number;
  /**
   * With a per-key limit, what a call without a key does: `global` (default) counts it against
   * the global limit only; `refuse` fails it with a `PoolConfigError` (a missing key is a bug).
   */
  keyless?: 'global' | 'refuse';
  /**
   * Let a refused caller wait for a slot until its deadline instead of failing at once.
   * Default false: fail at once (the caller gets 429/503 and retries).
   */
  wait?: boolean;
  /** `retryAfterMs` of the errors (the HTTP `Retry-After`). Default 1 000. */
  retryAfterMs?: number;
  /** Name in errors and logs. Default `'limits'`. */
  name?: string;
  clock?: Clock;
  logger?: PoolLogger;
}

// The ioredis types are described here by the fields the limiter reads, so that these types
// compile in an app without ioredis (it is an optional peer). An ioredis client or options object
// fits them as it is; every other ioredis option passes through to ioredis.

/** An ioredis `Redis` or `Cluster` client. */
export interface RedisClientLike {
  readonly isCluster: boolean;
  readonly options: object;
  duplicate(...args: never[]): unknown;
}

/** ioredis `RedisOptions`: the connection fields are typed, any other ioredis option is passed on. */
export interface RedisConnectionOptions {
  host?: string;
  port?: number;
  path?: string;
  username?: string;
  password?: string;
  db?: number;
  /** Node's `tls.connect()` options: TLS to the server. */
  tls?: object;
  /** Sentinel: the sentinels to ask, and `name` the master's name. */
  sentinels?: Partial<{ host: string; port: number }>[];
  name?: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- `unknown` would refuse ioredis's own RedisOptions (an interface has no index signature)
  [option: string]: any;
}

/** A startup node of a Redis Cluster: `6379`, `'host:port'`, `'redis://host:port'` or `{ host, port }`. */
export type RedisClusterNode = string | number | { host?: string; port?: number };

/** How a Redis limiter reaches Redis and behaves when it cannot. */
export interface RedisLimitOptions {
  /** `redis://host:port/db` or `rediss://` (TLS). One of `url`, `client`, `options` or `cluster`. */
  url?: string;
  /**
   * An ioredis client (a `Redis` or a `Cluster`) to copy the connection settings from: it is
   * duplicated with fail-fast settings, never used or closed.
   */
  client?: RedisClientLike;
  /** ioredis options: a host and port, or `sentinels` and `name` for Sentinel, `tls` for TLS. */
  options?: RedisConnectionOptions;
  /**
   * A Redis Cluster: its startup nodes, and ioredis `Cluster` options. Every key of a limiter shares
   * one hash tag (the namespace), so its leases live on one slot.
   */
  cluster?: {
    nodes: RedisClusterNode[];
    /** ioredis `ClusterOptions`, passed on as they are. */
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as for RedisConnectionOptions
    options?: Record<string, any>;
  };
  /** Prefix of every key, inside a hash tag so Redis Cluster keeps them on one slot. Default `'nsp:<limiter name>'`. */
  namespace?: string;
  /** A lease lives this long unless its holder's heartbeat refreshes it; a crashed holder's slots free within it. Default 5 000. */
  leaseTtlMs?: number;
  /** How often held leases are refreshed, in one call. Default a third of `leaseTtlMs`. */
  heartbeatMs?: number;
  /** Bound on one Redis command. Default 1 000. */
  commandTimeoutMs?: number;
  /** After a Redis restart or failover, pause admissions for one TTL while live holders re-register. Default true. */
  restartProtection?: boolean;
  /** When Redis is unreachable: `local` (limits per instance, see `instances`) or `fail-closed` (refuse). Default `local`. */
  fallback?: 'local' | 'fail-closed';
  /** How long Redis must be unreachable before the fallback applies; admissions are refused until then. Default 2 000. */
  fallbackAfterMs?: number;
  /**
   * Instances sharing the limits, for the fallback's share (`floor(limit / instances)`, at least 1).
   * Default: the number of instances that heartbeated within the last TTL (at least 1).
   */
  instances?: number;
  /** Backstop poll of waiting callers, jittered ±50 %. Default 100. */
  pollMs?: number;
}

/** Options after defaults. */
export interface ResolvedLimits {
  readonly name: string;
  readonly global: number;
  readonly perKey: number;
  readonly keyless: 'global' | 'refuse';
  readonly wait: boolean;
  readonly retryAfterMs: number;
}

/** Applies defaults and checks the limits; throws {@link PoolConfigError} naming the field. */
const LIMIT_KEYS = keysOf<LimitOptions>({ global: true, perKey: true, keyless: true, wait: true, retryAfterMs: true, name: true, clock: true, logger: true });

/** Every key of {@link RedisLimitOptions}: any other is refused. */
export const REDIS_KEYS = keysOf<RedisLimitOptions>({
  url: true,
  client: true,
  options: true,
  cluster: true,
  namespace: true,
  leaseTtlMs: true,
  heartbeatMs: true,
  commandTimeoutMs: true,
  restartProtection: true,
  fallback: true,
  fallbackAfterMs: true,
  instances: true,
  pollMs: true,
});

/** `also`: keys a limiter takes besides {@link LimitOptions} (the Redis limiter's `redis`). */
export function resolveLimits(options: LimitOptions, also: readonly string[] = []): ResolvedLimits {
  if (typeof options !== 'object' || options === null) {
    throw new PoolConfigError('limits', 'limits', `must be an object, got ${shown(options)}`, 'limiter');
  }
  const name = options.name ?? 'limits';
  const badName = violation({ subject: 'limiter', name: String(name), path: 'limits.' }, 'name', name, is.text);
  if (badName !== undefined) throw badName;
  const read = new OptionReader({ subject: 'limiter', name, path: 'limits.' }, options).only([...LIMIT_KEYS, ...also], "a limiter's options");
  const global = read.get('global', is.whole(1), Infinity);
  const perKey = read.get('perKey', is.whole(1), Infinity);
  if (perKey !== Infinity && perKey > global) {
    read.fail('perKey', `(${perKey}) must not exceed limits.global (${global}): no key could ever use more than the global limit`);
  }
  return {
    name,
    global,
    perKey,
    keyless: read.get('keyless', is.oneOf('global', 'refuse'), 'global'),
    wait: read.get('wait', is.boolean, false),
    retryAfterMs: read.get('retryAfterMs', is.finiteAbove(0), 1_000),
  };
}

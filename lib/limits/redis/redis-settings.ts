import { is, keysOf, OptionReader, optionError, PoolConfigError, shown } from '../../core/index.js';

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

/** Longest lease TTL: a crashed instance's slots stay taken this long. */
const MAX_TTL_MS = 86_400_000;

/** The Redis settings after defaults. */
export interface RedisSettings {
  readonly namespace: string;
  readonly ttlMs: number;
  readonly heartbeatMs: number;
  readonly commandTimeoutMs: number;
  readonly protect: boolean;
  readonly fallback: 'local' | 'fail-closed';
  readonly fallbackAfterMs: number;
  readonly instances: number | undefined;
  readonly pollMs: number;
}

/** The Redis options after defaults, validated: a clear error for each bad value. */
export function resolveRedis(name: string, r: RedisLimitOptions): RedisSettings {
  const scope = { subject: 'limiter', name, path: 'limits.' } as const;
  if (typeof r !== 'object' || r === null)
    throw optionError(scope, 'redis', `must be an object: { url } or { client }, got ${shown(r)}`);
  const read = new OptionReader({ ...scope, path: 'limits.redis.' }, r).only(REDIS_KEYS, 'the Redis options');
  const given = (['url', 'client', 'options', 'cluster'] as const).filter((k) => r[k] !== undefined);
  if (given.length !== 1) {
    throw optionError(
      scope,
      'redis',
      `needs exactly one of url, client, options or cluster, got ${given.length === 0 ? 'none' : given.join(' and ')}`,
    );
  }
  if (r.cluster !== undefined && !(Array.isArray(r.cluster.nodes) && r.cluster.nodes.length > 0)) {
    read.fail('cluster.nodes', 'must list at least one startup node, e.g. [{ host: "10.0.0.1", port: 6379 }]');
  }
  if (r.url !== undefined) {
    let protocol = '';
    try {
      protocol = new URL(r.url).protocol;
    } catch {
      // reported below
    }
    if (protocol !== 'redis:' && protocol !== 'rediss:')
      read.fail('url', `must be a redis:// or rediss:// URL, got ${shown(r.url)}`);
  }
  const ttlMs = read.get(
    'leaseTtlMs',
    {
      says: `a whole number of ms from 10 to ${MAX_TTL_MS} (a day)`,
      ok: (v) => Number.isInteger(v) && (v as number) >= 10 && (v as number) <= MAX_TTL_MS,
    },
    5_000,
  );
  const heartbeatMs = read.get('heartbeatMs', is.finiteAtLeast(1), ttlMs / 3);
  if (heartbeatMs >= ttlMs) read.fail('heartbeatMs', `(${heartbeatMs}) must be below leaseTtlMs (${ttlMs})`);
  const namespace = read.get(
    'namespace',
    { says: 'a non-empty string without { or }', ok: (v) => is.text.ok(v) && !/[{}]/.test(v as string) },
    `nsp:${name.replace(/[{}]/g, '_')}`,
  );
  return {
    namespace,
    ttlMs,
    heartbeatMs,
    commandTimeoutMs: read.get('commandTimeoutMs', is.finiteAtLeast(1), 1_000),
    protect: read.get('restartProtection', is.boolean, true),
    fallback: read.get('fallback', is.oneOf('local', 'fail-closed'), 'local'),
    fallbackAfterMs: read.get('fallbackAfterMs', is.finiteAtLeast(0), 2_000),
    instances: read.get('instances', is.whole(1)),
    pollMs: read.get('pollMs', is.finiteAtLeast(1), 100),
  };
}

/** Why a limiter refuses admissions before its `start()`. */
export function notStarted(limiter: string): PoolConfigError {
  return new PoolConfigError(
    limiter,
    'limiter',
    'is not started: call start() (PoolModule does) before admitting',
    'limiter',
  );
}

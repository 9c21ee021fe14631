// The limiter's connection to Redis: fail-fast clients, bounded calls, a clean hang-up, and what
// a Redis error means for the limiter's user.
import type { Cluster, ClusterOptions, Redis, RedisOptions } from 'ioredis';
import { backoffMs, messageOf, PoolConfigError } from '../../core/index.js';
import type { RedisLimitOptions } from './redis-settings.js';

/** A connection to Redis: one server (or Sentinel's master), or a Cluster. */
export type Client = Redis | Cluster;

/**
 * A client of the limiter's own, with fail-fast settings: no offline queue, no retries per
 * command, each command bounded by `timeout`, reconnecting in the background four times a
 * heartbeat at least (held leases have two heartbeats of their TTL left: a failover or a restart
 * shorter than that is back before they lapse), once a second at most. A given client is
 * duplicated (never used or closed).
 */
export async function connectRedis(
  limiter: string,
  connection: RedisLimitOptions,
  timeout: number,
  heartbeatMs: number,
): Promise<Client> {
  const most = Math.min(1_000, heartbeatMs / 4);
  const reconnect = (attempt: number) => backoffMs(attempt, Math.min(100, most), most);
  const { url, client, options, cluster } = connection;
  const own = client === undefined ? options : (client as Redis).options;
  const failFast: RedisOptions = {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: timeout,
    disconnectTimeout: timeout,
    retryStrategy: reconnect,
    // ioredis's ready check runs INFO, which a hardened ACL user may not (it then warns on every
    // connect); a loading server answers LOADING, which counts as unreachable. Behind Sentinel
    // the check also confirms the node's role, so it stays.
    ...(own?.sentinels === undefined ? { enableReadyCheck: false } : {}),
  };
  // A Cluster retries a command through redirections and failovers for as long as its own
  // settings allow: short waits here, and each call is bounded by commandTimeoutMs besides.
  const clusterFailFast = (given: ClusterOptions | undefined): ClusterOptions => ({
    ...given,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRedirections: 4,
    retryDelayOnFailover: 50,
    retryDelayOnClusterDown: 50,
    retryDelayOnTryAgain: 50,
    slotsRefreshTimeout: timeout,
    slotsRefreshInterval: 5_000,
    clusterRetryStrategy: reconnect,
    redisOptions: {
      ...given?.redisOptions,
      commandTimeout: timeout,
      maxRetriesPerRequest: 0,
      connectTimeout: timeout * 2,
    },
  });
  if (client?.isCluster) {
    const given = client as Cluster;
    return given.duplicate(undefined, clusterFailFast(given.options));
  }
  if (client !== undefined) return (client as Redis).duplicate(failFast);
  let ioredis: { Redis: typeof Redis; Cluster: typeof Cluster };
  try {
    ioredis = await import('ioredis');
  } catch {
    throw new PoolConfigError(limiter, 'limits.redis', 'needs the ioredis package: npm install ioredis', 'limiter');
  }
  if (cluster !== undefined) return new ioredis.Cluster(cluster.nodes, clusterFailFast(cluster.options));
  return url === undefined
    ? new ioredis.Redis({ ...options, ...failFast })
    : new ioredis.Redis(url, { ...options, ...failFast });
}

/**
 * A call bounded by commandTimeoutMs: a Cluster's own retries may outlast its per-command timeout.
 * A Cluster whose call timed out asks for the slots again: a frozen master answers no MOVED, and
 * ioredis would keep sending to it after its replica took over.
 */
export async function bounded<V>(redis: Client | undefined, call: Promise<V>, timeout: number): Promise<V> {
  if (!redis?.isCluster) return call;
  try {
    return await withTimeout(call, timeout, 'the command');
  } catch (err) {
    (redis as Cluster).refreshSlotsCache();
    throw err;
  }
}

/** A second connection for pub/sub (a subscribed connection runs nothing else), queueing while it connects. */
export function subscriberOf(redis: Client): Client {
  return redis.isCluster
    ? (redis as Cluster).duplicate(undefined, { enableOfflineQueue: true, lazyConnect: false })
    : (redis as Redis).duplicate({ enableOfflineQueue: true, lazyConnect: false });
}

/** `promise`, or a rejection after `ms`. */
export function withTimeout<V>(promise: Promise<V>, ms: number, what: string): Promise<V> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** QUIT when connected (a clean close); otherwise stop reconnecting and drop the socket. */
export async function hangUp(redis: Client): Promise<void> {
  if (redis.status === 'ready') {
    try {
      await redis.quit();
      return;
    } catch {
      // fall through
    }
  }
  redis.disconnect();
}

/** Where a limiter's Redis is, to tell two limiters on one Redis apart. */
export function whereOf({ url, client, options, cluster }: RedisLimitOptions): string {
  if (url !== undefined) return url;
  const nodes =
    cluster?.nodes ?? (client?.isCluster ? (client as unknown as { startupNodes: unknown[] }).startupNodes : undefined);
  if (nodes !== undefined) return `cluster ${JSON.stringify(nodes)}`;
  const o = client === undefined ? options : (client as Redis).options;
  if (o?.sentinels !== undefined) return `sentinel ${o.name ?? ''} ${JSON.stringify(o.sentinels)}/${o.db ?? 0}`;
  return `${o?.host}:${o?.port}/${o?.db ?? 0}`;
}

/** What a Redis error means for the limiter, with what to change; the error's own text kept. */
export function describeRedisError(err: unknown): string {
  const text = messageOf(err);
  const code = String((err as { code?: unknown })?.code ?? '');
  if (/^NOPERM/.test(text)) {
    return `the Redis user may not run a command the limiter needs (${text}); grant it +@scripting +@transaction +@sortedset +@hash +@pubsub +@connection, or use another user`;
  }
  if (/^READONLY/.test(text))
    return `the URL points at a read-only replica (${text}); point it at the primary, or use Sentinel`;
  if (/WRONGPASS|NOAUTH|invalid username-password|AUTH failed/i.test(text)) {
    return `Redis refused the credentials (${text}); check the user and password of the URL or options`;
  }
  if (
    /^(ERR_TLS|ERR_SSL|CERT_|DEPTH_ZERO|SELF_SIGNED|UNABLE_TO_)/.test(code) ||
    /SSL routines|certificate|TLS/i.test(text)
  ) {
    return `the TLS connection to Redis failed (${code === '' ? text : `${code}: ${text}`}); check rediss:// and the certificates`;
  }
  if (code === 'ECONNRESET')
    return `Redis closed the connection (${text}); if it takes TLS connections only, use rediss:// (or tls in the options)`;
  if (/^MOVED/.test(text))
    return `the URL points at a Redis Cluster node (${text}); pass the cluster as redis.cluster: { nodes: [...] } (or a Cluster client)`;
  if (/Failed to refresh slots cache|None of startup nodes is available/.test(text)) {
    return `no startup node of the Redis Cluster answered (${text}); check redis.cluster.nodes and that the cluster is up`;
  }
  if (/^CLUSTERDOWN|^TRYAGAIN/.test(text)) return `the Redis Cluster cannot serve the namespace's slot (${text})`;
  return text;
}

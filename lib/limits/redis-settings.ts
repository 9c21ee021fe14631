import { PoolConfigError } from '../core/index.js';
import type { RedisLimitOptions } from './limits-options.js';

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
  if (typeof r !== 'object' || r === null) throw new PoolConfigError(name, 'limits.redis', 'must be an object: { url } or { client }', 'limiter');
  const given = (['url', 'client', 'options', 'cluster'] as const).filter((k) => r[k] !== undefined);
  if (given.length !== 1) {
    const got = given.length === 0 ? 'none' : given.join(' and ');
    throw new PoolConfigError(name, 'limits.redis', `needs exactly one of url, client, options or cluster, got ${got}`, 'limiter');
  }
  if (r.cluster !== undefined && !(Array.isArray(r.cluster.nodes) && r.cluster.nodes.length > 0)) {
    throw new PoolConfigError(name, 'limits.redis.cluster.nodes', 'must list at least one startup node, e.g. [{ host: "10.0.0.1", port: 6379 }]', 'limiter');
  }
  if (r.url !== undefined) {
    let protocol = '';
    try {
      protocol = new URL(r.url).protocol;
    } catch {
      // reported below
    }
    if (protocol !== 'redis:' && protocol !== 'rediss:') {
      throw new PoolConfigError(name, 'limits.redis.url', `must be a redis:// or rediss:// URL, got ${JSON.stringify(r.url)}`, 'limiter');
    }
  }
  const ms = (field: keyof RedisLimitOptions, fallback: number, min = 1): number => {
    const v = r[field] ?? fallback;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min) {
      throw new PoolConfigError(name, `limits.redis.${field}`, `must be a finite number of ${min} or more, got ${String(v)}`, 'limiter');
    }
    return v;
  };
  const ttlMs = ms('leaseTtlMs', 5_000, 10);
  if (!Number.isInteger(ttlMs) || ttlMs > MAX_TTL_MS) {
    throw new PoolConfigError(name, 'limits.redis.leaseTtlMs', `must be a whole number of ms from 10 to ${MAX_TTL_MS} (a day), got ${ttlMs}`, 'limiter');
  }
  const heartbeatMs = ms('heartbeatMs', ttlMs / 3);
  if (heartbeatMs >= ttlMs) throw new PoolConfigError(name, 'limits.redis.heartbeatMs', `(${heartbeatMs}) must be below leaseTtlMs (${ttlMs})`, 'limiter');
  const fallback = r.fallback ?? 'local';
  if (fallback !== 'local' && fallback !== 'fail-closed') {
    throw new PoolConfigError(name, 'limits.redis.fallback', `must be 'local' or 'fail-closed', got ${String(fallback)}`, 'limiter');
  }
  const namespace = r.namespace ?? `nsp:${name.replace(/[{}]/g, '_')}`;
  if (typeof namespace !== 'string' || namespace.length === 0 || /[{}]/.test(namespace)) {
    throw new PoolConfigError(name, 'limits.redis.namespace', 'must be a non-empty string without { or }', 'limiter');
  }
  if (r.instances !== undefined && !(Number.isInteger(r.instances) && r.instances >= 1)) {
    throw new PoolConfigError(name, 'limits.redis.instances', `must be a whole number of 1 or more, got ${String(r.instances)}`, 'limiter');
  }
  return {
    namespace,
    ttlMs,
    heartbeatMs,
    commandTimeoutMs: ms('commandTimeoutMs', 1_000),
    protect: r.restartProtection ?? true,
    fallback,
    fallbackAfterMs: ms('fallbackAfterMs', 2_000, 0),
    instances: r.instances,
    pollMs: ms('pollMs', 100),
  };
}


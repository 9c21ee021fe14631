import { is, OptionReader, optionError, shown } from '../core/option-rules.js';
import { REDIS_KEYS, type RedisLimitOptions } from './limits-options.js';

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
  if (typeof r !== 'object' || r === null) throw optionError(scope, 'redis', `must be an object: { url } or { client }, got ${shown(r)}`);
  const read = new OptionReader({ ...scope, path: 'limits.redis.' }, r).only(REDIS_KEYS, 'the Redis options');
  const given = (['url', 'client', 'options', 'cluster'] as const).filter((k) => r[k] !== undefined);
  if (given.length !== 1) {
    throw optionError(scope, 'redis', `needs exactly one of url, client, options or cluster, got ${given.length === 0 ? 'none' : given.join(' and ')}`);
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
    if (protocol !== 'redis:' && protocol !== 'rediss:') read.fail('url', `must be a redis:// or rediss:// URL, got ${shown(r.url)}`);
  }
  const ttlMs = read.get('leaseTtlMs', { says: `a whole number of ms from 10 to ${MAX_TTL_MS} (a day)`, ok: (v) => Number.isInteger(v) && (v as number) >= 10 && (v as number) <= MAX_TTL_MS }, 5_000);
  const heartbeatMs = read.get('heartbeatMs', is.finiteAtLeast(1), ttlMs / 3);
  if (heartbeatMs >= ttlMs) read.fail('heartbeatMs', `(${heartbeatMs}) must be below leaseTtlMs (${ttlMs})`);
  const namespace = read.get('namespace', { says: 'a non-empty string without { or }', ok: (v) => is.text.ok(v) && !/[{}]/.test(v as string) }, `nsp:${name.replace(/[{}]/g, '_')}`);
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

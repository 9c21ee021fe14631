import { CapacityExceededError, KeyLimitError, PoolConfigError, type AdmissionRequest } from '../../core/index.js';
import type { ResolvedLimits } from './limits-options.js';
import type { Refusal } from './slot-counts.js';

/**
 * The request's key, checked: a non-empty string. Without one the lease counts against the
 * global limit only, unless the limiter refuses keyless calls (`keyless: 'refuse'`); `null` (no
 * key on purpose) always counts against the global limit only.
 */
export function keyOf(request: AdmissionRequest, limits: ResolvedLimits): string | undefined {
  const { key, pool } = request;
  if (key === null) return undefined;
  if (key === undefined) {
    if (limits.perKey === Infinity || limits.keyless === 'global') return undefined;
    const allows = Number.isNaN(limits.perKey) ? 'limits leases per key' : `allows ${limits.perKey} leases per key`;
    throw new PoolConfigError(
      pool,
      'acquire.key',
      `is required: the limiter "${limits.name}" ${allows} and refuses calls without one (keyless: 'refuse'); pass { key } to acquire() or use() ({ key: null } for none on purpose), key() or key: false to @UsePooled, or requestKey to PoolModule`,
    );
  }
  if (typeof key !== 'string' || key.length === 0) {
    throw new PoolConfigError(
      pool,
      'acquire.key',
      `must be a non-empty string, got ${key === '' ? 'an empty string' : typeof key}`,
    );
  }
  return key;
}

/** The limit of `key` (Infinity without one): see `ResolvedLimits.keyLimit`. */
export function keyLimitOf(key: string | undefined, limits: ResolvedLimits): number {
  return key === undefined ? Infinity : limits.keyLimit(key);
}

/** {@link keyLimitOf}, or the error of a `perKey` function that failed. */
export function keyLimitOrError(key: string | undefined, limits: ResolvedLimits): number | PoolConfigError {
  try {
    return keyLimitOf(key, limits);
  } catch (err) {
    return err as PoolConfigError;
  }
}

/** The keys holding the most leases, each with its own limit when the limits give one per key (a `perKey` function). */
export function withKeyLimits(
  top: { key: string; leases: number }[],
  limits: ResolvedLimits,
): { key: string; leases: number; limit?: number }[] {
  if (!Number.isNaN(limits.perKey)) return top;
  return top.map((entry) => {
    const limit = keyLimitOrError(entry.key, limits);
    return typeof limit === 'number' ? { ...entry, limit } : entry;
  });
}

/** The error for a refused admission; `keyLimit`: the limit of the request's key. */
export function refusalError(
  refusal: Exclude<Refusal, null>,
  request: AdmissionRequest,
  limits: ResolvedLimits,
  keyLimit: number,
): Error {
  return refusal === 'global'
    ? new CapacityExceededError(request.pool, limits.global, limits.retryAfterMs)
    : new KeyLimitError(request.pool, request.key!, keyLimit, limits.retryAfterMs);
}

/** A signal that never aborts, for leases that cannot be lost. */
export const neverLost: AbortSignal = new AbortController().signal;

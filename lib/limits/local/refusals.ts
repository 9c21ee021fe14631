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
    throw new PoolConfigError(
      pool,
      'acquire.key',
      `is required: the limiter "${limits.name}" allows ${limits.perKey} leases per key and refuses calls without one (keyless: 'refuse'); pass { key } to acquire() or use() ({ key: null } for none on purpose), key() or key: false to @UsePooled, or requestKey to PoolModule`,
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

/** The error for a refused admission. */
export function refusalError(
  refusal: Exclude<Refusal, null>,
  request: AdmissionRequest,
  limits: ResolvedLimits,
): Error {
  return refusal === 'global'
    ? new CapacityExceededError(request.pool, limits.global, limits.retryAfterMs)
    : new KeyLimitError(request.pool, request.key!, limits.perKey, limits.retryAfterMs);
}

/** A signal that never aborts, for leases that cannot be lost. */
export const neverLost: AbortSignal = new AbortController().signal;

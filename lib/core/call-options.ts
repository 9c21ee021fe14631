import { PoolConfigError } from './errors.js';

/** Options of one `acquire()`. */
export interface AcquireOptions {
  /** Deadline of this acquire, from the call to the lease. Default: the pool's `acquireTimeoutMs`. */
  timeoutMs?: number;
  /** Abort the wait. The acquire rejects with `signal.reason`. */
  signal?: AbortSignal;
  /**
   * Admission key (a user or tenant) for the pool's admission limiter's per-key limit. A
   * non-empty string; without a limiter it is checked and then has no effect.
   */
  key?: string;
}

/** How `use()` retries when the callback fails. */
export interface RetryOptions {
  /** Total tries, the first included. Default 1 (no retry). */
  attempts?: number;
  /** Which errors to retry besides those the connector's `isFatal` accepts. */
  retryOn?: (err: unknown) => boolean;
  /** First delay between tries; doubles each time. Default 10. */
  baseDelayMs?: number;
  /** Most delay between tries. Default 1 000. */
  maxDelayMs?: number;
}

/** Options of one `use()`. */
export interface UseOptions extends AcquireOptions {
  /** Retry on a broken connection: the failed one is retired, the next try gets another. */
  retry?: RetryOptions;
  /** `reuse` (default): inside a `use()` of this pool, run on its lease; `new`: always take a new one. */
  propagation?: 'reuse' | 'new';
}

/** Options of `close()`. */
export interface CloseOptions {
  /** How long to let leases finish before closing their connections anyway; `Infinity`: wait for them. Default 10 000. */
  graceMs?: number;
}

/** The first problem with the options of `close()`, if any. */
export function checkCloseOptions(pool: string, options: CloseOptions): PoolConfigError | undefined {
  if (typeof options !== 'object' || options === null) return new PoolConfigError(pool, 'close', 'options must be an object');
  const { graceMs } = options;
  if (graceMs !== undefined && !(typeof graceMs === 'number' && graceMs >= 0)) {
    return new PoolConfigError(pool, 'close.graceMs', `must be a number of 0 or more (Infinity: wait for every lease), got ${String(graceMs)}`);
  }
  return undefined;
}

const optionalPositive = (v: unknown) => v === undefined || (typeof v === 'number' && v > 0);

/** The first problem with the options of one acquire, if any. */
export function checkAcquireOptions(pool: string, options: AcquireOptions): PoolConfigError | undefined {
  const { timeoutMs, signal, key } = options;
  if (!optionalPositive(timeoutMs)) {
    return new PoolConfigError(pool, 'acquire.timeoutMs', `must be a number above 0, got ${String(timeoutMs)}`);
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    return new PoolConfigError(pool, 'acquire.signal', 'must be an AbortSignal');
  }
  if (key !== undefined && (typeof key !== 'string' || key.length === 0)) {
    return new PoolConfigError(pool, 'acquire.key', `must be a non-empty string, got ${key === '' ? 'an empty string' : typeof key}`);
  }
  return undefined;
}

/** The first problem with the options of one use(), if any: its acquire options, retry and propagation. */
export function checkUseOptions(pool: string, options: UseOptions): PoolConfigError | undefined {
  const invalid = checkAcquireOptions(pool, options);
  if (invalid !== undefined) return invalid;
  const { retry, propagation } = options;
  if (propagation !== undefined && propagation !== 'reuse' && propagation !== 'new') {
    return new PoolConfigError(pool, 'propagation', `must be 'reuse' or 'new', got ${String(propagation)}`);
  }
  if (retry === undefined) return undefined;
  const attempts = retry.attempts ?? 1;
  if (!Number.isInteger(attempts) || attempts < 1) {
    return new PoolConfigError(pool, 'retry.attempts', `must be a whole number of 1 or more, got ${String(attempts)}`);
  }
  for (const field of ['baseDelayMs', 'maxDelayMs'] as const) {
    const v = retry[field];
    if (v !== undefined && !(typeof v === 'number' && v >= 0 && Number.isFinite(v))) {
      return new PoolConfigError(pool, `retry.${field}`, `must be a finite number of 0 or more, got ${String(v)}`);
    }
  }
  if (retry.retryOn !== undefined && typeof retry.retryOn !== 'function') {
    return new PoolConfigError(pool, 'retry.retryOn', `must be a function, got ${typeof retry.retryOn}`);
  }
  return undefined;
}

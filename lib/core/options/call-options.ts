import {
  is,
  optionError,
  type OptionScope,
  type PoolConfigError,
  type Rule,
  shown,
  unknownKey,
  violation,
} from '../common/index.js';

/** Options of one `acquire()`. */
export interface AcquireOptions {
  /** Deadline of this acquire, from the call to the lease. Default: the pool's `acquireTimeoutMs`. */
  timeoutMs?: number;
  /** Abort the wait. The acquire rejects with `signal.reason`. */
  signal?: AbortSignal;
  /**
   * Admission key (a user or tenant) for the pool's admission limiter's per-key limit. A
   * non-empty string; without a limiter it is checked and then has no effect. `null`: no key on
   * purpose, so the lease counts against the global limit only, even when the limiter refuses
   * calls without a key (`keyless: 'refuse'`).
   */
  key?: string | null;
  /**
   * The priority class of this call, for a limiter with classes (`limits.classes`: `'live'`,
   * `'batch'`): a non-empty string the limiter knows. Absent: the limiter's default class.
   * Without a limiter, or with one without classes, it is checked and then has no effect.
   */
  class?: string;
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
  /**
   * `reuse` (default): inside a `use()` of this pool, run on its lease; `new`: always take a new
   * one. `none`: always a new one, and no scope of its own: the connection is only the callback's
   * argument (inside, `pool.current` and nested calls see the enclosing scope if there is one,
   * else `pool.current` throws and nested calls take their own leases), so nothing needs
   * AsyncLocalStorage and its promise hook stays off (see the README's "Cost of the scope").
   */
  propagation?: 'reuse' | 'new' | 'none';
}

/** Options of `close()`. */
export interface CloseOptions {
  /** How long to let leases finish before closing their connections anyway; `Infinity`: wait for them. Default 10 000. */
  graceMs?: number;
}

/**
 * Where the errors of one call's options go. A pool's calls name the pool and the call before
 * each field (`pool "db": option "acquire.timeoutMs"`); a decorated method names itself and the
 * fields as its options spell them (`@UsePooled('db') on Catalog.find: timeoutMs`).
 */
export type CallScope = (call: 'acquire' | 'use' | 'retry' | 'close') => OptionScope;

/** The scope of a pool's own calls. */
const poolCalls =
  (pool: string): CallScope =>
  (call) => ({ subject: 'pool', name: pool, path: call === 'use' ? undefined : `${call}.` });

const graceRule = is.noted(is.atLeast(0), 'Infinity: wait for every lease');
const keyRule: Rule = { says: 'a non-empty string, or null for no key', ok: (v) => v === null || is.text.ok(v) };

/** The error for a call's options that are not an object (`null`, a number): named after the call. */
function notAnObject(scope: OptionScope, call: string, options: unknown): PoolConfigError {
  return optionError(
    { subject: scope.subject, name: scope.name },
    call,
    `options must be an object, got ${shown(options)}`,
  );
}

/** The first problem with the options of `close()`, if any. */
export function checkCloseOptions(pool: string, options: CloseOptions): PoolConfigError | undefined {
  if (typeof options !== 'object' || options === null)
    return notAnObject({ subject: 'pool', name: pool }, 'close', options);
  return violation(poolCalls(pool)('close'), 'graceMs', options.graceMs, graceRule);
}

const timeoutRule = is.above(0);

/** Whether one acquire's options are all valid: the common case, tested without making anything. */
function validAcquire(options: AcquireOptions): boolean {
  if (typeof options !== 'object' || options === null) return false;
  const { timeoutMs, signal, key } = options;
  return (
    (signal === undefined || signal instanceof AbortSignal) &&
    (timeoutMs === undefined || timeoutRule.ok(timeoutMs)) &&
    (key === undefined || keyRule.ok(key)) &&
    (options.class === undefined || is.text.ok(options.class))
  );
}

/** The first problem with the options of one acquire, if any. */
export function checkAcquireOptions(
  pool: string,
  options: AcquireOptions,
  scopeOf?: CallScope,
): PoolConfigError | undefined {
  if (validAcquire(options)) return undefined;
  const scope = (scopeOf ?? poolCalls(pool))('acquire');
  if (typeof options !== 'object' || options === null) return notAnObject(scope, 'acquire', options);
  const { timeoutMs, signal, key } = options;
  if (signal !== undefined && !(signal instanceof AbortSignal))
    return optionError(scope, 'signal', `must be an AbortSignal, got ${shown(signal)}`);
  return (
    violation(scope, 'timeoutMs', timeoutMs, timeoutRule) ??
    violation(scope, 'key', key, keyRule) ??
    violation(scope, 'class', options.class, is.text)
  );
}

const retryRules = {
  attempts: is.whole(1),
  baseDelayMs: is.finiteAtLeast(0),
  maxDelayMs: is.finiteAtLeast(0),
  retryOn: is.function,
} as const;
const RETRY_KEYS = Object.keys(retryRules);
const propagationRule = is.oneOf('reuse', 'new', 'none');

/** The first problem with the options of one use(), if any: its acquire options, retry and propagation. */
export function checkUseOptions(pool: string, options: UseOptions, callScope?: CallScope): PoolConfigError | undefined {
  // Checked on every call: the common case (no retry) makes nothing.
  if (
    validAcquire(options) &&
    options.retry === undefined &&
    (options.propagation === undefined || propagationRule.ok(options.propagation))
  )
    return undefined;
  const scopeOf = callScope ?? poolCalls(pool);
  if (typeof options !== 'object' || options === null) return notAnObject(scopeOf('use'), 'use', options);
  const invalid = checkAcquireOptions(pool, options, scopeOf);
  if (invalid !== undefined) return invalid;
  // Named as in the options (`retry.attempts`): use() and @UsePooled share them.
  const scope = scopeOf('use');
  const { retry, propagation } = options;
  const wrong =
    violation(scope, 'propagation', propagation, propagationRule) ?? violation(scope, 'retry', retry, is.object);
  if (wrong !== undefined || retry === undefined) return wrong;
  const retryScope = scopeOf('retry');
  const unknown = unknownKey(retryScope, retry, RETRY_KEYS, 'the retry options');
  if (unknown !== undefined) return unknown;
  for (const field of ['attempts', 'baseDelayMs', 'maxDelayMs', 'retryOn'] as const) {
    const bad = violation(retryScope, field, retry[field], retryRules[field]);
    if (bad !== undefined) return bad;
  }
  return undefined;
}

/** Options objects that were checked once and cannot change since (frozen). */
const checked = new WeakSet<UseOptions>();

/**
 * @internal Checks `options` once and returns a frozen copy that `use()` takes without checking
 * again (a decorated method's options, built once for every call). Throws the first problem.
 */
export function checkedOnce(pool: string, options: UseOptions, scopeOf?: CallScope): UseOptions {
  const invalid = checkUseOptions(pool, options, scopeOf);
  if (invalid !== undefined) throw invalid;
  const retry = options.retry === undefined ? undefined : Object.freeze({ ...options.retry });
  const copy = Object.freeze({ ...options, retry });
  checked.add(copy);
  return copy;
}

/** @internal Whether `options` came from {@link checkedOnce}. */
export function isCheckedOnce(options: UseOptions): boolean {
  return checked.has(options);
}

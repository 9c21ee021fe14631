import { systemClock, type Clock } from './clock.js';
import type { AdmissionLimiter } from './admission.js';
import type { Connector } from './connector.js';
import { PoolConfigError } from './errors.js';
import { consoleLogger, type PoolLogger } from './logger.js';
import { DEFAULT_HEALTH_THRESHOLDS, type HealthThresholds } from './health.js';

/** How an acquire picks among ready connections that have room. */
export type SelectionStrategy = 'spread' | 'pack';

/** Options of a {@link ConnectionPool}. Every field is optional; see the README's table. */
export interface PoolOptions {
  /** Name used in errors, logs and stats. Default `'default'`. */
  name?: string;
  /** Most connections open or opening (draining ones excepted). Default 10. */
  maxSize?: number;
  /** Connections kept open: opened by `warmup()` and topped up after every close. Default 0. */
  minSize?: number;
  /** Callers one connection serves at once; 1 is a classic exclusive pool. Default 100. */
  clientLimit?: number;
  /** A connection with no client for this long is closed (down to `minSize`). Default 300 000. */
  maxIdleMs?: number;
  /** Connections are replaced after this age (±2.5 % jitter), the replacement opened first. Default `Infinity`. */
  maxLifetimeMs?: number;
  /** Bound on one create + ready; `Infinity`: no bound. Default 10 000. */
  createTimeoutMs?: number;
  /** Default deadline of one acquire, from call to lease; `Infinity`: wait as long as it takes. Default 60 000. */
  acquireTimeoutMs?: number;
  /**
   * Most callers queued beyond the connections the pool can still open for them; past it,
   * `QueueFullError`. A cold pool still grows: 0 refuses only callers that would have to wait
   * for a busy connection. Default `Infinity`.
   */
  maxWaiting?: number;
  /** `spread` (fewest clients first) or `pack` (busiest connection with room first). Default `spread`. */
  strategy?: SelectionStrategy;
  /** Most creates in flight at once. Default `maxSize`. */
  maxConcurrentCreates?: number;
  /** Open one more connection in the background once clients per ready connection reach this share of `clientLimit`. Default 0.8; 1 turns it off. */
  growAt?: number;
  /**
   * Run the connector's `validate` on a connection idle this long before handing it out; 0
   * validates every connection that served a caller before it serves the next one; `Infinity`
   * never validates. A connection just opened or just validated is not validated again. Default 30 000.
   */
  validateAfterIdleMs?: number;
  /** Bound on one `validate()`; past it the connection counts as dead. `Infinity`: no bound. Default 5 000. */
  validateTimeoutMs?: number;
  /**
   * Bound on one connector `close()`; past it a warning is logged and the pool stops waiting, so
   * `pool.close()` always completes. `Infinity`: wait for it. Default 5 000.
   */
  closeTimeoutMs?: number;
  /**
   * The blocking period: while no connection is ready, nothing is opening and the last create
   * failed, acquires fail at once with `ConnectionFailedError` (the connect error as `cause`)
   * until the backoff's next attempt, and queued callers that nothing else can serve fail with
   * it too, instead of each waiting out its deadline. `false`: callers wait for their deadline.
   * Default true.
   */
  blockingPeriod?: boolean;
  /** How often the background reaper runs. Default 1 000. */
  reapIntervalMs?: number;
  /** First backoff after a failed create; doubles per failure. Default 10. */
  createBackoffMs?: number;
  /** Most backoff between creates. Default 5 000. */
  maxCreateBackoffMs?: number;
  /** Lifetime jitter as a fraction. Default 0.025. */
  lifetimeJitter?: number;
  /** Health thresholds. */
  health?: HealthThresholds;
  /** Time source. Default: `performance.now()` and unref'd timers. */
  clock?: Clock;
  /** Logger. Default: warnings and errors to the console. */
  logger?: PoolLogger;
  /** Admission limits checked before every checkout (`LocalLimiter`, `RedisLimiter`). Default: none. */
  limiter?: AdmissionLimiter;
}

/** Options after defaults and validation. */
export interface ResolvedOptions {
  readonly name: string;
  readonly maxSize: number;
  readonly minSize: number;
  readonly clientLimit: number;
  readonly maxIdleMs: number;
  readonly maxLifetimeMs: number;
  readonly createTimeoutMs: number;
  readonly acquireTimeoutMs: number;
  readonly maxWaiting: number;
  readonly strategy: SelectionStrategy;
  readonly maxConcurrentCreates: number;
  readonly growAt: number;
  readonly validateAfterIdleMs: number;
  readonly validateTimeoutMs: number;
  readonly closeTimeoutMs: number;
  readonly blockingPeriod: boolean;
  readonly reapIntervalMs: number;
  readonly createBackoffMs: number;
  readonly maxCreateBackoffMs: number;
  readonly lifetimeJitter: number;
  readonly health: Required<HealthThresholds>;
  readonly clock: Clock;
  readonly logger: PoolLogger;
  readonly limiter: AdmissionLimiter | undefined;
}

type Check = (value: number) => string | undefined;
const integer: Check = (v) => (Number.isInteger(v) ? undefined : 'must be a whole number');
const positive: Check = (v) => (v > 0 ? undefined : 'must be greater than 0');
const nonNegative: Check = (v) => (v >= 0 ? undefined : 'must be 0 or more');
const fraction: Check = (v) => (v > 0 && v <= 1 ? undefined : 'must be a fraction in (0, 1]');
const finiteOrInfinity: Check = (v) => (Number.isNaN(v) ? 'must be a number, not NaN' : undefined);
const finite: Check = (v) => (Number.isFinite(v) ? undefined : 'must be a finite number');

function num(pool: string, field: string, value: unknown, fallback: number, ...checks: Check[]): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number') throw new PoolConfigError(pool, field, `must be a number, got ${typeof value}`);
  for (const check of [finiteOrInfinity, ...checks]) {
    const problem = check(value);
    if (problem) throw new PoolConfigError(pool, field, `${problem}, got ${value}`);
  }
  return value;
}

const CONNECTOR_METHODS = ['ready', 'close', 'validate', 'isFatal'] as const;

/** Checks that `connector` has a `create` function and that its other members, if set, are functions. */
export function validateConnector(pool: string, connector: unknown): void {
  if (typeof connector !== 'object' || connector === null) {
    throw new PoolConfigError(pool, 'connector', 'must be an object with a create() method');
  }
  const c = connector as Record<string, unknown>;
  if (typeof c.create !== 'function') throw new PoolConfigError(pool, 'connector.create', 'must be a function');
  for (const method of CONNECTOR_METHODS) {
    if (c[method] !== undefined && typeof c[method] !== 'function') {
      throw new PoolConfigError(pool, `connector.${method}`, `must be a function when set, got ${typeof c[method]}`);
    }
  }
}

/** Applies defaults and validates every field; throws {@link PoolConfigError} naming the first bad one. */
export function resolveOptions(options: PoolOptions = {}, connector?: Connector<unknown>): ResolvedOptions {
  if (typeof options !== 'object' || options === null) {
    throw new PoolConfigError('default', 'options', 'must be an object');
  }
  const name = options.name ?? 'default';
  if (typeof name !== 'string' || name.length === 0) {
    throw new PoolConfigError(String(name), 'name', 'must be a non-empty string');
  }
  if (connector !== undefined) validateConnector(name, connector);
  const n = (field: keyof PoolOptions, fallback: number, ...checks: Check[]) =>
    num(name, field, options[field], fallback, ...checks);

  const maxSize = n('maxSize', 10, finite, integer, positive);
  const minSize = n('minSize', 0, finite, integer, nonNegative);
  if (minSize > maxSize) throw new PoolConfigError(name, 'minSize', `(${minSize}) must not exceed maxSize (${maxSize})`);
  const createBackoffMs = n('createBackoffMs', 10, finite, positive);
  const maxCreateBackoffMs = n('maxCreateBackoffMs', 5_000, finite, positive);
  if (maxCreateBackoffMs < createBackoffMs) {
    throw new PoolConfigError(name, 'maxCreateBackoffMs', `(${maxCreateBackoffMs}) must not be below createBackoffMs (${createBackoffMs})`);
  }
  const strategy = options.strategy ?? 'spread';
  if (strategy !== 'spread' && strategy !== 'pack') {
    throw new PoolConfigError(name, 'strategy', `must be 'spread' or 'pack', got ${String(strategy)}`);
  }
  const health = options.health ?? {};
  const degraded = num(name, 'health.degraded', health.degraded, DEFAULT_HEALTH_THRESHOLDS.degraded, fraction);
  const critical = num(name, 'health.critical', health.critical, DEFAULT_HEALTH_THRESHOLDS.critical, fraction);
  if (critical < degraded) throw new PoolConfigError(name, 'health.critical', `(${critical}) must not be below health.degraded (${degraded})`);
  const clock = options.clock ?? systemClock;
  if (typeof clock.now !== 'function' || typeof clock.setTimeout !== 'function' || typeof clock.clearTimeout !== 'function') {
    throw new PoolConfigError(name, 'clock', 'must have now(), setTimeout() and clearTimeout()');
  }
  const logger = options.logger ?? consoleLogger;
  if (typeof logger.warn !== 'function' || typeof logger.error !== 'function') {
    throw new PoolConfigError(name, 'logger', 'must have warn() and error()');
  }

  const blockingPeriod = options.blockingPeriod ?? true;
  if (typeof blockingPeriod !== 'boolean') {
    throw new PoolConfigError(name, 'blockingPeriod', `must be true or false, got ${typeof blockingPeriod}`);
  }

  const limiter = options.limiter;
  if (limiter !== undefined && (typeof limiter?.admit !== 'function' || typeof limiter?.stats !== 'function')) {
    throw new PoolConfigError(name, 'limiter', 'must have admit() and stats(): a LocalLimiter, a RedisLimiter or your own');
  }

  return {
    name,
    maxSize,
    minSize,
    clientLimit: n('clientLimit', 100, finite, integer, positive),
    maxIdleMs: n('maxIdleMs', 300_000, positive),
    maxLifetimeMs: n('maxLifetimeMs', Infinity, positive),
    createTimeoutMs: n('createTimeoutMs', 10_000, positive),
    acquireTimeoutMs: n('acquireTimeoutMs', 60_000, positive),
    maxWaiting: n('maxWaiting', Infinity, nonNegative),
    strategy,
    maxConcurrentCreates: n('maxConcurrentCreates', maxSize, finite, integer, positive),
    growAt: n('growAt', 0.8, fraction),
    validateAfterIdleMs: n('validateAfterIdleMs', 30_000, nonNegative),
    validateTimeoutMs: n('validateTimeoutMs', 5_000, positive),
    closeTimeoutMs: n('closeTimeoutMs', 5_000, nonNegative),
    blockingPeriod,
    reapIntervalMs: n('reapIntervalMs', 1_000, finite, positive),
    createBackoffMs,
    maxCreateBackoffMs,
    lifetimeJitter: n('lifetimeJitter', 0.025, finite, nonNegative, (v) => (v < 0.5 ? undefined : 'must be below 0.5')),
    health: { degraded, critical },
    clock,
    logger,
    limiter,
  };
}

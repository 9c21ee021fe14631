import {
  type Clock,
  consoleLogger,
  is,
  keysOf,
  OptionReader,
  PoolConfigError,
  type PoolLogger,
  scrubbingLogger,
  shown,
  systemClock,
  violation,
} from '../common/index.js';
import {
  type AdmissionLimiter,
  type Connector,
  DEFAULT_HEALTH_THRESHOLDS,
  type HealthThresholds,
  kBudget,
  type SharedBudget,
} from '../contracts/index.js';
import { meterRule, type MetricsMeter } from '../observation/index.js';
import { type ResolvedWaiting, resolveWaiting, type WaitingOptions } from '../waiting/index.js';
import { CLIENT_LIMIT, CONNECTIONS, USES, validateConnector } from './connector-rules.js';

/** How an acquire picks among ready connections that have room. */
export type SelectionStrategy = 'spread' | 'pack';

/** Options of a {@link ConnectionPool}. Every field is optional; see the README's table. */
export interface PoolOptions {
  /** Name used in errors, logs and stats. Default `'default'`. */
  name?: string;
  /** Most connections open or opening (draining ones excepted). Default 10. */
  maxSize?: number;
  /**
   * When its connections take fewer callers than `clientLimit` (an HTTP/2 peer lowered its
   * SETTINGS_MAX_CONCURRENT_STREAMS, say), the pool may open more of them, up to this many, so
   * that it still carries `maxSize × clientLimit` callers; back to `maxSize` when they take more
   * again (the extra ones close once idle). Default `maxSize`: never more.
   */
  growMaxSizeTo?: number;
  /** Connections kept open: opened by `warmup()` and topped up after every close. Default 0. */
  minSize?: number;
  /**
   * Callers one connection serves at once; 1 is a classic exclusive pool. Default: the
   * connector's own `clientLimit`, else 1 (sharing is declared, never assumed).
   */
  clientLimit?: number;
  /** A connection with no client for this long is closed (down to `minSize`). Default 300 000. */
  maxIdleMs?: number;
  /**
   * A connection is retired after serving this many checkouts, as pg-pool's `maxUses` (so load
   * moves to replicas an autoscaler added behind a balancer). Default `Infinity`.
   */
  maxUses?: number;
  /** Connections are replaced after this age (±2.5 % jitter), the replacement opened first; an idle one the pool does not need (above `minSize`) is let go instead. Default `Infinity`. */
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
  /**
   * How callers wait for a connection once the pool is at `maxSize` and each is busy. Default
   * `{ mode: 'fifo' }`: until their deadline, as pg-pool, HikariCP, generic-pool and tarn.
   * `'controlled'` refuses newcomers at once (`QueueFullError`, reason `standing`) while the
   * queue stands, so the callers served wait about a hold rather than their whole deadline. See
   * docs/limits.md, "Controlled waiting".
   */
  waiting?: WaitingOptions;
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
   * Bound on one connector `reset()` that answers with a promise; past it the connection is
   * retired (never handed out again), so a reset that hangs holds one connection for this long at
   * most, never the pool. Finite. Default 5 000.
   */
  resetTimeoutMs?: number;
  /**
   * Bound on one connector `close()`; past it a warning is logged and the pool stops waiting, so
   * `pool.close()` always completes. `Infinity`: wait for it. Default 5 000.
   */
  closeTimeoutMs?: number;
  /**
   * The blocking period, a breaker on creates: once an outage is sustained (`breakerFailures`
   * failed creates in a row, over at least `breakerAfterMs`), acquires that no ready connection
   * can serve fail at once with `ConnectionFailedError` (the connect error as `cause`) instead of
   * each waiting out its deadline, and creates go one at a time as probes; the first success
   * closes it. Before that, callers wait for the next attempt. `false`: never fail fast, callers
   * wait for their deadline. Default true.
   */
  blockingPeriod?: boolean;
  /** Failed creates in a row before the breaker may open (see `blockingPeriod`). Default 5. */
  breakerFailures?: number;
  /**
   * How long creates must have failed (from the start of the streak's first) before the breaker
   * may open (see `blockingPeriod`); a shorter blip is retried within callers' deadlines. Default 5 000.
   */
  breakerAfterMs?: number;
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
  /**
   * A budget of connections shared beyond this pool: each connection takes a place in it before
   * its create begins and gives it back once closed (`FleetBudget`: one budget for every instance,
   * through Redis). Default: none.
   */
  budget?: SharedBudget;
  /**
   * OpenTelemetry metrics (see the README's Observability): `true` records through the
   * application's global MeterProvider when `@opentelemetry/api` is installed and a provider is
   * registered (else nothing is recorded, and nothing is paid); a `Meter` records there; `false`
   * records nothing. Default true.
   */
  metrics?: boolean | MetricsMeter;
  /**
   * With metrics on, also time each wait, hold and create (the `wait_time`, `use_time` and
   * `create_time` histograms). The OpenTelemetry SDK costs about 0.5 µs per recorded value (it
   * hashes the attributes each time): two per acquire and release. `false` keeps the gauges and
   * counters, which cost the hot path nothing. Default true.
   */
  metricTimings?: boolean;
  /**
   * OpenTelemetry traces (docs/observability.md): `true` traces through the application's global
   * TracerProvider when `@opentelemetry/api` is installed and a provider is registered by the time
   * the pool is made (else nothing is traced, and nothing is paid): a span for each checkout that
   * waits, in the caller's trace, and the pool's own work with its connections (creates,
   * readiness, validations, resets, closes) in no caller's trace. `false` does neither. Default true.
   */
  tracing?: boolean;
  /**
   * A lease held longer than this is reported once as a possible leak, at warn, with the stack of
   * the code that acquired it (captured at every checkout while this is set), and counted
   * (`counters.leaks`); its late release is reported too. Nothing else happens to it. As
   * HikariCP's leakDetectionThreshold. Default `Infinity`: off.
   */
  leakDetectionMs?: number;
  /**
   * A lease held longer than this has its `signal` aborted with `LeaseHeldTooLongError`, and its
   * admission slot is no longer kept alive (on Redis it lapses at its TTL), so a stuck caller
   * cannot hold a global slot forever. The lease must still be released. Default `Infinity`: off.
   */
  maxHoldMs?: number;
}

/** Options after defaults and validation. */
export interface ResolvedOptions {
  readonly name: string;
  readonly maxSize: number;
  readonly growMaxSizeTo: number;
  readonly minSize: number;
  readonly clientLimit: number;
  readonly maxIdleMs: number;
  readonly maxLifetimeMs: number;
  readonly maxUses: number;
  readonly createTimeoutMs: number;
  readonly acquireTimeoutMs: number;
  readonly maxWaiting: number;
  readonly waiting: ResolvedWaiting;
  readonly strategy: SelectionStrategy;
  readonly maxConcurrentCreates: number;
  readonly growAt: number;
  readonly validateAfterIdleMs: number;
  readonly validateTimeoutMs: number;
  readonly resetTimeoutMs: number;
  readonly closeTimeoutMs: number;
  readonly blockingPeriod: boolean;
  readonly breakerFailures: number;
  readonly breakerAfterMs: number;
  readonly reapIntervalMs: number;
  readonly createBackoffMs: number;
  readonly maxCreateBackoffMs: number;
  readonly lifetimeJitter: number;
  readonly health: Required<HealthThresholds>;
  readonly clock: Clock;
  readonly logger: PoolLogger;
  readonly limiter: AdmissionLimiter | undefined;
  readonly budget: SharedBudget | undefined;
  readonly metrics: boolean | MetricsMeter;
  readonly metricTimings: boolean;
  readonly tracing: boolean;
  readonly leakDetectionMs: number;
  readonly maxHoldMs: number;
}

/** Every key of {@link PoolOptions}: any other is refused. */
export const POOL_OPTION_KEYS = keysOf<PoolOptions>({
  name: true,
  maxSize: true,
  growMaxSizeTo: true,
  minSize: true,
  clientLimit: true,
  maxIdleMs: true,
  maxLifetimeMs: true,
  maxUses: true,
  createTimeoutMs: true,
  acquireTimeoutMs: true,
  maxWaiting: true,
  waiting: true,
  strategy: true,
  maxConcurrentCreates: true,
  growAt: true,
  validateAfterIdleMs: true,
  validateTimeoutMs: true,
  resetTimeoutMs: true,
  closeTimeoutMs: true,
  blockingPeriod: true,
  breakerFailures: true,
  breakerAfterMs: true,
  reapIntervalMs: true,
  createBackoffMs: true,
  maxCreateBackoffMs: true,
  lifetimeJitter: true,
  health: true,
  clock: true,
  logger: true,
  limiter: true,
  budget: true,
  metrics: true,
  metricTimings: true,
  tracing: true,
  leakDetectionMs: true,
  maxHoldMs: true,
});

/** Applies defaults and validates every field; throws {@link PoolConfigError} naming the first bad one. */
export function resolveOptions(options: PoolOptions = {}, connector?: Connector<unknown>): ResolvedOptions {
  if (typeof options !== 'object' || options === null) {
    throw new PoolConfigError('default', 'options', `must be an object, got ${shown(options)}`);
  }
  const name = options.name ?? 'default';
  const badName = violation({ subject: 'pool', name: String(name) }, 'name', name, is.text);
  if (badName !== undefined) throw badName;
  if (connector !== undefined) validateConnector(name, connector);
  const read = new OptionReader({ subject: 'pool', name }, options).only(POOL_OPTION_KEYS, "a pool's options");

  const maxSize = read.get('maxSize', CONNECTIONS, 10);
  const minSize = read.get('minSize', is.whole(0), 0);
  if (minSize > maxSize) read.fail('minSize', `(${minSize}) must not exceed maxSize (${maxSize})`);
  const growMaxSizeTo = read.get('growMaxSizeTo', CONNECTIONS, maxSize);
  if (growMaxSizeTo < maxSize)
    read.fail(
      'growMaxSizeTo',
      `(${growMaxSizeTo}) must be at least maxSize (${maxSize}): it is how far maxSize may grow`,
    );
  const createBackoffMs = read.get('createBackoffMs', is.finiteAbove(0), 10);
  const maxCreateBackoffMs = read.get('maxCreateBackoffMs', is.finiteAbove(0), 5_000);
  if (maxCreateBackoffMs < createBackoffMs) {
    read.fail('maxCreateBackoffMs', `(${maxCreateBackoffMs}) must not be below createBackoffMs (${createBackoffMs})`);
  }
  const health = read.nested('health').only(['degraded', 'critical'], 'the health thresholds');
  const degraded = health.get('degraded', is.fraction, DEFAULT_HEALTH_THRESHOLDS.degraded);
  const critical = health.get('critical', is.fraction, DEFAULT_HEALTH_THRESHOLDS.critical);
  if (critical < degraded) health.fail('critical', `(${critical}) must not be below health.degraded (${degraded})`);
  const clock = options.clock ?? systemClock;
  if (
    typeof clock.now !== 'function' ||
    typeof clock.setTimeout !== 'function' ||
    typeof clock.clearTimeout !== 'function'
  ) {
    read.fail('clock', 'must have now(), setTimeout() and clearTimeout()');
  }
  const given = options.logger ?? consoleLogger;
  if (typeof given.warn !== 'function' || typeof given.error !== 'function')
    read.fail('logger', 'must have warn() and error()');
  const logger = scrubbingLogger(given);
  const limiter = options.limiter;
  if (limiter !== undefined && (typeof limiter?.admit !== 'function' || typeof limiter?.stats !== 'function')) {
    read.fail('limiter', 'must have admit() and stats(): a LocalLimiter, a RedisLimiter or your own');
  }
  const budget = options.budget;
  if (budget !== undefined && typeof (budget as Partial<SharedBudget> | null)?.[kBudget]?.mayOpen !== 'function')
    read.fail('budget', `must be a FleetBudget (from nestjs-shared-pool/groups), got ${shown(budget)}`);
  if (budget !== undefined && minSize > 0)
    read.fail(
      'minSize',
      `(${minSize}) must be 0 with a budget: a pool on a shared budget opens connections as its callers need them, with a place each, and keeps none ahead of them`,
    );

  const clientLimit = read.get('clientLimit', CLIENT_LIMIT, connector?.clientLimit ?? 1);
  if (clientLimit > 1 && connector?.reset !== undefined) {
    read.fail(
      'clientLimit',
      `(${clientLimit}) must be 1 for a connector with reset(): it cleans a connection its one caller gave back, and a shared connection carries no caller's state of its own. Set clientLimit: 1, or make the connector without its reset (the pg connector: pgConnector(url, { reset: false }))`,
    );
  }

  return {
    name,
    maxSize,
    growMaxSizeTo,
    minSize,
    clientLimit,
    maxIdleMs: read.get('maxIdleMs', is.above(0), 300_000),
    maxLifetimeMs: read.get('maxLifetimeMs', is.above(0), Infinity),
    maxUses: read.get('maxUses', USES, Infinity),
    createTimeoutMs: read.get('createTimeoutMs', is.above(0), 10_000),
    acquireTimeoutMs: read.get('acquireTimeoutMs', is.above(0), 60_000),
    maxWaiting: read.get('maxWaiting', is.atLeast(0), Infinity),
    waiting: resolveWaiting(read, 'fifo'),
    strategy: read.get('strategy', is.oneOf('spread', 'pack'), 'spread'),
    maxConcurrentCreates: read.get('maxConcurrentCreates', is.whole(1), maxSize),
    growAt: read.get('growAt', is.fraction, 0.8),
    validateAfterIdleMs: read.get('validateAfterIdleMs', is.atLeast(0), 30_000),
    validateTimeoutMs: read.get('validateTimeoutMs', is.above(0), 5_000),
    resetTimeoutMs: read.get('resetTimeoutMs', is.finiteAbove(0), 5_000),
    closeTimeoutMs: read.get('closeTimeoutMs', is.atLeast(0), 5_000),
    blockingPeriod: read.get('blockingPeriod', is.boolean, true),
    breakerFailures: read.get('breakerFailures', is.whole(1), 5),
    breakerAfterMs: read.get('breakerAfterMs', is.atLeast(0), 5_000),
    reapIntervalMs: read.get('reapIntervalMs', is.finiteAbove(0), 1_000),
    createBackoffMs,
    maxCreateBackoffMs,
    lifetimeJitter: read.get('lifetimeJitter', is.from(0, 0.5), 0.025),
    health: { degraded, critical },
    clock,
    logger,
    limiter,
    budget,
    metrics: read.get('metrics', meterRule, true),
    metricTimings: read.get('metricTimings', is.boolean, true),
    tracing: read.get('tracing', is.boolean, true),
    leakDetectionMs: read.get('leakDetectionMs', is.above(0), Infinity),
    maxHoldMs: read.get('maxHoldMs', is.above(0), Infinity),
  };
}

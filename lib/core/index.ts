// The public surface of the core. Internals (the option resolver, timers, the connection
// records, symbol-keyed methods) stay in their files for the other layers to import directly.
export { systemClock, type Clock, type TimerHandle } from './clock.js';
export type { Connector, CreateContext, ResetContext } from './connector.js';
export {
  CapacityExceededError,
  ConnectionFailedError,
  ConnectionsExhaustedError,
  KeyLimitError,
  LeaseHeldTooLongError,
  LeaseLostError,
  PoolClosedError,
  PoolConfigError,
  PoolContextError,
  PoolError,
  QueueFullError,
  SelfDeadlockError,
  type CapacityReason,
  type ConfigSubject,
  type ExhaustedReason,
  type PoolErrorCode,
} from './errors.js';
export { consoleLogger, scrubbingLogger, type PoolLogger } from './logger.js';
export { scrub } from './scrub.js';
export type { PoolOptions, ResolvedOptions, SelectionStrategy } from './options.js';
export { DEFAULT_HEALTH_THRESHOLDS, utilizationHealth, type HealthThresholds, type PoolHealth } from './health.js';
export type * from './stats.js';
export { Lease } from './lease.js';
export type { AcquireOptions, CloseOptions, RetryOptions, UseOptions } from './call-options.js';
export { ConnectionPool } from './connection-pool.js';
export type * from './admission.js';
export type { MetricsAttributes, MetricsInstrumentOptions, MetricsMeter } from './pool-metrics.js';
export { poolMetricProducer, type PoolMetricProducer, type PoolMetricProducerOptions, type ProducedMetrics } from './pool-timings.js';
export { WATCH_BOUNDS_MS, watchedQuantile, type TimingWatch, type WatchedHistogram, type WatchedTimings } from './timing-watch.js';
export {
  POOL_CHANNELS,
  type AcquireMessage,
  type AcquireTraceContext,
  type CreateEndMessage,
  type CreateFailureMessage,
  type CreateStartMessage,
  type HealthMessage,
  type LimiterLimitMessage,
  type ReleaseMessage,
  type RetireMessage,
} from './pool-events.js';

export { HeldLeases, type Hold, kExpire } from './held-leases.js';
export {
  type AcquireMessage,
  type AcquireTraceContext,
  type CreateEndMessage,
  type CreateFailureMessage,
  type CreateStartMessage,
  events,
  type HealthMessage,
  type LimiterLimitMessage,
  POOL_CHANNELS,
  type ReleaseMessage,
  type RetireMessage,
} from './pool-events.js';
export {
  type MeasuredPool,
  meterOf,
  meterRule,
  type MetricsAttributes,
  type MetricsInstrumentOptions,
  type MetricsMeter,
  observeEach,
  PoolMetrics,
} from './pool-metrics.js';
export {
  poolMetricProducer,
  type PoolMetricProducer,
  type PoolMetricProducerOptions,
  type ProducedMetrics,
} from './pool-timings.js';
export {
  PoolTimingWatches,
  type TimingWatch,
  WATCH_BOUNDS_MS,
  type WatchedHistogram,
  watchedQuantile,
  type WatchedTimings,
} from './timing-watch.js';
export { detachedConnector, globalTracing, type PoolTracing, type WaitFor } from './pool-tracing.js';

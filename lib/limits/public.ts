// The public surface of the limits (nestjs-shared-pool/limits).
export {
  type ConcurrencyLimiter,
  type LimiterCounters,
  type LimiterMode,
  type LimiterStats,
  type LimitOptions,
  LocalLimiter,
  type PriorityClass,
} from './local/index.js';
export {
  type RedisClientLike,
  type RedisClusterNode,
  type RedisConnectionOptions,
  RedisLimiter,
  type RedisLimiterOptions,
  type RedisLimitOptions,
} from './redis/index.js';
export {
  type AdaptiveAlgorithmOptions,
  AdaptiveLimiter,
  type AdaptiveLimiterOptions,
  type AimdOptions,
  type CallVerdict,
  classifyCall,
  type GradientOptions,
  type LimitBounds,
  type VegasOptions,
  type WindowOptions,
} from './adaptive/index.js';

export type { LimitReport, LimitShare, Taken } from './redis-calls.js';
export {
  kInstances,
  kProbe,
  kReport,
  kShare,
  kThroughRedis,
  RedisLimiter,
  type RedisLimiterOptions,
} from './redis-limiter.js';
export type { RedisClientLike, RedisClusterNode, RedisConnectionOptions, RedisLimitOptions } from './redis-settings.js';

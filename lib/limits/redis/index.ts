export type { LimitReport, LimitShare, Taken } from './redis-calls.js';
export type { HeardInstance, RedisDemand } from './redis-demand.js';
export { kCountLapsed, kDemand, kInstances, kProbe, kReport, kShare, kThroughRedis } from './limiter-symbols.js';
export { RedisLimiter, type RedisLimiterOptions } from './redis-limiter.js';
export type { RedisClientLike, RedisClusterNode, RedisConnectionOptions, RedisLimitOptions } from './redis-settings.js';

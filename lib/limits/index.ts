export type { ConcurrencyLimiter, LimiterCounters, LimiterMode, LimiterStats } from './limits-options.js';
export type { LimitOptions } from './limits-options.js';
export type { RedisClientLike, RedisClusterNode, RedisConnectionOptions, RedisLimitOptions } from './redis-settings.js';
export { LocalLimiter } from './local-limiter.js';
export { RedisLimiter, type RedisLimiterOptions } from './redis-limiter.js';
export { AdaptiveLimiter, type AdaptiveLimiterOptions } from './adaptive-limiter.js';
export { classifyCall, type CallVerdict } from './call-verdict.js';
export type { AdaptiveAlgorithmOptions, AimdOptions, GradientOptions, LimitBounds, VegasOptions, WindowOptions } from './limit-algorithms.js';

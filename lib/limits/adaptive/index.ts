export { AdaptiveLimiter, type AdaptiveLimiterOptions } from './adaptive-limiter.js';
export { type CallVerdict, classifyCall } from './call-verdict.js';
export type {
  AdaptiveAlgorithmOptions,
  AimdOptions,
  GradientOptions,
  LimitBounds,
  VegasOptions,
  WindowOptions,
} from './limit-algorithms.js';

export { CallTimer } from './call-timer.js';
export {
  type ConcurrencyLimiter,
  type LimiterCounters,
  type LimiterMode,
  type LimiterStats,
  type LimitOptions,
  type ResolvedLimits,
  resolveLimits,
  WAIT_RULE,
  waits,
} from './limits-options.js';
export { kLearner, kSetGlobal, kUsed, type Learner, LocalLimiter } from './local-limiter.js';
export { ClassTally, classOf, classOrError, type PriorityClass, type ResolvedClasses } from './priority-classes.js';
export { keyLimitOf, keyLimitOrError, keyOf, refusalError, withKeyLimits } from './refusals.js';
export { SlotCounts, TOP_KEYS } from './slot-counts.js';
export { type ClassOrder, SlotWaiters } from './slot-waiters.js';

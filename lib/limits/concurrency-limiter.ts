import type { AdmissionLimiter, AdmissionStats } from '../core/index.js';

export type { LimiterCounters, LimiterMode } from '../core/index.js';

/** A limiter's report: `pool.stats().admission` and the health indicator show it. */
export type LimiterStats = AdmissionStats;

/**
 * Admission limits shared by one or more pools: a global limit on concurrent leases and a
 * fairness limit per key. `LocalLimiter` counts in process; `RedisLimiter` across instances.
 */
export interface ConcurrencyLimiter extends AdmissionLimiter {
  stats(): LimiterStats;
  /** Connects (Redis) and starts background work. Resolves even when Redis is down (see fallback). */
  start(): Promise<void>;
  /** Stops background work and gives back what it holds. */
  close(): Promise<void>;
}

import type { AdmissionLimiter, AdmissionStats } from '../core/index.js';

/** Running totals of a limiter. */
export interface LimiterCounters {
  admitted: number;
  released: number;
  /** Refused by the global limit (or a quarantine, or fail-closed). */
  refusedGlobal: number;
  /** Refused by the per-key limit. */
  refusedKey: number;
  /** Held leases the limiter lost (TTL lapsed, Redis forgot them). */
  lost: number;
}

/** `local`; or for Redis: `redis`, `quarantine` (after a restart or a stall), `unreachable` (within `fallbackAfterMs`), `fallback`, `fail-closed`. */
export type LimiterMode = 'local' | 'redis' | 'quarantine' | 'unreachable' | 'fallback' | 'fail-closed';

/** A limiter's report: `pool.stats().admission` and the Terminus indicator show it. */
export interface LimiterStats extends AdmissionStats {
  mode: LimiterMode;
  perKey: number;
  /** Leases this process holds. */
  held: number;
  /** Callers waiting for a slot in this process. */
  waiting: number;
  counters: LimiterCounters;
  /** Redis limiter: why Redis cannot be reached, with what to change (the first specific error of the outage). */
  lastError?: string;
}

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

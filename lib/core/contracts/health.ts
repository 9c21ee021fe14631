// A pool's health: what a utilization means, against thresholds. Imports nothing, so options,
// stats and admission all build on it without a cycle.

/** Utilization thresholds of {@link ConnectionPool.health}. */
export interface HealthThresholds {
  /** Utilization at or above this is `degraded`. Default 0.7. */
  degraded?: number;
  /** Utilization at or above this is `critical`. Default 0.9. */
  critical?: number;
}

/** Seed 002's thresholds: below 70 % healthy, below 90 % degraded, below 100 % critical. */
export const DEFAULT_HEALTH_THRESHOLDS: Readonly<Required<HealthThresholds>> = { degraded: 0.7, critical: 0.9 };

/** A pool's health, from its utilization and whether it can open connections. */
export type PoolHealth = 'healthy' | 'degraded' | 'critical' | 'exhausted' | 'failing';

/** The health a utilization alone gives: `exhausted` at 1 or more, then the thresholds. */
export function utilizationHealth(
  utilization: number,
  thresholds: Required<HealthThresholds> = DEFAULT_HEALTH_THRESHOLDS,
): PoolHealth {
  if (utilization >= 1) return 'exhausted';
  if (utilization >= thresholds.critical) return 'critical';
  if (utilization >= thresholds.degraded) return 'degraded';
  return 'healthy';
}

// The RedisLimiter's members that only this library's own parts use (pools, adaptive limits, budgets).

/** @internal Makes the global limit an adaptive one shared through Redis (see `AdaptiveLimiter`). */
export const kShare = Symbol('share');
/** @internal Whether admissions go through Redis now (not a fallback, an outage or a quarantine). */
export const kThroughRedis = Symbol('throughRedis');
/** @internal Sends the shared limit's reports now (a cut should not wait for the next admission). */
export const kReport = Symbol('report');
/** @internal One admission through an adaptive limit's pause (a probe). */
export const kProbe = Symbol('probe');
/** @internal Instances that heartbeated within a TTL (at least 1). */
export const kInstances = Symbol('instances');
/** @internal Where a FleetBudget's instances trade their demand (see RedisDemand). */
export const kDemand = Symbol('demand');
/** @internal Makes lapsed leases count in Redis until released (a FleetBudget's places). */
export const kCountLapsed = Symbol('countLapsed');

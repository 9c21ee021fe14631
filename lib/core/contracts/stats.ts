import type { AdmissionStats, StandingState } from './admission.js';
import type { PoolHealth } from './health.js';

// The types every report shares: they import nothing of the pool, so no file that reports imports back.

/** The breaker of failing creates: `open` fails callers fast; `half-open` is open with its one probe under way. */
export type BreakerState = 'closed' | 'open' | 'half-open';

/** Where a connection is in its life. */
export type ConnectionState = 'opening' | 'establishing' | 'ready' | 'draining' | 'closing' | 'closed';

/** One connection in {@link PoolStats}. */
export interface ConnectionStats {
  id: number;
  state: ConnectionState;
  clients: number;
  clientLimit: number;
  uses: number;
  ageMs: number;
  idleMs: number;
  validating: boolean;
  /** Its connector's `reset()` is cleaning it for the next caller (it counts as in use meanwhile). */
  resetting: boolean;
  rotating: boolean;
}

/**
 * Why a connection was taken out of service: idle past `maxIdleMs`, past its lifetime (rotated),
 * failed by its user (`lease.fail()`), retired by its connector (`ctx.retire()`), found dead by
 * validation, not made clean by its connector's `reset()`, `refresh()`, the pool closing, or its
 * place given to another member of a pool group.
 */
export type RetireReason =
  'idle' | 'lifetime' | 'failed' | 'connector' | 'validation' | 'reset' | 'refresh' | 'closed' | 'group';

/** Running totals since the pool was made. */
export interface PoolCounters {
  /** Creates started. */
  createsStarted: number;
  /** Connections that became ready. */
  opened: number;
  /** Creates or readiness checks that failed or timed out. */
  createFailures: number;
  /**
   * Creates given up because the pool closed while they ran (a late connection is closed on
   * arrival). `createsStarted` = `opened` + `createFailures` + `createsAbandoned` + `opening`, always.
   */
  createsAbandoned: number;
  /** Connections closed (after being ready or a failed readiness check). */
  closed: number;
  /** Connections retired (idle, lifetime, failure, refresh, validation). */
  retired: number;
  /** `retired`, by reason. */
  retiredBy: Record<RetireReason, number>;
  acquired: number;
  released: number;
  /** Acquires that hit their deadline. */
  timeouts: number;
  /** Acquires aborted by their signal. */
  aborted: number;
  /** Acquires failed at once, or routed a connect error, during the blocking period (see `blockingPeriod`). */
  failedFast: number;
  /** Validations that found a connection dead: `validate()` returned false, threw, or outran `validateTimeoutMs` (one that ends after `close()` cut it short counts too). */
  validationFailures: number;
  /** Connector `reset()` calls that answered with a promise: the returns that cost a round trip (a reset answered at once costs none). */
  resets: number;
  /** Resets that left a connection unclean: `reset()` returned false, threw, rejected or outran `resetTimeoutMs`. Each retired its connection. */
  resetFailures: number;
  /** Leases reported as possible leaks (held past `leakDetectionMs`). */
  leaks: number;
  /** Leases whose signal aborted, held past `maxHoldMs`. */
  expiredHolds: number;
}

/** A snapshot of a pool. */
export interface PoolStats {
  name: string;
  health: PoolHealth;
  /** Clients in use / (maxSize × clientLimit), or the admission limiter's utilization if higher. */
  utilization: number;
  /** Most connections now: `maxSize`, or more (up to `growMaxSizeTo`) while connections take fewer callers than `clientLimit`. */
  maxSize: number;
  minSize: number;
  clientLimit: number;
  /** Connections counting against maxSize: opening + ready. */
  size: number;
  opening: number;
  ready: number;
  /** Ready connections with no client. */
  idle: number;
  draining: number;
  /** Callers holding a lease. */
  clients: number;
  /** Callers queued for a connection. */
  waiting: number;
  /** Consecutive create failures (0 once one succeeds). */
  failureStreak: number;
  /** The breaker of failing creates (see `blockingPeriod`): `open` fails callers fast; `half-open`: its probe is under way. */
  breaker: BreakerState;
  lastError: string | undefined;
  closed: boolean;
  counters: PoolCounters;
  connections: ConnectionStats[];
  /** Age of the lease held longest, ms: kept when `leakDetectionMs` or `maxHoldMs` is set, else null. 0 with none held. */
  oldestLeaseMs: number | null;
  /** How long the caller queued longest has waited, ms (dated once per turn of the event loop); 0 with none. */
  oldestWaitMs: number;
  /** With controlled waiting (`waiting: { mode: 'controlled' }`): whether the queue stands, its target, and the callers shed. */
  standing?: StandingState;
  /** The admission limiter's report, when the pool has one. */
  admission?: AdmissionStats;
  /** The budget the pool shares (its `budget` option, a `FleetBudget`), when it has one. */
  budget?: BudgetReport;
}

/** A pool's budget, as the pool sees it. */
export interface BudgetReport {
  name: string;
  /**
   * Callers wait while the pool has room under `maxSize`: the budget has granted no place for
   * them yet (the fleet's places are held elsewhere, or its first places wait one lease TTL).
   */
  holdsBack: boolean;
}

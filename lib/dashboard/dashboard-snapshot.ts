import {
  type AdaptiveStats,
  type AdmissionStats,
  type ClassStats,
  type LimiterMode,
  type PoolHealth,
  type PoolStats,
  type RetireReason,
  scrub,
  type StandingState,
} from '../core/index.js';
import type { FleetInstance, PoolGroupMemberRow } from '../groups/index.js';

/** Quantiles of a timing over the last minute, ms; null with no timing in it. */
export interface WindowQuantiles {
  readonly count: number;
  readonly p50: number | null;
  readonly p90: number | null;
  readonly p99: number | null;
}

/** A health change, as the dashboard saw it. */
export interface HealthChange {
  /** When, ms since the epoch. */
  readonly at: number;
  readonly health: PoolHealth;
}

/** One connection of a pool, as shown. */
export interface DashboardConnection {
  readonly id: number;
  readonly state: string;
  readonly clients: number;
  readonly ageMs: number;
  readonly uses: number;
  readonly idleMs: number;
}

/** A pool's admission limiter, as shown. */
export interface DashboardLimiter {
  readonly mode: LimiterMode;
  readonly used: number;
  /** null: no global limit. */
  readonly limit: number | null;
  /** null: no per-key limit; 'by key': each key has its own (a `perKey` function, shown in topKeys). */
  readonly perKey: number | 'by key' | null;
  readonly utilization: number;
  readonly health: PoolHealth;
  readonly held: number;
  readonly waiting: number;
  readonly topKeys: readonly { key: string; leases: number; limit?: number }[];
  readonly refused: { readonly global: number; readonly key: number };
  /** Refusals per second over the last minute, by reason. */
  readonly refusedPerSec: { readonly global: number; readonly key: number };
  readonly lost: number;
  /** Controlled waiting: whether the queue stands, its target, how often it stood and how many it shed; null without. */
  readonly standing: StandingState | null;
  /** Priority classes, highest first; empty without. */
  readonly classes: readonly ClassStats[];
  readonly lastError: string | null;
  readonly modes: readonly { at: number; mode: LimiterMode }[];
  /** An adaptive limiter's algorithm, bounds, pause and last changes; null for a fixed limit. */
  readonly adaptive: AdaptiveStats | null;
}

/** Counters worth a rate: per second over the last minute. */
export interface DashboardRates {
  readonly acquired: number;
  readonly timeouts: number;
  readonly failedFast: number;
  readonly leaks: number;
  readonly expiredHolds: number;
  readonly createFailures: number;
  readonly retiredBy: Readonly<Record<RetireReason, number>>;
}

/** One pool on the page. */
export interface DashboardPool {
  readonly name: string;
  readonly health: PoolHealth;
  readonly closed: boolean;
  /** Higher is worse: what the page sorts by. */
  readonly trouble: number;
  readonly utilization: number;
  readonly size: number;
  readonly maxSize: number;
  readonly minSize: number;
  readonly ready: number;
  readonly opening: number;
  readonly draining: number;
  readonly idle: number;
  readonly clientLimit: number;
  readonly clients: number;
  readonly waiting: number;
  readonly oldestWaitMs: number;
  readonly breaker: string;
  readonly lastError: string | null;
  readonly connections: readonly DashboardConnection[];
  /** Connections not listed in `connections` (past `maxConnectionRows`). */
  readonly moreConnections: number;
  readonly timeline: readonly HealthChange[];
  /** Waits for a connection and holds of one over the last minute; null when the pool cannot be watched (a stand-in). */
  readonly waitMs: WindowQuantiles | null;
  readonly holdMs: WindowQuantiles | null;
  readonly rates: DashboardRates;
  readonly counters: PoolStats['counters'];
  readonly limiter: DashboardLimiter | null;
}

/** One member of a group: as the group's summary gives it. */
export type DashboardMember = PoolGroupMemberRow;

/** A pool group on the page. */
export interface DashboardGroup {
  readonly name: string;
  readonly health: PoolHealth;
  readonly trouble: number;
  readonly maxTotal: number;
  readonly total: number;
  readonly clientLimit: number;
  readonly utilization: number;
  readonly waiting: number;
  readonly transfers: number;
  readonly transfersPerSec: number;
  readonly givenBack: number;
  readonly forgotten: number;
  readonly memberCount: number;
  readonly hungry: number;
  /** The members, most trouble first (waiting, hungry), at most `maxMemberRows`. */
  readonly members: readonly DashboardMember[];
  readonly timeline: readonly HealthChange[];
}

/** A fleet budget (`FleetBudget`) the pools share with other instances, as this instance sees it. */
export interface DashboardBudget {
  readonly name: string;
  /** `exhausted`: callers wait (here or elsewhere) and the fleet holds the whole budget; `degraded`: Redis is not counting (see `mode`). */
  readonly health: PoolHealth;
  readonly maxTotal: number;
  /** Places every instance holds, as Redis counted them at the last heartbeat. */
  readonly fleetHeld: number;
  /** Places this instance holds for its connections. */
  readonly held: number;
  readonly spare: number;
  readonly asking: number;
  readonly mode: string;
  readonly lapsed: number;
  /** This instance's quota by demand in the last exchange. */
  readonly quota: number;
  readonly waitingElsewhere: number;
  readonly movedOut: number;
  /** Connections moved out per second over the last minute. */
  readonly movedPerSec: number;
  readonly lastError: string | null;
  /** This instance's pools on the budget. */
  readonly pools: readonly string[];
  /** Every instance heard in the last exchange, this one first. */
  readonly fleet: readonly FleetInstance[];
  readonly timeline: readonly HealthChange[];
}

/** What the page gets on each tick. */
export interface DashboardSnapshot {
  /** When it was built, ms since the epoch. */
  readonly at: number;
  readonly intervalMs: number;
  /** Pages open now. */
  readonly viewers: number;
  /** Time the dashboard has spent building snapshots and writing them to pages since the start, ms: its own cost. */
  readonly busyMs: number;
  readonly pools: readonly DashboardPool[];
  readonly groups: readonly DashboardGroup[];
  readonly budgets: readonly DashboardBudget[];
}

const HEALTH_RANK: Record<PoolHealth, number> = { healthy: 0, degraded: 1, critical: 2, exhausted: 3, failing: 4 };

/** How bad a pool looks, for sorting: its health first, then waiting callers, then utilization. */
export function troubleOf(health: PoolHealth, waiting: number, utilization: number, closed = false): number {
  return (
    (closed ? -1 : HEALTH_RANK[health] * 1_000_000) +
    Math.min(waiting, 999) * 1_000 +
    Math.round(Math.min(utilization, 1) * 999)
  );
}

/** The limiter's report as shown: Infinity limits as null, the error text without credentials. */
export function limiterView(
  a: AdmissionStats,
  refusedPerSec: { global: number; key: number },
  modes: readonly { at: number; mode: LimiterMode }[],
): DashboardLimiter {
  return {
    mode: a.mode,
    used: a.used,
    limit: Number.isFinite(a.limit) ? a.limit : null,
    perKey: Number.isNaN(a.perKey) ? 'by key' : Number.isFinite(a.perKey) ? a.perKey : null,
    utilization: a.utilization,
    health: a.health,
    held: a.held,
    waiting: a.waiting,
    topKeys: a.topKeys ?? [],
    refused: { global: a.counters.refusedGlobal, key: a.counters.refusedKey },
    refusedPerSec,
    lost: a.counters.lost,
    standing: a.standing ?? null,
    classes: a.classes ?? [],
    lastError: a.lastError === undefined ? null : scrub(a.lastError),
    modes,
    adaptive: a.adaptive ?? null,
  };
}

import {
  type AdmissionLimiter,
  type AdmissionStats,
  type BudgetReport,
  type PoolCounters,
  type PoolHealth,
  type PoolStats,
  type StandingState,
  utilizationHealth,
} from '../contracts/index.js';
import type { ConnectionSupply } from '../connections/index.js';
import { type ExhaustedReason, messageOf } from '../common/index.js';
import type { ResolvedOptions } from '../options/index.js';
import type { PoolQueue } from '../waiting/index.js';

/** Counters at zero, for a new pool. */
export function newCounters(): PoolCounters {
  return {
    createsStarted: 0,
    opened: 0,
    createFailures: 0,
    createsAbandoned: 0,
    closed: 0,
    retired: 0,
    retiredBy: {
      idle: 0,
      lifetime: 0,
      failed: 0,
      connector: 0,
      validation: 0,
      reset: 0,
      refresh: 0,
      closed: 0,
      group: 0,
    },
    acquired: 0,
    released: 0,
    timeouts: 0,
    aborted: 0,
    failedFast: 0,
    validationFailures: 0,
    resets: 0,
    resetFailures: 0,
    leaks: 0,
    expiredHolds: 0,
  };
}

/** What the reports read of a pool: live values. */
export interface ReportedPool {
  readonly options: ResolvedOptions;
  readonly supply: ConnectionSupply<unknown>;
  readonly counters: PoolCounters;
  readonly limiter: AdmissionLimiter | undefined;
  waiting(): number;
  /** Its callers waiting (whether their queue stands). */
  readonly queue: Pick<PoolQueue<unknown>, 'shed' | 'standingState'>;
  isClosed(): boolean;
  /** Age of the lease held longest, when the pool keeps track of its leases. */
  oldestLeaseMs(): number | null;
}

/** Health from utilization: see the README's table. */
export function healthOf(pool: ReportedPool): PoolHealth {
  return healthAt(pool, utilizationOf(pool, pool.limiter?.stats()));
}

/** Health at a utilization already computed. */
function healthAt(pool: ReportedPool, utilization: number): PoolHealth {
  if (pool.supply.set.ready === 0 && pool.supply.backoff.streak > 0) return 'failing';
  if (pool.waiting() > 0) return 'exhausted';
  return utilizationHealth(utilization, pool.options.health);
}

/** Clients per slot, or the limiter's utilization (from its `admission` report) if higher. */
function utilizationOf(pool: ReportedPool, admission: AdmissionStats | undefined): number {
  const o = pool.options;
  const own = pool.supply.set.clients / (o.maxSize * o.clientLimit);
  return admission === undefined ? own : Math.max(own, admission.utilization);
}

/** What a health change is told with: the figures of `stats()` it needs, without a row per connection. */
export type HealthFigures = Pick<
  PoolStats,
  'health' | 'utilization' | 'waiting' | 'clients' | 'ready' | 'maxSize' | 'lastError' | 'budget'
>;

/** The pool's budget option, and whether it holds callers back now. */
function budgetOf(pool: ReportedPool): { budget?: BudgetReport } {
  // Its own budget option's, or, for a pool group's member, the fleet budget its group shares.
  const { set, maxSizeNow, budget } = pool.supply;
  const name = budget?.name?.();
  if (name === undefined) return {};
  const holdsBack = pool.waiting() > 0 && set.size < maxSizeNow && budget?.asking?.() !== false;
  return { budget: { name, holdsBack } };
}

/** The pool's health and the figures behind it, as the house-keeper samples them every sweep. */
export function healthFigures(pool: ReportedPool): HealthFigures {
  const set = pool.supply.set;
  const utilization = utilizationOf(pool, pool.limiter?.stats());
  const lastError = pool.supply.lastError;
  return {
    health: healthAt(pool, utilization),
    utilization,
    waiting: pool.waiting(),
    clients: set.clients,
    ready: set.ready,
    maxSize: pool.supply.maxSizeNow,
    lastError: lastError === undefined ? undefined : messageOf(lastError),
    ...budgetOf(pool),
  };
}

/** `standing` of the stats: present under controlled waiting only. */
function standingOf(pool: ReportedPool): { standing?: StandingState } {
  const standing = pool.queue.standingState();
  return standing === undefined ? {} : { standing };
}

/** A snapshot of counts, counters and one row per connection. */
export function statsOf(pool: ReportedPool): PoolStats {
  const { options: o, supply } = pool;
  const set = supply.set;
  const connections = set.rows(supply.timers.now());
  // The limiter reports once: its utilization, the pool's health and `admission` all read it.
  const admission = pool.limiter?.stats();
  const utilization = utilizationOf(pool, admission);
  return {
    name: o.name,
    health: healthAt(pool, utilization),
    utilization,
    maxSize: supply.maxSizeNow,
    minSize: o.minSize,
    clientLimit: o.clientLimit,
    size: set.size,
    opening: set.opening,
    ready: set.ready,
    idle: connections.filter((c) => c.state === 'ready' && c.clients === 0).length,
    draining: connections.filter((c) => c.state === 'draining').length,
    clients: set.clients,
    waiting: pool.waiting(),
    failureStreak: supply.backoff.streak,
    breaker: supply.backoff.state(set.opening),
    lastError: supply.lastError === undefined ? undefined : messageOf(supply.lastError),
    closed: pool.isClosed(),
    oldestLeaseMs: pool.oldestLeaseMs(),
    oldestWaitMs: pool.waiting() === 0 ? 0 : supply.member.waitedMs(),
    ...standingOf(pool),
    counters: { ...pool.counters, retiredBy: { ...pool.counters.retiredBy } },
    connections,
    ...(admission === undefined ? {} : { admission }),
    ...budgetOf(pool),
  };
}

/**
 * Why callers ran out of time: creates failing, the first connections still opening, a shared
 * budget that granted no place while the pool had room, or all busy.
 */
export function exhaustedReason(pool: ReportedPool): ExhaustedReason {
  const { set, backoff, budget } = pool.supply;
  if (backoff.streak > 0) return 'creates-failing';
  if (set.opening > 0 && set.index.size === 0 && set.clients === 0) return 'opening';
  if (budget !== undefined && set.size < pool.supply.maxSizeNow) return 'budget';
  return 'all-busy';
}

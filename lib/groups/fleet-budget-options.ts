import {
  type Admission,
  type AdmissionRequest,
  type Clock,
  is,
  keysOf,
  meterRule,
  type MetricsMeter,
  OptionReader,
  PoolConfigError,
  type PoolLogger,
} from '../core/index.js';
import { type HeardInstance, type kDemand, type RedisLimitOptions } from '../limits/index.js';
import type { FleetInstance } from './fleet-shares.js';

/** @internal A budget's lease TTL unless its `redis` options give one. */
export const BUDGET_TTL_MS = 2_000;

/** @internal An option of FleetBudget: its places somewhere other than Redis (a simulation's FleetPlaces), in place of `redis`. */
export const kFleetPlaces = Symbol('nestjs-shared-pool.fleet-places');

/**
 * @internal Where a budget keeps its places and trades its instances' demand: a RedisLimiter
 * whose global limit is the budget, or, in a simulation, a fake of the same shape.
 */
export interface FleetPlaces {
  start(): Promise<void>;
  /** A place, waiting up to `timeoutMs` for one; refused with an error when none came. */
  admit(request: AdmissionRequest): Promise<Admission>;
  stats(): { readonly used: number; readonly mode: string; readonly lastError?: string };
  close(): Promise<void>;
  readonly [kDemand]: {
    readonly instance: string;
    exchange(figures: string, staleMs: number): Promise<Map<string, HeardInstance>>;
  };
}

/** Options of a {@link FleetBudget}. */
export interface FleetBudgetOptions {
  /** The budget's name: the instances that name the same budget on the same Redis share it. */
  name: string;
  /** Connections every instance together may have, creates in flight and closes not yet ended included. */
  maxTotal: number;
  /**
   * Where the places live: Redis, as a `RedisLimiter` takes it (`namespace` default:
   * `'budget:<name>'`; `leaseTtlMs` default 2 000: a dead instance's places come back, and a new
   * fleet's or a restarted Redis's first places are granted, one TTL later).
   */
  redis: RedisLimitOptions;
  /** How long one request for a place waits before it asks again, while callers still wait. Default 1 000. */
  askTimeoutMs?: number;
  /**
   * A connection idle this long closes and gives its place back, so the fleet's places go where
   * callers are: an instance that went quiet does not keep them from one whose callers wait.
   * A pool that calls now and then (its usual gap within ten `minHoldMs`, its last call within
   * three gaps) keeps one, while the budget has one for every instance that wants one.
   * Looked at on each exchange of demand (`exchangeMs`). `Infinity`: idle connections keep their
   * places until the pool's `maxIdleMs`. Default 1 000.
   */
  giveBackAfterMs?: number;
  /**
   * How often each instance publishes its load (connections in use, callers waiting, hold time)
   * and reads every other's, while it has connections or callers on the budget. Default 250.
   */
  exchangeMs?: number;
  /**
   * A connection is given to another instance only once held this long (from the start of its
   * create), so that places do not pass back and forth faster than connects pay off. Default 500.
   */
  minHoldMs?: number;
  /**
   * The budget's OpenTelemetry metrics (`nestjs_shared_pool.budget.*`: places held here and in
   * the fleet, quota, callers waiting elsewhere, instances, moves, lapses): `true` records through
   * the application's global MeterProvider when one is registered, a `Meter` records there, `false`
   * records nothing. Default true.
   */
  metrics?: boolean | MetricsMeter;
  clock?: Clock;
  logger?: PoolLogger;
}

/** What a {@link FleetBudget} holds, here and across the fleet. */
export interface FleetBudgetStats {
  readonly name: string;
  readonly maxTotal: number;
  /** Places this process holds for connections. */
  readonly held: number;
  /** Places granted and not yet taken by a create (given back if no create takes them). */
  readonly spare: number;
  /** Requests for a place in flight. */
  readonly asking: number;
  /** Places the fleet holds, as Redis counts them (this process's own while Redis is unreachable). */
  readonly fleetHeld: number;
  /** `redis`, or how the places are kept while Redis is not: see `RedisLimiter`'s modes. */
  readonly mode: string;
  /** Places lost while held (their lease lapsed: this process was frozen past the TTL, or Redis lost them); their connections were closed. */
  readonly lapsed: number;
  /** Instances heard in the last exchange of demand, this one included (0: none yet, or Redis is unreachable). */
  readonly instances: number;
  /** This instance's quota of the budget in the last exchange: its part by demand. */
  readonly quota: number;
  /** Callers waiting on the other instances, as last heard. */
  readonly waitingElsewhere: number;
  /** Connections this instance closed so that another instance's waiting callers have their places. */
  readonly movedOut: number;
  /**
   * Every instance heard in the last exchange, this one first: its places (connections), callers
   * in use and waiting, longest wait and quota. Empty until the first exchange, and while Redis is
   * unreachable.
   */
  readonly fleet: readonly FleetInstance[];
  readonly lastError?: string;
}

const KEYS = keysOf<FleetBudgetOptions>({
  name: true,
  maxTotal: true,
  redis: true,
  askTimeoutMs: true,
  giveBackAfterMs: true,
  exchangeMs: true,
  minHoldMs: true,
  metrics: true,
  clock: true,
  logger: true,
});

/** @internal A FleetBudget's options, read and checked. */
export interface ResolvedFleetBudget {
  readonly name: string;
  readonly maxTotal: number;
  readonly askTimeoutMs: number;
  readonly giveBackAfterMs: number;
  readonly exchangeMs: number;
  readonly minHoldMs: number;
  readonly metrics: boolean | MetricsMeter;
}

/** @internal Reads `options`, throwing a PoolConfigError that says what to change. */
export function resolveFleetBudget(options: FleetBudgetOptions): ResolvedFleetBudget {
  const given = (typeof options === 'object' && options !== null ? options : {}) as FleetBudgetOptions;
  const read = new OptionReader(
    { subject: 'budget', name: typeof given.name === 'string' ? given.name : 'budget' },
    given,
  );
  read.only(KEYS, 'the options of a FleetBudget');
  const name =
    read.get('name', is.text) ??
    read.fail('name', "is needed: the instances that share a budget name it alike (say 'orders-db')");
  const maxTotal =
    read.get('maxTotal', is.whole(1)) ??
    read.fail(
      'maxTotal',
      "is needed: the connections every instance together may have (the server's cap, or this service's share of it)",
    );
  // A simulation gives its places in place of Redis (see kFleetPlaces).
  if (read.get('redis', is.object) === undefined && !(kFleetPlaces in given))
    read.fail(
      'redis',
      "is needed: where the places live ({ url: 'redis://…' } or { client }, as a RedisLimiter takes it)",
    );
  return {
    name,
    maxTotal,
    askTimeoutMs: read.get('askTimeoutMs', is.finiteAbove(0), 1_000),
    giveBackAfterMs: read.get('giveBackAfterMs', is.atLeast(0), 1_000),
    exchangeMs: read.get('exchangeMs', is.finiteAbove(0), 250),
    minHoldMs: read.get('minHoldMs', is.finiteAtLeast(0), 500),
    metrics: read.get('metrics', meterRule, true),
  };
}

/**
 * Runs `make`, telling a PoolConfigError about the budget's `redis` options (which the limiter
 * underneath reads as `limits.redis`) as the budget's own: the option the user wrote.
 */
export function budgetError<T>(name: string, make: () => T): T {
  try {
    return make();
  } catch (err) {
    if (!(err instanceof PoolConfigError) || !err.field.startsWith('limits.redis')) throw err;
    const problem = err.problem.replaceAll('limits.redis', 'redis');
    throw new PoolConfigError(name, err.field.slice('limits.'.length), problem, 'budget', { cause: err });
  }
}

import {
  type Clock,
  CONNECTIONS,
  type Connector,
  consoleLogger,
  is,
  keysOf,
  meterRule,
  type MetricsMeter,
  OptionReader,
  PoolConfigError,
  type PoolLogger,
  type PoolOptions,
  resolveOptions,
  kBudget,
  type SharedBudget,
  scrubbingLogger,
  shown,
  systemClock,
} from '../core/index.js';

/** The options of every member pool. The group sets `name`, `clock`, `logger`, `minSize` (0), `growAt` (off) and `budget` (its own). */
export type PoolGroupMemberOptions = Omit<PoolOptions, 'name' | 'clock' | 'logger' | 'minSize' | 'growAt' | 'budget'>;

/** Options of a {@link PoolGroup}. */
export interface PoolGroupOptions<T> {
  /** Name in errors and logs; members are named `<name>:<key>`. Default `'group'`. */
  name?: string;
  /** Connections all members may have at once, opening and closing ones included (the server's or PgBouncer's cap). */
  maxTotal: number;
  /** The connector of a member, made on its first use: `(tenant) => pgConnector(urlOf(tenant))`. */
  connector: (key: string) => Connector<T>;
  /** Options of every member pool. `maxSize` defaults to `maxTotal`. */
  member?: PoolGroupMemberOptions;
  /**
   * The least time a member keeps a connection before another member may take its place, so
   * connections do not thrash between members; the measured connect time, when longer, is the hold. Default 10.
   */
  minHoldMs?: number;
  /** How often the group measures its members and rebalances a spent budget. Default 100. */
  rebalanceIntervalMs?: number;
  /**
   * How long a member's connections beyond what it needed lately stay idle before they go back to
   * the server, so a burst does not leave the server carrying idle connections for the members'
   * `maxIdleMs`. A member keeps its smoothed recent need and one more. A member that opens a
   * connection soon after giving some back learns a longer delay (twice the gap it saw, at most
   * its `maxIdleMs`), so bursts that come back in a rhythm keep their connections after one
   * round. Default: the minimum hold in force or three `rebalanceIntervalMs`, whichever is longer;
   * Infinity: never (idle connections close at the members' `maxIdleMs`).
   */
  giveBackAfterMs?: number;
  /** A member with no connection and no call for this long is closed and forgotten. Default 60 000; Infinity: never. */
  memberIdleMs?: number;
  /**
   * Most members at once. A new key past it takes the place of the member used longest ago that
   * has no caller now (its idle connections close); with none, the call waits for such a place
   * (first come, first served) until its deadline, then fails with `CapacityExceededError`
   * (reason `members`). Bounds the memory keys from outside can take (a member costs about 9 KB
   * with no connection). Default 1 000; `Infinity` only for keys the application chooses itself.
   */
  maxMembers?: number;
  /**
   * Most calls waiting for a member place at once (see `maxMembers`); past it, a new key fails at
   * once with `CapacityExceededError` (reason `members`). 0: never wait. Default `Infinity`.
   */
  maxWaiting?: number;
  /**
   * The group's own OpenTelemetry metrics (`nestjs_shared_pool.group.*`): `true` (the global
   * MeterProvider, when one is registered), `false`, or a Meter. Members record nothing unless
   * `member.metrics` says so: a series per tenant would be unbounded. Default true.
   */
  metrics?: boolean | MetricsMeter;
  /**
   * A budget the group shares beyond its own `maxTotal`: a `FleetBudget`, one budget for every
   * instance of the service. Each member's connection then holds a place in it too, from the start
   * of its create to the end of its close; while members wait for a place in it, the group shares
   * what it holds between them as it shares a spent `maxTotal`.
   */
  budget?: SharedBudget;
  clock?: Clock;
  logger?: PoolLogger;
}

export interface ResolvedGroupOptions<T> {
  readonly name: string;
  readonly maxTotal: number;
  readonly connector: (key: string) => Connector<T>;
  readonly member: PoolGroupMemberOptions & {
    readonly clientLimit: number;
    readonly acquireTimeoutMs: number;
    readonly maxIdleMs: number;
  };
  readonly minHoldMs: number;
  readonly rebalanceIntervalMs: number;
  /** Undefined: from the minimum hold and the rebalance interval. */
  readonly giveBackAfterMs: number | undefined;
  readonly memberIdleMs: number;
  readonly maxMembers: number;
  readonly maxWaiting: number;
  readonly metrics: boolean | MetricsMeter;
  readonly budget: SharedBudget | undefined;
  readonly clock: Clock;
  readonly logger: PoolLogger;
}

const GROUP_KEYS = keysOf<PoolGroupOptions<unknown>>({
  name: true,
  maxTotal: true,
  connector: true,
  member: true,
  minHoldMs: true,
  rebalanceIntervalMs: true,
  giveBackAfterMs: true,
  memberIdleMs: true,
  maxMembers: true,
  maxWaiting: true,
  metrics: true,
  budget: true,
  clock: true,
  logger: true,
});

/** Member pool options the group sets itself, and why. */
const SET_BY_GROUP: Readonly<Record<string, string>> = {
  name: 'members are named <group>:<key>',
  clock: "the group's clock is every member's",
  logger: "the group's logger is every member's",
  minSize: 'members keep no connections ahead of demand: they would take budget from other members',
  growAt: 'members open connections as their callers need them, not ahead of demand',
  budget: "the group's budget (maxTotal) is every member's; give a FleetBudget to the group's own budget option",
};

/** Members a group keeps at most unless told otherwise: keys often come from requests (a tenant header, a user id). */
export const DEFAULT_MAX_MEMBERS = 1_000;

/** Applies defaults and checks every field; throws a {@link PoolConfigError} naming the first bad one. */
export function resolveGroupOptions<T>(options: PoolGroupOptions<T>): ResolvedGroupOptions<T> {
  if (typeof options !== 'object' || options === null)
    throw new PoolConfigError('group', 'options', `must be an object, got ${shown(options)}`, 'group');
  const name = options.name ?? 'group';
  if (typeof name !== 'string' || name.length === 0)
    throw new PoolConfigError(String(name), 'name', `must be a non-empty string, got ${shown(name)}`, 'group');
  const read = new OptionReader({ subject: 'group', name }, options).only(GROUP_KEYS, "a pool group's options");
  const maxTotal =
    read.get('maxTotal', CONNECTIONS) ??
    read.fail('maxTotal', 'is required: the connections all members may have at once');
  const connector =
    read.get('connector', is.function) ??
    read.fail('connector', 'is required: a function of the key that makes its connector');
  const member = read.get('member', is.object, {});
  for (const key of Object.keys(member))
    if (key in SET_BY_GROUP)
      read.fail(`member.${key}`, `is set by the group, not by its options: ${SET_BY_GROUP[key]}`);
  // The member options are checked now, not at the first call of some tenant.
  const { clientLimit, acquireTimeoutMs, maxIdleMs } = resolveOptions({
    maxSize: maxTotal,
    ...member,
    name: `${name}:<key>`,
  });
  return {
    name,
    maxTotal,
    connector,
    member: { maxSize: maxTotal, ...member, clientLimit, acquireTimeoutMs, maxIdleMs },
    minHoldMs: read.get('minHoldMs', is.finiteAtLeast(0), 10),
    rebalanceIntervalMs: read.get('rebalanceIntervalMs', is.finiteAbove(0), 100),
    giveBackAfterMs: read.get('giveBackAfterMs', is.atLeast(0)),
    memberIdleMs: read.get('memberIdleMs', is.atLeast(0), 60_000),
    maxMembers: read.get(
      'maxMembers',
      { says: 'a whole number of 1 or more, or Infinity', ok: (v) => v === Infinity || is.whole(1).ok(v) },
      DEFAULT_MAX_MEMBERS,
    ),
    maxWaiting: read.get(
      'maxWaiting',
      { says: 'a whole number of 0 or more, or Infinity', ok: (v) => v === Infinity || is.whole(0).ok(v) },
      Infinity,
    ),
    metrics: read.get('metrics', meterRule, true),
    budget: read.get('budget', {
      says: 'a FleetBudget (from nestjs-shared-pool/groups)',
      ok: (v) => typeof (v as Partial<SharedBudget> | null)?.[kBudget]?.mayOpen === 'function',
    }),
    clock: read.get('clock', is.object, systemClock),
    logger: scrubbingLogger(read.get('logger', is.object, consoleLogger)),
  };
}

// Runs a QoS scenario on virtual time against a pool group or a naive baseline, and records what
// each query waited for its connection, the connects and disconnects, and the connections each
// member held over time.
import { ConnectionPool, type Connector, type PoolLogger } from '../../lib/core/index.js';
import { kBudget, type BudgetMember, type ConnectionBudget } from '../../lib/core/contracts/connection-budget.js';
import { PoolGroup } from '../../lib/groups/pool-group.js';
import { FleetBudget } from '../../lib/groups/fleet-budget.js';
import { kFleetPlaces } from '../../lib/groups/fleet-budget-options.js';
import { SimFleetRedis } from './sim-fleet-redis.js';
import { Random } from './random.js';
import { endOf, membersOf, type Cost, type Scenario } from './scenario.js';
import { SimClock } from './sim-clock.js';

/** What runs the queries: the group (or, in a fleet scenario, the instances' fleet budget), or a baseline. */
export type ContenderName = 'group' | 'fleet' | 'static' | 'greedy';

export const CONTENDERS: readonly ContenderName[] = ['group', 'static', 'greedy'];
export const FLEET_CONTENDERS: readonly ContenderName[] = ['fleet', 'static', 'greedy'];

/** One query: when it arrived, and how long it waited for a connection (or until it failed). */
export interface QueryRecord {
  readonly member: string;
  readonly at: number;
  readonly waitMs: number;
  readonly failed: boolean;
}

/** Connections per member, sampled. */
export interface Sample {
  readonly at: number;
  readonly connections: Readonly<Record<string, number>>;
}

export interface RunResult {
  readonly scenario: Scenario;
  readonly contender: ContenderName;
  readonly queries: QueryRecord[];
  readonly connects: number;
  readonly disconnects: number;
  readonly samples: Sample[];
  /** The most connections the server had at once. */
  readonly peak: number;
  /** Connections per member when each capacity measure looks (keyed by its `at`). */
  readonly capacityAt: ReadonlyMap<number, Readonly<Record<string, number>>>;
  /** Queries still unanswered when the run gave up on them. */
  readonly unfinished: number;
}

/** Baselines close a connection idle this long (virtual ms): a greedy pool's idle timeout. */
export const BASELINE_IDLE_MS = 1_000;
const SAMPLE_EVERY_MS = 100;
/** After the last stream, queries get this long to finish before the run stops waiting. */
const DRAIN_MS = 120_000;

const silent: PoolLogger = { warn: () => {}, error: () => {} };

interface Contender {
  use(member: string, fn: () => Promise<void>): Promise<void>;
  close(): Promise<void>;
}

/** The database server the scenario talks to: it counts connections per member, connects and disconnects. */
class SimServer {
  connects = 0;
  disconnects = 0;
  peak = 0;
  readonly open = new Map<string, number>();
  #total = 0;

  constructor(
    readonly clock: SimClock,
    readonly random: Random,
    readonly scenario: Scenario,
  ) {}

  connector(member: string): Connector<{ member: string }> {
    const cost = (c: Cost) => this.random.around(c.mean, c.spread ?? 0);
    return {
      create: async () => {
        this.connects++;
        this.#change(member, 1);
        try {
          await this.clock.sleep(cost(this.scenario.connect));
        } catch (err) {
          this.#change(member, -1);
          throw err;
        }
        return { member };
      },
      close: async () => {
        this.disconnects++;
        await this.clock.sleep(cost(this.scenario.disconnect));
        this.#change(member, -1);
      },
    };
  }

  #change(member: string, by: number): void {
    this.open.set(member, (this.open.get(member) ?? 0) + by);
    this.#total += by;
    this.peak = Math.max(this.peak, this.#total);
  }

  snapshot(): Record<string, number> {
    return Object.fromEntries(this.open);
  }
}

/** A budget with no planning: the first member to ask gets the next free place. */
class FirstComeBudget implements ConnectionBudget {
  #total = 0;
  readonly #waiting = new Set<BudgetMember>();

  constructor(readonly maxTotal: number) {}

  mayOpen(): boolean {
    return this.#total < this.maxTotal;
  }
  began(): void {
    this.#total++;
  }
  connected(): void {}
  ended(): void {
    this.#total--;
    for (const member of [...this.#waiting]) {
      if (this.#total >= this.maxTotal) return;
      this.#waiting.delete(member);
      member.demand();
    }
  }
  starved(member: BudgetMember): void {
    this.#waiting.add(member);
  }
  yields(): boolean {
    return false;
  }
  quiet(): void {}
}

function contender(name: ContenderName, scenario: Scenario, clock: SimClock, server: SimServer): Contender {
  const member = { clientLimit: 1, acquireTimeoutMs: Number.POSITIVE_INFINITY };
  if (name === 'group') {
    const group = new PoolGroup({
      name: 'qos',
      maxTotal: scenario.maxTotal,
      clock,
      logger: silent,
      connector: (key) => server.connector(key),
      member,
      ...(scenario.minHoldMs === undefined ? {} : { minHoldMs: scenario.minHoldMs }),
    });
    return { use: (key, fn) => group.use(key, fn), close: () => group.close() };
  }
  if (name === 'fleet') {
    // One instance per member: its own pool, on its own FleetBudget, every budget on one Redis.
    const redis = new SimFleetRedis(clock, scenario.maxTotal);
    const instances = new Map(
      membersOf(scenario).map((key) => {
        const budget = new FleetBudget({
          name: 'qos',
          maxTotal: scenario.maxTotal,
          clock,
          logger: silent,
          metrics: false,
          ...(scenario.minHoldMs === undefined ? {} : { minHoldMs: scenario.minHoldMs }),
          [kFleetPlaces]: redis.instance(),
        } as never);
        const pool = new ConnectionPool(server.connector(key), {
          ...member,
          name: `fleet:${key}`,
          clock,
          logger: silent,
          maxSize: scenario.maxTotal,
          budget,
        });
        return [key, { budget, pool }] as const;
      }),
    );
    return {
      use: (key, fn) => instances.get(key)!.pool.use(fn),
      close: async () => {
        await Promise.all([...instances.values()].map((i) => i.pool.close()));
        await Promise.all([...instances.values()].map((i) => i.budget.close()));
      },
    };
  }
  // The baselines: one plain pool per member on a first-come budget. 'static' splits maxTotal
  // evenly between the scenario's members (at least one each); 'greedy' lets any member take it all.
  const members = membersOf(scenario);
  const budget = new FirstComeBudget(scenario.maxTotal);
  const share = name === 'static' ? Math.max(1, Math.floor(scenario.maxTotal / members.length)) : scenario.maxTotal;
  const pools = new Map(
    members.map((key) => [
      key,
      new ConnectionPool(server.connector(key), {
        ...member,
        name: `${name}:${key}`,
        clock,
        logger: silent,
        maxSize: share,
        minSize: 0,
        growAt: 1,
        maxIdleMs: BASELINE_IDLE_MS,
        reapIntervalMs: SAMPLE_EVERY_MS,
        [kBudget]: budget,
      } as never),
    ]),
  );
  return {
    use: (key, fn) => pools.get(key)!.use(fn),
    close: async () => {
      await Promise.all([...pools.values()].map((p) => p.close()));
    },
  };
}

/** Runs `scenario` against `name`, deterministically for its seed. */
export async function runScenario(scenario: Scenario, name: ContenderName): Promise<RunResult> {
  const clock = new SimClock();
  const random = new Random(scenario.seed ?? 4);
  const server = new SimServer(clock, new Random((scenario.seed ?? 4) ^ 0x5eed), scenario);
  const pool = contender(name, scenario, clock, server);
  const queries: QueryRecord[] = [];
  const samples: Sample[] = [];
  let pending = 0;

  const query = (member: string, cost: Cost): void => {
    const at = clock.now();
    const hold = random.around(cost.mean, cost.spread ?? 0);
    pending++;
    let started = false;
    void pool
      .use(member, async () => {
        started = true;
        queries.push({ member, at, waitMs: clock.now() - at, failed: false });
        await clock.sleep(hold);
      })
      .catch(() => {
        if (!started) queries.push({ member, at, waitMs: clock.now() - at, failed: true });
      })
      .finally(() => pending--);
  };
  for (const stream of scenario.streams) {
    const arrive = (): void => {
      if (clock.now() >= stream.end) return;
      query(stream.member, stream.cost);
      clock.setTimeout(arrive, random.interval(stream.qps));
    };
    clock.setTimeout(arrive, stream.start + random.interval(stream.qps));
  }
  const sample = (): void => {
    samples.push({ at: clock.now(), connections: server.snapshot() });
    if (clock.now() < endOf(scenario)) clock.setTimeout(sample, SAMPLE_EVERY_MS);
  };
  clock.setTimeout(sample, 0);
  const capacityAt = new Map<number, Record<string, number>>();
  for (const m of scenario.measures) {
    if (m.kind !== 'capacity') continue;
    const at = m.at ?? endOf(scenario);
    clock.setTimeout(() => capacityAt.set(at, server.snapshot()), at);
  }

  await clock.runUntil(endOf(scenario));
  for (let t = 0; t < DRAIN_MS && pending > 0; t += 1_000) await clock.runUntil(clock.now() + 1_000);
  const unfinished = pending;
  let closed = false;
  void pool.close().finally(() => (closed = true));
  while (!closed && clock.now() < endOf(scenario) + 2 * DRAIN_MS) await clock.runUntil(clock.now() + 1_000);
  return {
    scenario,
    contender: name,
    queries,
    connects: server.connects,
    disconnects: server.disconnects,
    samples,
    peak: server.peak,
    capacityAt,
    unfinished,
  };
}

// What a QoS scenario says: the budget, the cost of a connect and a disconnect, the load, and
// how the run is scored.

/** A duration with its variance: `mean` ms, spread uniformly by ±`spread` × mean. */
export interface Cost {
  readonly mean: number;
  readonly spread?: number;
}

/** Queries of one member at a steady rate (Poisson arrivals) from `start` to `end` (ms). */
export interface LoadStream {
  readonly member: string;
  readonly start: number;
  readonly end: number;
  readonly qps: number;
  /** How long a query holds its connection. */
  readonly cost: Cost;
}

/** A measure's landmarks: [value, score] points; the score is linear between them, flat beyond. */
export type Landmarks = readonly (readonly [value: number, score: number])[];

/** A percentile, 0–100. */
export type Percentile = number;

/** What a scenario scores, each measure 0–100, weighted. */
export type Measure = { readonly weight: number; readonly landmarks: Landmarks; readonly label?: string } & (
  | {
      /** How alike the members' acquire latencies are: the mean coefficient of variation of their percentiles (lower is better). */
      readonly kind: 'similarity';
      readonly members: readonly string[];
      readonly percentiles?: readonly Percentile[];
    }
  | {
      /** Percentile of group `slow` over the same of group `fast` (e.g. busy over rare: a high ratio means the rare one is favoured). */
      readonly kind: 'ratio';
      readonly percentile: Percentile;
      readonly numerator: readonly string[];
      readonly denominator: readonly string[];
    }
  | {
      /** An absolute acquire-latency percentile of these members' queries, ms. */
      readonly kind: 'latency';
      readonly percentile: Percentile;
      readonly members: readonly string[];
    }
  | {
      /** Connects plus disconnects over the run. */
      readonly kind: 'overhead';
    }
  | {
      /** Connections these members hold at `at` (default: when the last stream ends), as a share of `maxTotal`. */
      readonly kind: 'capacity';
      readonly members: readonly string[];
      readonly at?: number;
    }
);

export interface Scenario {
  readonly name: string;
  /** What it shows, one line. */
  readonly about: string;
  readonly maxTotal: number;
  readonly connect: Cost;
  readonly disconnect: Cost;
  readonly streams: readonly LoadStream[];
  readonly measures: readonly Measure[];
  /** The weighted score the group must reach; it must also beat both baselines. */
  readonly threshold: number;
  /** The group's minimum hold, ms (default: the group's). */
  readonly minHoldMs?: number;
  /**
   * Each member is an instance of a service, its own pool on a FleetBudget, all on one simulated
   * Redis (contender `fleet`, in place of `group`); the baselines split or race for the same places.
   */
  readonly fleet?: boolean;
  readonly seed?: number;
}

/** Every member a scenario's streams name, in order of first appearance. */
export function membersOf(scenario: Scenario): string[] {
  return [...new Set(scenario.streams.map((s) => s.member))];
}

/** When the last stream ends. */
export function endOf(scenario: Scenario): number {
  return Math.max(...scenario.streams.map((s) => s.end));
}

// Scores of a QoS run: each measure is turned into 0–100 by
// linear scaling between landmark values, and a scenario's score is the weighted mean.
import type { RunResult } from './harness.js';
import { endOf, type Landmarks, type Measure } from './scenario.js';

export interface MeasureScore {
  readonly label: string;
  /** What was measured, in the measure's unit (ms, a ratio, a count, a share). */
  readonly value: number;
  readonly score: number;
  readonly weight: number;
}

export interface RunScore {
  readonly measures: MeasureScore[];
  /** Weighted mean of the measures' scores, 0–100. */
  readonly total: number;
}

/** Nearest-rank percentile of `values` (unsorted); 0 with none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

/** The score of `value` between landmarks: linear between two points, flat beyond the ends. */
export function scale(value: number, landmarks: Landmarks): number {
  const points = [...landmarks].sort((a, b) => a[0] - b[0]);
  if (points.length === 0) throw new Error('a measure needs at least one landmark');
  if (value <= points[0]![0]) return points[0]![1];
  for (let i = 1; i < points.length; i++) {
    const [v0, s0] = points[i - 1]!;
    const [v1, s1] = points[i]!;
    if (value <= v1) return v1 === v0 ? s1 : s0 + ((value - v0) / (v1 - v0)) * (s1 - s0);
  }
  return points[points.length - 1]![1];
}

/** Coefficient of variation (standard deviation over mean); 0 when every value is 0. */
export function variation(values: readonly number[]): number {
  const mean = values.reduce((s, v) => s + v, 0) / values.length;
  if (mean === 0) return 0;
  const variance = values.reduce((s, v) => s + (v - mean) ** 2, 0) / values.length;
  return Math.sqrt(variance) / mean;
}

const waitsOf = (run: RunResult, members: readonly string[]): number[] => {
  const wanted = new Set(members);
  return run.queries.filter((q) => wanted.has(q.member)).map((q) => q.waitMs);
};

/** What `measure` reads from `run`, in its unit. */
export function valueOf(measure: Measure, run: RunResult): number {
  switch (measure.kind) {
    case 'similarity': {
      const ps = measure.percentiles ?? [25, 50, 75, 90, 99];
      const waits = measure.members.map((m) => waitsOf(run, [m]));
      // Waits under a millisecond count as one: 0.1 ms against 0.5 ms is alike, not 5 times apart.
      return ps.reduce((sum, p) => sum + variation(waits.map((w) => Math.max(1, percentile(w, p)))), 0) / ps.length;
    }
    case 'ratio': {
      const denominator = percentile(waitsOf(run, measure.denominator), measure.percentile);
      const numerator = percentile(waitsOf(run, measure.numerator), measure.percentile);
      // Both near zero: as good as equal. The floor keeps a 0 ms denominator from dividing by zero.
      return Math.max(numerator, 0.1) / Math.max(denominator, 0.1);
    }
    case 'latency':
      return percentile(waitsOf(run, measure.members), measure.percentile);
    case 'overhead':
      return run.connects + run.disconnects;
    case 'capacity': {
      const at = run.capacityAt.get(measure.at ?? endOf(run.scenario)) ?? {};
      return measure.members.reduce((sum, m) => sum + (at[m] ?? 0), 0) / run.scenario.maxTotal;
    }
  }
}

const who = (members: readonly string[]) => (members.length > 6 ? `all ${members.length} members` : members.join(', '));

/** The default label of a measure, for the tables. */
export function labelOf(measure: Measure): string {
  if (measure.label !== undefined) return measure.label;
  switch (measure.kind) {
    case 'similarity':
      return `latency similarity (CV) of ${who(measure.members)}`;
    case 'ratio':
      return `p${measure.percentile} ${measure.numerator.join('+')} / ${measure.denominator.join('+')}`;
    case 'latency':
      return `p${measure.percentile} wait of ${who(measure.members)} (ms)`;
    case 'overhead':
      return 'connects + disconnects';
    case 'capacity':
      return `share of maxTotal held by ${who(measure.members)}${measure.at === undefined ? ' at the end' : ` at ${measure.at} ms`}`;
  }
}

/** Every measure of the run's scenario, scored, and their weighted mean. */
export function score(run: RunResult): RunScore {
  const measures = run.scenario.measures.map((m) => {
    const value = valueOf(m, run);
    return { label: labelOf(m), value, score: scale(value, m.landmarks), weight: m.weight };
  });
  const weights = measures.reduce((s, m) => s + m.weight, 0);
  return { measures, total: measures.reduce((s, m) => s + m.score * m.weight, 0) / weights };
}

/**
 * Variants measured in turn, and what their ratio is with the noise of this machine taken into
 * account. On a shared 2-core VM two runs of the same process differ by 10 % and more (with
 * PostgreSQL on the same cores, by 50 %), so the best rate of each variant can land a ratio on
 * either side of a target from one run to the next. Taking the variants in turn, a round each,
 * makes each round a pair measured under nearly the same load; several sets of processes average
 * out each process's own speed. The median over the sets, with the range that holds the true
 * median at a known confidence, says whether a target is met, missed, or cannot be told apart from
 * it at this noise. (fresh-process.ts's `alternating` takes the rounds.)
 */

/** The best rate of each variant over every set's rounds (sets[s][i][variant]). */
export function bestOf<V extends string>(sets: readonly (readonly Record<V, number>[])[]): Record<V, number> {
  const best = {} as Record<V, number>;
  for (const round of sets.flat())
    for (const v of Object.keys(round) as V[]) best[v] = Math.max(best[v] ?? 0, round[v]);
  return best;
}

/** A ratio taken pair by pair: its median, and the range that holds the true median at `confidence`. */
export interface PairedRatio {
  median: number;
  low: number;
  high: number;
  /** The chance that [low, high] holds the median of the sets' ratios (distribution-free). */
  confidence: number;
  /** Sets of processes: each is one sample, the median of its rounds' ratios. */
  sets: number;
}

/** P(X ≤ k) for X ~ Binomial(n, 1/2). */
function binomialCdf(n: number, k: number): number {
  let term = 0.5 ** n; // P(X = 0)
  let sum = 0;
  for (let i = 0; i <= k; i++) {
    sum += term;
    term = (term * (n - i)) / (i + 1);
  }
  return sum;
}

function median(sorted: readonly number[]): number {
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The median of `values`, in any order. */
export function medianOf(values: readonly number[]): number {
  return median([...values].sort((a, b) => a - b));
}

/** Each variant's median client CPU per call over the rounds of every set, in µs, as one cell. */
export function cpuCell<V extends string>(
  cpu: readonly (readonly Record<V, number>[])[],
  variants: readonly V[],
): string {
  return `${variants.map((v) => medianOf(cpu.flat().map((r) => r[v])).toFixed(1)).join(' / ')} µs`;
}

/**
 * The ratio `ratio(round)`: each set of processes gives one sample, the median of its rounds'
 * ratios (rounds of one set share its processes' bias); the result is the samples' median, with
 * the sign test's range: the k-th smallest and k-th largest sample, with k the largest that keeps
 * the confidence at 90 % or more (with four sets or fewer none does: the range is then the least
 * and the greatest, at the confidence they give).
 */
export function pairedRatio<V extends string>(
  sets: readonly (readonly Record<V, number>[])[],
  ratio: (round: Record<V, number>) => number,
): PairedRatio {
  const samples = sets
    .filter((rounds) => rounds.length > 0)
    .map((rounds) => median(rounds.map(ratio).sort((a, b) => a - b)));
  samples.sort((a, b) => a - b);
  const n = samples.length;
  if (n === 0) throw new RangeError('pairedRatio: no rounds to take a ratio over');
  let k = 1;
  while (2 * k + 1 <= n && 1 - 2 * binomialCdf(n, k) >= 0.9) k++;
  return {
    median: median(samples),
    low: samples[k - 1]!,
    high: samples[n - k]!,
    confidence: 1 - 2 * binomialCdf(n, k - 1),
    sets: n,
  };
}

/** Whether a ratio meets a target (`at least` it, or `at most`), misses it, or cannot be told apart from it at this noise. */
export function verdict(r: PairedRatio, target: number, side: 'at least' | 'at most'): 'met' | 'missed' | 'undecided' {
  const [good, bad] = side === 'at least' ? [r.low >= target, r.high < target] : [r.high <= target, r.low > target];
  return good ? 'met' : bad ? 'missed' : 'undecided';
}

/** "0.93× (0.88–0.97, 6 sets of processes at 97 %): missed" */
export function describe(r: PairedRatio, target?: number, side: 'at least' | 'at most' = 'at least'): string {
  const range = `${r.low.toFixed(2)}–${r.high.toFixed(2)}, ${r.sets} sets of processes at ${Math.round(r.confidence * 100)} %`;
  return `${r.median.toFixed(2)}× (${range})${target === undefined ? '' : `: ${verdict(r, target, side)}`}`;
}

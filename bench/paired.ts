/**
 * Variants measured in turn, and what their ratio is with the noise of this machine taken into
 * account. On a shared 2-core VM two runs of the same process differ by 10 % and more (with
 * PostgreSQL on the same cores, by 50 %), so the best rate of each variant can land a ratio on
 * either side of a target from one run to the next. Taking the variants in turn makes each round a
 * pair measured under the same conditions; the median of the pairs' ratios, with the range that
 * holds the true median at a known confidence, says whether a target is met, missed, or cannot be
 * told apart from it at this noise. (fresh-process.ts's `alternating` takes the rounds.)
 */

/** The best rate of each variant over the rounds (rounds[i][variant]). */
export function bestOf<V extends string>(rounds: readonly Record<V, number>[]): Record<V, number> {
  const best = {} as Record<V, number>;
  for (const round of rounds) for (const v of Object.keys(round) as V[]) best[v] = Math.max(best[v] ?? 0, round[v]);
  return best;
}

/** A ratio taken pair by pair: its median, and the range that holds the true median at `confidence`. */
export interface PairedRatio {
  median: number;
  low: number;
  high: number;
  /** The chance that [low, high] holds the median of the pairs' ratios (distribution-free). */
  confidence: number;
  pairs: number;
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

/**
 * The ratio `ratio(round)` over the rounds. The range is the sign test's: the k-th smallest and
 * k-th largest ratio, with k the largest that keeps the confidence at 90 % or more (with four pairs
 * or fewer none does: the range is then the least and the greatest, at the confidence they give).
 */
export function pairedRatio<V extends string>(rounds: readonly Record<V, number>[], ratio: (round: Record<V, number>) => number): PairedRatio {
  const ratios = rounds.map(ratio).sort((a, b) => a - b);
  const n = ratios.length;
  if (n === 0) throw new RangeError('pairedRatio: no rounds to take a ratio over');
  const mid = n >> 1;
  const median = n % 2 === 1 ? ratios[mid]! : (ratios[mid - 1]! + ratios[mid]!) / 2;
  let k = 1;
  while (2 * k + 1 <= n && 1 - 2 * binomialCdf(n, k) >= 0.9) k++;
  return { median, low: ratios[k - 1]!, high: ratios[n - k]!, confidence: 1 - 2 * binomialCdf(n, k - 1), pairs: n };
}

/** Whether a ratio meets a target (`at least` it, or `at most`), misses it, or cannot be told apart from it at this noise. */
export function verdict(r: PairedRatio, target: number, side: 'at least' | 'at most'): 'met' | 'missed' | 'undecided' {
  const [good, bad] = side === 'at least' ? [r.low >= target, r.high < target] : [r.high <= target, r.low > target];
  return good ? 'met' : bad ? 'missed' : 'undecided';
}

/** "0.93× (0.88–0.97, 8 pairs at 93 %): missed" */
export function describe(r: PairedRatio, target?: number, side: 'at least' | 'at most' = 'at least'): string {
  const range = `${r.low.toFixed(2)}–${r.high.toFixed(2)}, ${r.pairs} pairs at ${Math.round(r.confidence * 100)} %`;
  return `${r.median.toFixed(2)}× (${range})${target === undefined ? '' : `: ${verdict(r, target, side)}`}`;
}

import { bestOf, describe, medianOf, pairedRatio } from '../paired.js';
import type { GcShare } from '../fresh-process.js';
import {
  alternatingFreshCycles,
  LIMITED_VARIANTS,
  INDEX_VARIANT,
  QUEUE_VARIANT,
  SHAPES,
  type FreshShape,
  type FreshVariant,
} from '../fresh-cycles.js';

/**
 * The fresh-process rows: sets of live processes (one per variant), one after another, each set
 * running short rounds of each variant in turn (how many, below for each kind of row). Each set is one
 * sample; with eight, the sign test's range is the second least to the second greatest sample, at
 * 93 % (with six it was the least to the greatest, so one set of processes with a speed of its own
 * widened every range).
 */
export const SETS = 8;
/** The cycle rows' rounds per set: twelve short ones (see fresh-cycles.ts's ROUND_SHARE). */
export const CYCLE_ROUNDS = 12;

/**
 * `@UsePooled` against `pool.use()` differ by a few percent at most, less than the flips of this
 * machine's speed between rounds (see fresh-cycles.ts's ROUND_SHARE): with three rounds of 300,000
 * calls per set, `pool.use()` against itself read 0.84x (0.62-0.94) with one caller. Many short
 * rounds and twelve sets: 0.99x (0.89-1.05) and 0.99x (0.96-1.01). With 100 callers twelve sets
 * left the cost undecided against its target in two runs (1.04x (1.02-1.13), 1.05x (1.02-1.10)):
 * twenty sets take the range from the sixth sample to the fifteenth, at 96 %, instead of the third
 * to the tenth. Twenty left it undecided in turn, one run with 100 callers, the next with one
 * (1.04x (1.01-1.09), then 1.01x (0.98-1.05)): a set's own speed spread its sample over 0.94-1.11
 * with the median at 1.01. Forty sets, of sixteen rounds each (a set's rounds share its bias, so
 * more of them narrow its sample less than more sets narrow the median), take the range from the
 * fifteenth sample to the twenty-sixth, at 92 %. With one caller that left 1.02x (1.01-1.05) undecided
 * by the range's top, 1.0505 (the 20:32 run): the sets' samples spread by a standard deviation of
 * 0.050, about 0.031 of it the median of a set's sixteen rounds (a round's ratio spread by 0.10),
 * the rest the processes' own speed. One caller takes sixty-four sets of twenty-four rounds (the
 * range from the twenty-fifth sample to the fortieth, at 94 %; about four seconds a set); 100
 * callers, met in both runs of forty, keep them.
 */

/**
 * The pool against a bare semaphore, and a semaphore that hands out leases (what the API's shape
 * costs), each variant in a process of its own, the variants taking rounds in turn: each ratio is
 * taken round by round (see paired.ts). A third control adds to the semaphore with leases the part
 * of the pool's work that the shape stresses: the pool's own queue where callers queue (what its
 * guarantees cost), the pool's connection index where none does (what choosing costs).
 */
export async function freshBench(
  results: Record<string, unknown>,
  rows: string[][],
  fmt: (n: number) => string,
): Promise<void> {
  const targets: Record<FreshShape, number> = {
    'exclusive, 1 caller': 0.9,
    'exclusive, 100 callers': 0.9,
    'deep queue: 10,000 callers, maxSize 1,000': 0.7,
  };
  const fresh: Record<string, unknown> = {};
  for (const shape of Object.keys(SHAPES) as FreshShape[]) {
    const queues = SHAPES[shape].callers > SHAPES[shape].maxSize;
    const control = queues ? QUEUE_VARIANT : INDEX_VARIANT;
    const variants: FreshVariant[] = ['pool', 'semaphore', 'semaphore with leases', control];
    const shares: Record<FreshVariant, GcShare>[] = [];
    const rounds = await alternatingFreshCycles(variants, shape, SETS, CYCLE_ROUNDS, (set) => shares.push(set));
    const best = bestOf(rounds);
    const ratio = pairedRatio(rounds, (r) => r.pool / r.semaphore);
    const floor = pairedRatio(rounds, (r) => r['semaphore with leases'] / r.semaphore);
    const own = pairedRatio(rounds, (r) => r.pool / r['semaphore with leases']);
    // The time of a cycle split into garbage collection and the rest (each set's processes' share of their rounds in collections, the median of the sets).
    const gc = Object.fromEntries(variants.map((v) => [v, medianOf(shares.map((set) => set[v]))])) as Record<
      FreshVariant,
      number
    >;
    const split = (v: FreshVariant) =>
      `${((1e9 / best[v]) * (1 - gc[v])).toFixed(0)} + ${((1e9 / best[v]) * gc[v]).toFixed(0)} ns`;
    const row = `${shape}, fresh processes`;
    rows.push([
      row,
      `${variants.map((v) => (v === 'pool' ? 'nestjs-shared-pool' : v)).join(' / ')} (best of each)`,
      variants.map((v) => fmt(best[v])).join(' / '),
      '',
    ]);
    rows.push([
      row,
      'ratio vs bare semaphore, round by round',
      describe(ratio, targets[shape]),
      `target ≥ ${targets[shape].toFixed(2)}×`,
    ]);
    rows.push([
      row,
      'control: semaphore with leases / bare semaphore',
      describe(floor, targets[shape]),
      'what a Promise<Lease> API costs before any bookkeeping',
    ]);
    // The control for the part of the pool's work this shape stresses: the queue where callers queue, the connection index where none does.
    const part = {
      control: pairedRatio(rounds, (r) => r[control] / r.semaphore),
      own: pairedRatio(rounds, (r) => r.pool / r[control]),
    };
    const adds = queues
      ? 'what the queue keeps for each waiting caller (its deadline, leaving from anywhere)'
      : 'choosing among shared connections (the fewest clients first) and refiling the one chosen at checkout and release';
    rows.push([
      row,
      `control: ${control} / bare semaphore`,
      describe(part.control, targets[shape]),
      `the semaphore with leases, plus ${adds}`,
    ]);
    rows.push([
      row,
      `nestjs-shared-pool / ${control}`,
      describe(part.own),
      `the rest of the pool's bookkeeping (counts behind stats() and health, ${queues ? 'the connection handed over' : 'idle dating, the growth check'}; checks for limiters, metrics, events, groups)`,
    ]);
    rows.push([
      row,
      'nestjs-shared-pool / semaphore with leases',
      describe(own),
      "the pool's own bookkeeping (connection index, counters, idle dating, deadlines)",
    ]);
    rows.push([
      row,
      `share of the rounds in garbage collection: ${variants.map((v) => (v === 'pool' ? 'nestjs-shared-pool' : v)).join(' / ')}`,
      variants.map((v) => `${(gc[v] * 100).toFixed(0)} %`).join(' / '),
      `a cycle at the best rate, outside + inside collections: ${variants.map(split).join(' / ')}`,
    ]);
    fresh[shape] = {
      ...best,
      ratio,
      floor,
      own,
      control,
      partControl: part.control,
      partOwn: part.own,
      gcShare: gc,
      rounds,
    };
  }
  results.freshCycles = fresh;
}

/**
 * An adaptive limit's warm cost against a LocalLimiter's, both through use() (so each call's end
 * is classified and learnt from), each variant in a process of its own, the variants taking rounds
 * in turn, the ratios round by round.
 */
export async function adaptiveFreshBench(
  results: Record<string, unknown>,
  rows: string[][],
  fmt: (n: number) => string,
): Promise<void> {
  const adaptive: Record<string, unknown> = {};
  for (const shape of ['exclusive, 1 caller', 'exclusive, 100 callers'] as const) {
    const rounds = await alternatingFreshCycles(LIMITED_VARIANTS, shape, SETS, CYCLE_ROUNDS);
    const best = bestOf(rounds);
    const aimd = pairedRatio(rounds, (r) => r['use(), AdaptiveLimiter (aimd)'] / r['use(), LocalLimiter']);
    const vegas = pairedRatio(rounds, (r) => r['use(), AdaptiveLimiter (vegas)'] / r['use(), LocalLimiter']);
    adaptive[shape] = { ...best, aimd, vegas, rounds };
    const row = `${shape}, fresh processes`;
    rows.push([
      row,
      'use() with a LocalLimiter / an AdaptiveLimiter (aimd) / (vegas) (best of each)',
      LIMITED_VARIANTS.map((v) => fmt(best[v])).join(' / '),
      '',
    ]);
    rows.push([
      row,
      'an AdaptiveLimiter (aimd) in front / a LocalLimiter, through use(), round by round',
      describe(aimd, 0.9),
      'target ≥ 0.90×',
    ]);
    rows.push([
      row,
      'an AdaptiveLimiter (vegas) in front / a LocalLimiter, through use(), round by round',
      describe(vegas, 0.9),
      'target ≥ 0.90×',
    ]);
  }
  results.adaptiveFresh = adaptive;
}

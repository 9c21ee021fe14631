/**
 * Upper bounds of the watched timings' buckets, ms: 0 (served at once), then from 0.01 ms up by a
 * factor of 2^(1/4) (19 % apart) to about 19 minutes; the last bucket holds everything above.
 */
export const WATCH_BOUNDS_MS: readonly number[] = [0, ...Array.from({ length: 108 }, (_, i) => 0.01 * 2 ** (i / 4))];

/** Counts of timings per bucket of {@link WATCH_BOUNDS_MS}, since the watch began (one more count than bounds: above the last). */
export interface WatchedHistogram {
  readonly counts: readonly number[];
  readonly total: number;
}

/** What a {@link TimingWatch} has seen. */
export interface WatchedTimings {
  /** How long callers waited for their connection (0 when one was free). */
  readonly wait: WatchedHistogram;
  /** How long leases were held, from checkout to release. */
  readonly hold: WatchedHistogram;
}

/**
 * A watch on a pool's wait and hold times, from `pool.watchTimings()`. While one is open the pool
 * times every checkout and release (a clock read each); once every watch is stopped it times
 * nothing for nobody. Reads are cumulative: diff two of them for a window.
 */
export interface TimingWatch {
  read(): WatchedTimings;
  /** Ends this watch. Calling it again does nothing. */
  stop(): void;
}

const LOG2_STEPS = 4;
const FIRST_MS = WATCH_BOUNDS_MS[1]!;
const LAST = WATCH_BOUNDS_MS.length;

/** @internal Counts of one timing, in the buckets of WATCH_BOUNDS_MS. */
export class WatchCounts {
  readonly counts = new Float64Array(LAST + 1);
  total = 0;

  record(ms: number): void {
    let i: number;
    if (!(ms > 0)) i = 0;
    else if (ms <= FIRST_MS) i = 1;
    else i = Math.min(LAST, 1 + Math.ceil(Math.log2(ms / FIRST_MS) * LOG2_STEPS - 1e-9));
    this.counts[i]!++;
    this.total++;
  }

  read(): WatchedHistogram {
    return { counts: [...this.counts], total: this.total };
  }
}

/**
 * The value below which a share `q` (0–1) of `counts` falls, ms, interpolated inside its bucket
 * (19 % wide); undefined with no count. `counts` as a {@link WatchedHistogram} has them.
 */
export function watchedQuantile(counts: readonly number[], q: number): number | undefined {
  let total = 0;
  for (const c of counts) total += c;
  if (total === 0) return undefined;
  const rank = Math.min(Math.max(q, 0), 1) * total;
  let below = 0;
  for (let i = 0; i < counts.length; i++) {
    const c = counts[i]!;
    if (c === 0 || below + c < rank) {
      below += c;
      continue;
    }
    if (i === 0) return 0;
    const lower = i === 1 ? 0 : WATCH_BOUNDS_MS[i - 1]!;
    const upper = i < LAST ? WATCH_BOUNDS_MS[i]! : lower * 2 ** (1 / LOG2_STEPS);
    return lower + (upper - lower) * Math.max(0, (rank - below) / c);
  }
  return WATCH_BOUNDS_MS[LAST - 1];
}

/** @internal The watches of one pool: their counts exist while at least one is open. */
export class PoolTimingWatches {
  #open = 0;
  #counts: { wait: WatchCounts; hold: WatchCounts } | undefined;

  constructor(private readonly changed: () => void) {}

  /** The counts to record into, while watched. */
  get counts(): { wait: WatchCounts; hold: WatchCounts } | undefined {
    return this.#counts;
  }

  open(): TimingWatch {
    const counts = (this.#counts ??= { wait: new WatchCounts(), hold: new WatchCounts() });
    this.#open++;
    if (this.#open === 1) this.changed();
    let stopped = false;
    return {
      read: () => ({ wait: counts.wait.read(), hold: counts.hold.read() }),
      stop: () => {
        if (stopped) return;
        stopped = true;
        if (--this.#open > 0) return;
        this.#counts = undefined;
        this.changed();
      },
    };
  }
}

// The algorithms of an adaptive concurrency limit: each reads how calls end (their duration, the
// calls in flight when they began, whether the backend said it was overloaded) and moves one
// limit between bounds. AIMD reacts to overload signals only (a 429, a timeout); the gradient
// compares short-term latency with the long-term one; Vegas estimates the queue from the
// shortest latency seen. After TCP congestion control, as Netflix's concurrency-limits does.
// The latency-based two move once per window of calls (windowMs) on its mean latency. Neither
// can see the latency a backend has without a queue if it never ran below its knee: started
// above it, Vegas holds the queue it found, and the gradient creeps up as its long-term latency
// catches up with a steady load. Loss signals (429, timeouts) are what every algorithm cuts on.
import { is, keysOf, OptionReader, type OptionScope } from '../../core/index.js';

/** One call that ended, as an algorithm reads it. */
export interface LimitSample {
  /** When the call was admitted, ms on the limit's clock. */
  readonly startedAt: number;
  /** How long it took, ms. NaN, a negative or an infinite value is ignored. */
  readonly durationMs: number;
  /** Calls in flight when it was admitted, itself included. */
  readonly inflight: number;
  /** `overload`: the backend said it was at capacity (429, 503, a timeout); `success`: it answered. */
  readonly outcome: 'success' | 'overload';
}

/** An algorithm that moves a concurrency limit. */
export interface LimitAlgorithm {
  readonly name: string;
  /** The limit now: a whole number within the bounds. */
  readonly limit: number;
  /** The bounds it keeps. */
  readonly min: number;
  readonly max: number;
  /** The share of the limit an overload keeps (0.7: a cut by 30 %). */
  readonly backoff: number;
  /** The estimate behind the limit, fractional: the limit is its whole part. */
  readonly estimate: number;
  /**
   * How growth adds up across instances sharing the limit: `call` (each success adds a little,
   * so the fleet's successes add up to the growth of one instance seeing them all) or `window`
   * (each instance's window proposes a step: shared, the step is split among the instances).
   */
  readonly growth: 'call' | 'window';
  /** A call ended: the limit after it. */
  sample(sample: LimitSample): number;
  /**
   * A success that was not timed (calls that come many a millisecond are timed in a sample), begun
   * with `inflight` calls in flight: the limit after it. AIMD counts it as any success; a
   * latency-based algorithm has nothing to learn from it.
   */
  untimedSuccess(inflight: number): number;
  /** The shared limit moved (another instance, or Redis): go on from `estimate`, within the bounds. */
  follow(estimate: number): void;
}

/** Bounds every algorithm keeps. */
export interface LimitBounds {
  /** The least the limit goes down to. Default 1. */
  min?: number;
  /** The most it goes up to. Default 1 000. */
  max?: number;
  /** Where it starts. Default 10 (or `min`, if higher). */
  initial?: number;
  /**
   * How much of the limit an overload keeps: 0.7 cuts it by 30 %. One cut per round of calls: an
   * overload of a call admitted before the last cut does not cut again. Default 0.7.
   */
  backoff?: number;
}

/** AIMD: grows by one per limit's worth of successes, cuts by `backoff` on overload. */
export interface AimdOptions extends LimitBounds {
  algorithm: 'aimd';
}

/** What the latency-based algorithms share: they move once per window of calls, on its mean latency. */
export interface WindowOptions {
  /** A window closes once it is this long, ms, and holds at least 10 successes. Default 250. */
  windowMs?: number;
}

/** Gradient: the limit follows long-term over short-term latency, plus room to probe. */
export interface GradientOptions extends LimitBounds, WindowOptions {
  algorithm: 'gradient';
  /** Short-term latency may exceed the long-term one by this factor before the limit shrinks. Default 1.5. */
  tolerance?: number;
  /** Windows the long-term latency averages over. Default 600. */
  longWindow?: number;
  /** How much of each new estimate the limit takes (0–1]. Default 0.2. */
  smoothing?: number;
}

/** Vegas: the queue at the backend, estimated from the shortest latency, kept between α and β. */
export interface VegasOptions extends LimitBounds, WindowOptions {
  algorithm: 'vegas';
  /** The shortest latency is measured again every this many limits' worth of windows. Default 30. */
  probeEvery?: number;
  /** How much of each new estimate the limit takes (0–1]. Default 1. */
  smoothing?: number;
}

/** The algorithm of an adaptive limit and its settings. */
export type AdaptiveAlgorithmOptions = AimdOptions | GradientOptions | VegasOptions;

const BOUNDS = { min: true, max: true, initial: true, backoff: true } as const;

/** Makes the algorithm `options` name; a bad option throws a PoolConfigError that names it. */
export function limitAlgorithm(
  options: AdaptiveAlgorithmOptions,
  scope: OptionScope = { subject: 'limiter', name: 'limits', path: 'adaptive.' },
): LimitAlgorithm {
  const read = new OptionReader(scope, options as object as Record<string, unknown>);
  const algorithm = read.get('algorithm', is.oneOf('aimd', 'gradient', 'vegas'));
  if (algorithm === undefined) read.fail('algorithm', "is needed: 'aimd', 'gradient' or 'vegas'");
  const known = {
    aimd: keysOf<AimdOptions>({ algorithm: true, ...BOUNDS }),
    gradient: keysOf<GradientOptions>({
      algorithm: true,
      ...BOUNDS,
      windowMs: true,
      tolerance: true,
      longWindow: true,
      smoothing: true,
    }),
    vegas: keysOf<VegasOptions>({ algorithm: true, ...BOUNDS, windowMs: true, probeEvery: true, smoothing: true }),
  }[algorithm as AdaptiveAlgorithmOptions['algorithm']];
  read.only(known, `the options of the ${String(algorithm)} algorithm`);
  const min = read.get('min', is.whole(1), 1) as number;
  const max = read.get('max', is.whole(1), 1_000) as number;
  if (max < min) read.fail('max', `must be at least min (${min}), got ${max}`);
  const initial = read.get('initial', is.whole(1), Math.min(max, Math.max(min, 10))) as number;
  if (initial < min || initial > max)
    read.fail('initial', `must be within min and max (${min}–${max}), got ${initial}`);
  const bounds: Bounds = { min, max, initial, backoff: read.get('backoff', is.from(0.1, 1), 0.7) as number };
  if (algorithm === 'aimd') return new AimdLimit(bounds);
  const windowMs = read.get('windowMs', is.finiteAbove(0), 250) as number;
  if (algorithm === 'gradient') {
    return new GradientLimit(
      bounds,
      windowMs,
      read.get('tolerance', is.finiteAtLeast(1), 1.5) as number,
      read.get('longWindow', is.whole(1), 600) as number,
      read.get('smoothing', is.fraction, 0.2) as number,
    );
  }
  return new VegasLimit(
    bounds,
    windowMs,
    read.get('probeEvery', is.whole(1), 30) as number,
    read.get('smoothing', is.fraction, 1) as number,
  );
}

interface Bounds {
  readonly min: number;
  readonly max: number;
  readonly initial: number;
  readonly backoff: number;
}

/** What every algorithm shares: the bounds, the estimate behind the limit, one cut per round. */
abstract class BoundedLimit implements LimitAlgorithm {
  abstract readonly name: string;
  abstract readonly growth: 'call' | 'window';
  /** The estimate, fractional; the limit is its whole part. */
  estimate: number;
  /** When the limit was last cut: overloads of calls admitted before it are of the same round. */
  #cutAt = -Infinity;

  constructor(protected readonly bounds: Bounds) {
    this.estimate = bounds.initial;
  }

  get limit(): number {
    return Math.floor(this.estimate);
  }

  get min(): number {
    return this.bounds.min;
  }

  get max(): number {
    return this.bounds.max;
  }

  get backoff(): number {
    return this.bounds.backoff;
  }

  follow(estimate: number): void {
    this.#set(estimate);
  }

  sample(s: LimitSample): number {
    const duration = s.durationMs;
    if (!(duration >= 0) || duration === Infinity || !(s.inflight >= 0) || !Number.isFinite(s.startedAt))
      return this.limit;
    if (s.outcome === 'overload') {
      if (s.startedAt >= this.#cutAt) {
        this.#cutAt = s.startedAt + duration; // the call's end: calls admitted before it belong to this round
        this.#set(this.estimate * this.bounds.backoff);
        this.cut();
      }
      return this.limit;
    }
    this.#set(this.next(duration, s.inflight, s.startedAt + duration));
    return this.limit;
  }

  untimedSuccess(inflight: number): number {
    if (inflight >= 0) this.#set(this.untimed(inflight));
    return this.limit;
  }

  /** The estimate after a success that was not timed: by default, as it was (nothing to learn from). */
  protected untimed(_inflight: number): number {
    return this.estimate;
  }

  /** The estimate after a success that took `durationMs` with `inflight` calls in flight, ended at `endedAt`. */
  protected abstract next(durationMs: number, inflight: number, endedAt: number): number;

  /** The limit was cut for an overload (an algorithm may reset what it measured). */
  protected cut(): void {}

  /** Whether the calls in flight were too few to test the limit: no growth from them. */
  protected appLimited(inflight: number): boolean {
    return inflight * 2 < this.limit;
  }

  #set(estimate: number): void {
    if (Number.isNaN(estimate)) return;
    this.estimate = Math.min(this.bounds.max, Math.max(this.bounds.min, estimate));
  }
}

class AimdLimit extends BoundedLimit {
  readonly name = 'aimd';
  readonly growth = 'call';

  protected next(_durationMs: number, inflight: number): number {
    if (this.appLimited(inflight)) return this.estimate;
    // One more per limit's worth of successes, as TCP's congestion avoidance.
    return this.estimate + 1 / Math.max(1, this.limit);
  }

  /** A success counts whether it was timed or not: AIMD never reads its latency. */
  protected override untimed(inflight: number): number {
    return this.next(0, inflight);
  }
}

/**
 * A limit moved once per window of successes, on the window's mean latency and the most calls in
 * flight in it: one slow call, or a burst of them, moves it no more than a window's worth.
 */
abstract class WindowedLimit extends BoundedLimit {
  readonly growth = 'window';
  #start = NaN;
  #count = 0;
  #sum = 0;
  #squares = 0;
  #inflight = 0;

  constructor(
    bounds: Bounds,
    private readonly windowMs: number,
  ) {
    super(bounds);
  }

  protected next(durationMs: number, inflight: number, endedAt: number): number {
    if (Number.isNaN(this.#start) || endedAt < this.#start) this.#start = endedAt; // a clock that went back starts a new window
    this.#count++;
    this.#sum += durationMs;
    this.#squares += durationMs * durationMs;
    if (inflight > this.#inflight) this.#inflight = inflight;
    if (this.#count < 10 || endedAt - this.#start < this.windowMs) return this.estimate;
    const mean = this.#sum / this.#count;
    // The standard error of the mean: how far it may be off by chance alone.
    const error = Math.sqrt(Math.max(0, this.#squares / this.#count - mean * mean) / this.#count);
    const most = this.#inflight;
    this.#start = endedAt;
    this.#count = 0;
    this.#sum = 0;
    this.#squares = 0;
    this.#inflight = 0;
    return this.window(Math.max(mean, 0.001), most, error);
  }

  /** A window closed: the estimate after it. `errorMs`: the standard error of its mean latency. */
  protected abstract window(meanMs: number, inflight: number, errorMs: number): number;

  protected override cut(): void {
    // What the window held was measured at the old limit.
    this.#start = NaN;
    this.#count = 0;
    this.#sum = 0;
    this.#squares = 0;
    this.#inflight = 0;
  }
}

/** An exponential moving average over about `window` values. */
class Average {
  value = NaN;
  constructor(private readonly window: number) {}
  add(x: number): number {
    this.value = Number.isNaN(this.value) ? x : this.value + (x - this.value) * (2 / (this.window + 1));
    return this.value;
  }
}

class GradientLimit extends WindowedLimit {
  readonly name = 'gradient';
  readonly #long: Average;

  constructor(
    bounds: Bounds,
    windowMs: number,
    private readonly tolerance: number,
    longWindow: number,
    private readonly smoothing: number,
  ) {
    super(bounds, windowMs);
    this.#long = new Average(longWindow);
  }

  protected window(short: number, inflight: number): number {
    const long = this.#long.add(short);
    // Latency back to normal after a long overload: let the long-term average catch up now.
    if (long / short > 2) this.#long.value *= 0.9;
    if (this.appLimited(inflight)) return this.estimate;
    const gradient = Math.max(0.5, Math.min(1, (this.tolerance * long) / short));
    const target = this.estimate * gradient + Math.sqrt(this.estimate);
    return this.estimate * (1 - this.smoothing) + target * this.smoothing;
  }
}

class VegasLimit extends WindowedLimit {
  readonly name = 'vegas';
  /**
   * The shortest latency seen since the last probe: the backend's latency with no queue. Taken
   * from window latencies smoothed over a few windows: the least of raw window means is biased
   * low by their noise (long, varied calls, few per window), which would show a queue that is not
   * there and hold the limit down.
   */
  #noLoad = Infinity;
  #smoothed = NaN;
  #sinceProbe = 0;
  /**
   * Windows still to skip at the start: the first ones hold only the calls that ended soonest,
   * the shortest, so their latency is below the backend's true one.
   */
  #warmup = 2;

  constructor(
    bounds: Bounds,
    windowMs: number,
    private readonly probeEvery: number,
    private readonly smoothing: number,
  ) {
    super(bounds, windowMs);
  }

  protected window(rtt: number, inflight: number, errorMs: number): number {
    if (this.#warmup > 0) {
      this.#warmup--;
      return this.estimate;
    }
    this.#smoothed = Number.isNaN(this.#smoothed) ? rtt : this.#smoothed + (rtt - this.#smoothed) * 0.25;
    // Measure the no-load latency again now and then: the backend may have got faster or slower for good.
    if (++this.#sinceProbe >= this.probeEvery * this.limit) {
      this.#sinceProbe = 0;
      this.#noLoad = this.#smoothed = rtt;
      return this.estimate;
    }
    if (this.#smoothed < this.#noLoad) {
      this.#noLoad = this.#smoothed;
      return this.estimate;
    }
    if (this.appLimited(inflight)) return this.estimate;
    const limit = this.estimate;
    // Latency above the floor by less than chance explains (its standard error) is no queue.
    const queue = limit * Math.max(0, 1 - this.#noLoad / Math.max(this.#noLoad, rtt - errorMs));
    const log = Math.max(1, Math.log10(limit));
    let target: number;
    if (queue <= log)
      target = limit + 6 * log; // no queue: grow fast
    else if (queue < 3 * log) target = limit + log;
    else if (queue > 12 * log)
      target = limit - queue + 3 * log; // far past the knee (capacity fell): straight back to a short queue
    else if (queue > 6 * log) target = limit - log;
    else return this.estimate; // between α and β: hold
    return limit * (1 - this.smoothing) + target * this.smoothing;
  }
}

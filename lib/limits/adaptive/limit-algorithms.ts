// The algorithms of an adaptive concurrency limit, and the options that choose one: each reads how
// calls end (their duration, the calls in flight when they began, whether the backend said it was
// overloaded) and moves one limit between bounds. Loss signals (429, timeouts) are what every
// algorithm cuts on. AIMD (aimd-limit.ts) grows by one per limit's worth of successes and also
// cuts when the recent calls' mean latency shows a queue; the gradient (gradient-limit.ts) keeps
// short-term latency within a tolerance of the long-term one; Vegas (vegas-limit.ts) estimates the
// queue from the latency without one and keeps it short. After TCP congestion control, as
// Netflix's concurrency-limits does. The latency they measure against is the backend's without a
// queue (no-load-latency.ts): calls that tested the limit never raise it, so none ratchets, and a
// probe at a pinned low concurrency measures it again now and then.
import { is, keysOf, OptionReader, optionError, type OptionScope, shown } from '../../core/index.js';
import { AimdLimit } from './aimd-limit.js';
import type { Bounds, LimitAlgorithm } from './bounded-limit.js';
import { GradientLimit } from './gradient-limit.js';
import { VegasLimit } from './vegas-limit.js';

export type { LimitAlgorithm, LimitSample } from './bounded-limit.js';

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

/** What the algorithms that read latency share: windows of calls, and probes of the latency without a queue (AIMD: the probes only). */
export interface WindowOptions {
  /** A window closes once it is this long, ms, and holds at least 10 successes. Default 250. */
  windowMs?: number;
  /**
   * The latency without a queue is measured again, with the limit pinned at 3 (or `min`) for the
   * 20 calls it takes, every this many limits' worth of windows; the first time after this many
   * windows. Default 30.
   */
  probeEvery?: number;
}

/**
 * AIMD: grows by one per limit's worth of successes (half of that near the limit where it
 * last saw a queue), cuts by `backoff` on overload, and when the
 * mean latency of the last limit's worth of calls (20 at least) is past `tolerance` × the latency
 * without a queue by more than chance explains (a queue building).
 */
export interface AimdOptions extends LimitBounds, WindowOptions {
  algorithm: 'aimd';
  /**
   * Recent calls' mean latency past this multiple of the latency without a queue cuts. `Infinity`:
   * only overloads cut (Netflix's AIMD). Default 1.3: on a backend with a knee, a mean of 1.5 × is a
   * queue half the backend's capacity deep, and a p99 near twice the latency without one.
   */
  tolerance?: number;
}

/** Gradient: the limit follows long-term over short-term latency, plus room to probe. */
export interface GradientOptions extends LimitBounds, WindowOptions {
  algorithm: 'gradient';
  /**
   * Short-term latency (a window's mean) may exceed the long-term one by this factor: within it the
   * limit grows by √limit × `smoothing` a window; past it (by two standard errors of the window's
   * mean), it shrinks at once in proportion. Default 1.3, as AIMD's.
   */
  tolerance?: number;
  /**
   * Calls the long-term latency averages over: calls that met no queue of the limit's making (under
   * load, only a window with a lower mean, or a probe, moves it). Default 600.
   */
  longWindow?: number;
  /** How much of each new estimate the limit takes (0–1]. Default 0.2. */
  smoothing?: number;
}

/** Vegas: the queue at the backend, estimated from the latency without one, kept between α and β. */
export interface VegasOptions extends LimitBounds, WindowOptions {
  /** The default: options without an `algorithm` are Vegas's. */
  algorithm?: 'vegas';
  /** How much of each new estimate the limit takes (0–1]. Default 1. */
  smoothing?: number;
}

/** The algorithms by name. */
export type AlgorithmName = 'aimd' | 'gradient' | 'vegas';

/** The algorithm of an adaptive limit and its settings. */
export type AdaptiveAlgorithmOptions = AimdOptions | GradientOptions | VegasOptions;

const BOUNDS = { min: true, max: true, initial: true, backoff: true } as const;

/** Makes the algorithm `options` name; a bad option throws a PoolConfigError that names it. */
export function limitAlgorithm(
  options: AdaptiveAlgorithmOptions,
  scope: OptionScope = { subject: 'limiter', name: 'limits', path: 'adaptive.' },
): LimitAlgorithm {
  if (options === null || typeof options !== 'object')
    throw optionError(
      { ...scope, path: scope.path?.replace(/\.$/, '') },
      '',
      `must be an object of the algorithm and its bounds (or left out for Vegas's defaults), got ${shown(options)}`,
    );
  const read = new OptionReader(scope, options as object as Record<string, unknown>);
  const algorithm = read.get('algorithm', is.oneOf('aimd', 'gradient', 'vegas'), 'vegas') as AlgorithmName;
  const known = {
    aimd: keysOf<AimdOptions>({ algorithm: true, ...BOUNDS, tolerance: true, windowMs: true, probeEvery: true }),
    gradient: keysOf<GradientOptions>({
      algorithm: true,
      ...BOUNDS,
      windowMs: true,
      tolerance: true,
      longWindow: true,
      smoothing: true,
      probeEvery: true,
    }),
    vegas: keysOf<VegasOptions>({ algorithm: true, ...BOUNDS, windowMs: true, probeEvery: true, smoothing: true }),
  }[algorithm];
  read.only(known, `the options of the ${String(algorithm)} algorithm`);
  const min = read.get('min', is.whole(1), 1) as number;
  const max = read.get('max', is.whole(1), 1_000) as number;
  if (max < min) read.fail('max', `must be at least min (${min}), got ${max}`);
  const initial = read.get('initial', is.whole(1), Math.min(max, Math.max(min, 10))) as number;
  if (initial < min || initial > max)
    read.fail('initial', `must be within min and max (${min}–${max}), got ${initial}`);
  const bounds: Bounds = { min, max, initial, backoff: read.get('backoff', is.from(0.1, 1), 0.7) as number };
  const windowMs = read.get('windowMs', is.finiteAbove(0), 250) as number;
  const probeEvery = read.get('probeEvery', is.whole(1), 30) as number;
  if (algorithm === 'aimd') {
    const tolerance = read.get('tolerance', is.noted(is.atLeast(1), 'Infinity: only overloads cut'), 1.3) as number;
    return new AimdLimit(bounds, tolerance, windowMs, probeEvery);
  }
  if (algorithm === 'gradient') {
    return new GradientLimit(
      bounds,
      windowMs,
      read.get('tolerance', is.finiteAtLeast(1), 1.3) as number,
      read.get('longWindow', is.whole(1), 600) as number,
      read.get('smoothing', is.fraction, 0.2) as number,
      probeEvery,
    );
  }
  return new VegasLimit(bounds, windowMs, probeEvery, read.get('smoothing', is.fraction, 1) as number);
}

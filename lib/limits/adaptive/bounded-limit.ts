// What every algorithm of an adaptive limit is (LimitAlgorithm, fed LimitSamples) and shares: the
// bounds, the estimate behind the limit, one cut per round of calls; and, for the latency-based
// ones, the window of calls they move once per.
import { CallWindow, type ClosedWindow } from './call-window.js';
import type { NoLoadProbe } from './no-load-latency.js';

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
  /**
   * The cuts by `backoff` so far (for an overload, or a queue AIMD saw), one per round of calls. A
   * limit shared through Redis sends such a cut as a cut, for Redis to count once per round for the
   * fleet; any other move of the estimate is a step.
   */
  readonly cuts: number;
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
  /** Whether a probe of the latency without a queue is under way (the limit pinned low for it). */
  readonly probing: boolean;
  /**
   * Whether the limit still starts slowly (see WindowedLimit): no sign of a queue at the backend
   * yet, the limit below its max. A queue of callers behind it then is the limit's to drain by
   * growing, not a standing one (controlled waiting lets it be).
   */
  readonly starting: boolean;
  /** Shared through Redis: how long the fleet should pin the limit for a probe that began here, calls taking `latencyMs` (0: it has no probes). */
  fleetProbeMs(latencyMs: number): number;
  /** Shared through Redis: the fleet pinned the limit for `forMs` from `now`; a probe here measures meanwhile. */
  joinProbe(now: number, forMs: number): void;
  /** The latency without a queue its last probe measured, ms (NaN: none yet), and how many it measured. */
  readonly floor: { readonly ms: number; readonly count: number };
  /**
   * Shared through Redis: the fleet's last probe measured `ms` (another instance): taken as its own,
   * as if it had probed just now, when it has measured none itself.
   */
  adoptFloor(ms: number): void;
}

export interface Bounds {
  readonly min: number;
  readonly max: number;
  readonly initial: number;
  readonly backoff: number;
}

/** What every algorithm shares: the bounds, the estimate behind the limit, one cut per round. */
export abstract class BoundedLimit implements LimitAlgorithm {
  abstract readonly name: string;
  abstract readonly growth: 'call' | 'window';
  /** The estimate, fractional; the limit is its whole part. */
  estimate: number;
  cuts = 0;
  /** When the limit was last cut: calls admitted before it are of the same round. */
  #cutAt = -Infinity;

  constructor(protected readonly bounds: Bounds) {
    this.estimate = bounds.initial;
  }

  /** While a probe runs (no-load-latency.ts), the limit is pinned low: calls then meet no queue at the backend. */
  protected probe: NoLoadProbe | undefined = undefined;

  get limit(): number {
    const limit = Math.floor(this.estimate);
    return this.probe?.running === true ? Math.min(limit, this.probe.pin) : limit;
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

  get probing(): boolean {
    return this.probe?.running === true;
  }

  get starting(): boolean {
    return false;
  }

  fleetProbeMs(latencyMs: number): number {
    return this.probe?.fleetMs(latencyMs) ?? 0;
  }

  joinProbe(now: number, forMs: number): void {
    this.probe?.join(now, forMs);
  }

  #floor = { ms: NaN, count: 0 };

  get floor(): { readonly ms: number; readonly count: number } {
    return this.#floor;
  }

  adoptFloor(ms: number): void {
    if (this.probe === undefined || this.#floor.count > 0 || !(ms > 0) || ms === Infinity) return;
    this.probe.adopted();
    this.probed(ms);
  }

  /** A probe measured the latency without a queue, ms: what the algorithm keeps of it, and the floor. */
  protected measured(ms: number): void {
    this.#floor = { ms, count: this.#floor.count + 1 };
    this.probed(ms);
  }

  /** The latency without a queue is `ms` (a probe, or the fleet's): the algorithm takes it. */
  protected probed(_ms: number): void {}

  sample(s: LimitSample): number {
    const duration = s.durationMs;
    if (!(duration >= 0) || duration === Infinity || !(s.inflight >= 0) || !Number.isFinite(s.startedAt))
      return this.limit;
    if (s.outcome === 'overload') {
      this.backOff(s.startedAt, s.startedAt + duration);
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

  /**
   * Cuts by `backoff` for a call admitted at `startedAt` that ended at `endedAt`, unless this
   * round was cut already: calls admitted before the last cut belong to it.
   */
  protected backOff(startedAt: number, endedAt: number): void {
    if (startedAt < this.#cutAt) return;
    this.#cutAt = endedAt;
    this.#set(this.estimate * this.bounds.backoff);
    this.cuts++;
    this.cut();
  }

  /** When the limit was last cut (-Infinity: never). */
  protected get cutAt(): number {
    return this.#cutAt;
  }

  /** The limit was cut (an algorithm may reset what it measured). */
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

/**
 * A limit moved once per window of successes, on the window's mean latency and the most calls in
 * flight in it: one slow call, or a burst of them, moves it no more than a window's worth.
 */
export abstract class WindowedLimit extends BoundedLimit {
  readonly growth = 'window';
  protected readonly calls: CallWindow;

  constructor(bounds: Bounds, windowMs: number) {
    super(bounds);
    this.calls = new CallWindow(windowMs);
  }

  protected next(durationMs: number, inflight: number, endedAt: number): number {
    const probe = this.probe;
    if (probe?.running === true) {
      // The limit is pinned for a probe: its calls measure the latency without a queue, not the limit.
      const measured = probe.call(durationMs, inflight, endedAt);
      if (!probe.running) {
        if (measured !== undefined) this.measured(measured);
        this.calls.reset();
      }
      return this.estimate;
    }
    const closed = this.calls.add(durationMs, inflight, endedAt);
    return closed === undefined ? this.estimate : this.#started(closed, this.window(closed));
  }

  /**
   * Until the first sign of a queue at the backend (a window the algorithm does not grow from, or
   * a cut), the limit starts slowly as TCP does: where the algorithm grows from a window in which
   * the limit bound the calls, it at least doubles. A cold limit below the demand would otherwise
   * keep callers queued for seconds, its growth a step per window, and a queue that stands that
   * long is shed (controlled waiting), at a fraction of the capacity.
   */
  #started(closed: ClosedWindow, next: number): number {
    if (!this.starting) return next;
    const estimate = this.estimate;
    if (next < estimate) this.#starting = false;
    else if (next > estimate && closed.inflight >= this.limit) return Math.max(next, 2 * estimate);
    return next;
  }

  #starting = true;

  override get starting(): boolean {
    if (this.#starting && (this.cuts > 0 || this.estimate >= this.bounds.max)) this.#starting = false;
    return this.#starting;
  }

  /** A window closed: the estimate after it. */
  protected abstract window(closed: ClosedWindow): number;

  protected override cut(): void {
    // What the window held was measured at the old limit.
    this.calls.reset();
  }
}

/** An exponential moving average over about `window` values. */
export class Average {
  value = NaN;
  constructor(private readonly window: number) {}
  add(x: number): number {
    this.value = Number.isNaN(this.value) ? x : this.value + (x - this.value) * (2 / (this.window + 1));
    return this.value;
  }
}

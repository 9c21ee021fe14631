import { BoundedLimit, type Bounds } from './bounded-limit.js';
import { BackendLatency, NoLoadProbe } from './no-load-latency.js';

/** Calls the latency without a queue averages over, as the gradient's default. */
const LONG_WINDOW = 600;
/** Calls since the last cut before their mean may say a queue builds: one slow call alone is no queue. */
const MIN_CALLS = 10;
/** Growth slows from this share of the limit where a queue was last seen. */
const KNEE_APPROACH = 0.9;

export class AimdLimit extends BoundedLimit {
  readonly name = 'aimd';
  readonly growth = 'call';
  readonly #latency = new BackendLatency(LONG_WINDOW);
  protected override readonly probe: NoLoadProbe | undefined;
  /** The mean latency of about the last limit's worth of calls (NaN: none since the last cut), and how many calls it has seen. */
  #recent = NaN;
  #count = 0;
  /** The limit when a queue was last seen building (Infinity: never): growth slows near it. */
  #knee = Infinity;

  /** `tolerance`: the recent calls' mean past this × the latency without a queue is a queue building (Infinity: overloads only cut). */
  constructor(
    bounds: Bounds,
    private readonly tolerance: number,
    windowMs: number,
    probeEvery: number,
  ) {
    super(bounds);
    this.probe = tolerance === Infinity ? undefined : new NoLoadProbe(bounds.min, probeEvery, windowMs);
  }

  protected next(durationMs: number, inflight: number, endedAt: number): number {
    const probe = this.probe;
    const latency = this.#latency;
    if (probe?.running === true) {
      // The probe's calls run at the pin, not at the limit: they test no limit, so none grows from them.
      const measured = probe.call(durationMs, inflight, endedAt);
      if (measured !== undefined) this.measured(measured);
      return this.estimate;
    } else if (probe !== undefined && endedAt - durationMs >= this.cutAt) {
      // Calls admitted before the last cut were admitted at the old limit: their latency says nothing of the new one.
      if (latency.learning || this.appLimited(inflight)) {
        latency.call(durationMs);
        this.#forget(); // a queue builds afresh from here
      } else if (this.#queue(durationMs)) {
        const at = this.estimate;
        this.backOff(endedAt - durationMs, endedAt);
        if (this.estimate < at) this.#knee = at;
        return this.estimate;
      }
      if (probe.tick(this.limit, endedAt)) return this.estimate;
    }
    return this.#grow(inflight);
  }

  /** Whether a call that tested the limit, with those before it, shows a queue building. */
  #queue(durationMs: number): boolean {
    // The mean of about a limit's worth of calls (a round trip's, 20 at least) past the tolerance,
    // by twice what chance alone moves such a mean on this backend (from how widely its calls vary
    // without a queue; the spread of calls in a queue is no measure of chance, it is the queue). A
    // call counts for at most twice the tolerance: one call of a long tail is no queue.
    const weight = 2 / (Math.max(20, this.limit) + 1);
    const bound = this.tolerance * this.#latency.value;
    const counted = Math.min(durationMs, 2 * bound);
    this.#recent = Number.isNaN(this.#recent) ? counted : this.#recent + (counted - this.#recent) * weight;
    if (++this.#count < MIN_CALLS) return false;
    const error = this.#latency.spread * Math.sqrt(weight / (2 - weight));
    return this.#recent - 2 * error > bound;
  }

  protected override probed(ms: number): void {
    this.#latency.probed(ms);
  }

  /** A success counts whether it was timed or not. */
  protected override untimed(inflight: number): number {
    return this.probe?.running === true ? this.estimate : this.#grow(inflight);
  }

  protected override cut(): void {
    this.#forget();
  }

  #forget(): void {
    this.#recent = NaN;
    this.#count = 0;
  }

  #grow(inflight: number): number {
    if (this.appLimited(inflight)) return this.estimate;
    // One more per limit's worth of successes, as TCP's congestion avoidance; half of that
    // near where a queue was last seen, as CUBIC slows near its last loss. A queue is seen only
    // some calls after the limit passed the knee (they end a latency later, and their mean is
    // over a limit's worth of them): the slower the growth there, the less it overshoots, and the
    // shorter the queue each cut follows. Past the knee by a little, the capacity may have grown:
    // full speed again.
    const estimate = this.estimate;
    const knee = this.#knee;
    const slow = estimate >= KNEE_APPROACH * knee && estimate < knee + 1;
    return estimate + (slow ? 0.5 : 1) / Math.max(1, this.limit);
  }
}

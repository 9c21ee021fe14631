import { BoundedLimit, type Bounds } from './bounded-limit.js';
import { BackendLatency, NoLoadProbe } from './no-load-latency.js';

/** Calls the latency without a queue averages over, as the gradient's default. */
const LONG_WINDOW = 600;

export class AimdLimit extends BoundedLimit {
  readonly name = 'aimd';
  readonly growth = 'call';
  readonly #latency = new BackendLatency(LONG_WINDOW);
  protected override readonly probe: NoLoadProbe | undefined;
  /** The mean latency of about the last limit's worth of calls, and its variance (NaN: none since the last cut). */
  #recent = NaN;
  #variance = 0;

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
      const measured = probe.call(durationMs, inflight, endedAt);
      if (measured !== undefined) latency.probed(measured);
    } else if (probe !== undefined && endedAt - durationMs >= this.cutAt) {
      // Calls admitted before the last cut were admitted at the old limit: their latency says nothing of the new one.
      if (latency.learning || this.appLimited(inflight)) {
        latency.call(durationMs);
        this.#recent = NaN;
      } else if (this.#queue(durationMs)) {
        this.backOff(endedAt - durationMs, endedAt);
        return this.estimate;
      }
      if (probe.tick(this.limit, endedAt)) return this.estimate;
    }
    return this.#grow(inflight);
  }

  /** Whether a call that tested the limit, with those before it, shows a queue building. */
  #queue(durationMs: number): boolean {
    // Over about a limit's worth of calls (a round trip's, 20 at least), with how far that mean may
    // be off by chance alone: one slow call, or a backend whose calls vary widely, is no queue.
    const weight = 2 / (Math.max(20, this.limit) + 1);
    if (Number.isNaN(this.#recent)) {
      this.#recent = durationMs;
      this.#variance = 0;
    } else {
      const delta = durationMs - this.#recent;
      this.#recent += delta * weight;
      this.#variance = (1 - weight) * (this.#variance + weight * delta * delta);
    }
    const error = Math.sqrt((this.#variance * weight) / (2 - weight));
    return this.#recent - error > this.tolerance * this.#latency.value;
  }

  /** A success counts whether it was timed or not. */
  protected override untimed(inflight: number): number {
    return this.#grow(inflight);
  }

  protected override cut(): void {
    this.#recent = NaN;
  }

  #grow(inflight: number): number {
    if (this.appLimited(inflight)) return this.estimate;
    // One more per limit's worth of successes, as TCP's congestion avoidance.
    return this.estimate + 1 / Math.max(1, this.limit);
  }
}

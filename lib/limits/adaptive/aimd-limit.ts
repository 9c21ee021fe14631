import { BoundedLimit, type Bounds } from './bounded-limit.js';
import { BackendLatency, NoLoadProbe, PROBE_CONCURRENCY } from './no-load-latency.js';

/** What AIMD reads of latency: the recent calls' mean past `tolerance` × the latency without a queue is a queue building. `windowMs`: the unit its probes are timed in. */
export interface AimdLatency {
  readonly tolerance: number;
  readonly windowMs: number;
  readonly longWindow: number;
  readonly probeEvery: number;
}

export class AimdLimit extends BoundedLimit {
  readonly name = 'aimd';
  readonly growth = 'call';
  readonly #latency: BackendLatency;
  readonly #tolerance: number;
  protected override readonly probe: NoLoadProbe | undefined;
  /** The mean latency of about the last limit's worth of calls (NaN: none since the last cut). */
  #recent = NaN;
  #variance = 0;
  /** Calls admitted before this were admitted at a limit since cut: their latency says nothing of the new one. */
  #since = -Infinity;
  #windowEnd = -Infinity;
  readonly #windowMs: number;

  constructor(bounds: Bounds, latency: AimdLatency) {
    super(bounds);
    this.#tolerance = latency.tolerance;
    this.#windowMs = latency.windowMs;
    this.#latency = new BackendLatency(latency.longWindow);
    this.probe =
      latency.tolerance === Infinity
        ? undefined
        : new NoLoadProbe(Math.max(bounds.min, PROBE_CONCURRENCY), latency.probeEvery, latency.windowMs);
  }

  protected next(durationMs: number, inflight: number, endedAt: number): number {
    const probe = this.probe;
    if (probe === undefined) return this.#grow(inflight);
    if (probe.running) {
      const measured = probe.call(durationMs, inflight, endedAt);
      if (measured !== undefined) this.#latency.probed(measured);
      return this.#grow(inflight);
    }
    if (endedAt - durationMs < this.#since) return this.#grow(inflight);
    const latency = this.#latency;
    if (latency.learning || this.appLimited(inflight)) {
      latency.call(durationMs);
      this.#recent = NaN;
      return this.#grow(inflight);
    }
    // Over about a limit's worth of calls (a round trip's, 20 at least), with how far that mean may
    // be off by chance alone: one slow call, or a backend whose calls vary widely, is no queue.
    const weight = 2 / (Math.max(20, this.limit) + 1);
    let recent = durationMs;
    if (Number.isNaN(this.#recent)) this.#variance = 0;
    else {
      const delta = durationMs - this.#recent;
      recent = this.#recent + delta * weight;
      this.#variance = (1 - weight) * (this.#variance + weight * delta * delta);
    }
    this.#recent = recent;
    const error = Math.sqrt((this.#variance * weight) / (2 - weight));
    if (recent - error > this.#tolerance * latency.value) {
      // A queue building: cut as for an overload, one cut per round.
      this.cut(endedAt);
      return this.estimate * this.bounds.backoff;
    }
    // Time for a probe? Counted in windows of time, as the windowed algorithms count theirs.
    if (endedAt >= this.#windowEnd) {
      this.#windowEnd = endedAt + this.#windowMs;
      if (probe.due(this.limit, endedAt)) return this.estimate;
    }
    return this.#grow(inflight);
  }

  /** A success counts whether it was timed or not. */
  protected override untimed(inflight: number): number {
    return this.#grow(inflight);
  }

  protected override cut(at: number): void {
    this.#since = at;
    this.#recent = NaN;
  }

  #grow(inflight: number): number {
    if (this.appLimited(inflight)) return this.estimate;
    // One more per limit's worth of successes, as TCP's congestion avoidance.
    return this.estimate + 1 / Math.max(1, this.limit);
  }
}

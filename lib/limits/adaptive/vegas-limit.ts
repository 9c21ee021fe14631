import { WindowedLimit, type Bounds } from './bounded-limit.js';
import type { ClosedWindow } from './call-window.js';
import { NoLoadProbe } from './no-load-latency.js';

export class VegasLimit extends WindowedLimit {
  readonly name = 'vegas';
  /**
   * The backend's latency with no queue: the least of window latencies smoothed over a few
   * windows (the least of raw window means is biased low by their noise: long, varied calls, few
   * per window). Under load it can only go down: a window measured with a queue never raises it,
   * or the queue Vegas keeps would become the new floor, and the limit would ratchet up with it.
   * It goes up only from a probe, measured with the limit pinned low.
   */
  #noLoad = Infinity;
  #smoothed = NaN;
  /**
   * Windows still to skip at the start: the first ones hold only the calls that ended soonest,
   * the shortest, so their latency is below the backend's true one.
   */
  #warmup = 2;
  protected override readonly probe: NoLoadProbe;

  constructor(
    bounds: Bounds,
    windowMs: number,
    probeEvery: number,
    private readonly smoothing: number,
  ) {
    super(bounds, windowMs);
    this.probe = new NoLoadProbe(bounds.min, probeEvery, windowMs);
  }

  protected override probed(ms: number): void {
    this.#noLoad = this.#smoothed = ms;
  }

  protected window({ meanMs: rtt, inflight, errorMs, endedAt }: ClosedWindow): number {
    if (this.#warmup > 0) {
      this.#warmup--;
      return this.estimate;
    }
    this.#smoothed = Number.isNaN(this.#smoothed) ? rtt : this.#smoothed + (rtt - this.#smoothed) * 0.25;
    // Measure the no-load latency again now and then: the backend may have got faster or slower for good.
    if (this.probe.due(this.limit, endedAt)) return this.estimate;
    if (this.#smoothed < this.#noLoad) {
      // A lower floor: the latency is at it, so there is no queue, and the rule below says grow.
      // Only the first has nothing to compare with.
      const first = this.#noLoad === Infinity;
      this.#noLoad = this.#smoothed;
      if (first) return this.estimate;
    }
    if (this.appLimited(inflight)) return this.estimate;
    const limit = this.estimate;
    // Latency above the floor by less than chance explains (its standard error) is no queue.
    const queue = limit * Math.max(0, 1 - this.#noLoad / Math.max(this.#noLoad, rtt - errorMs));
    const log = Math.max(1, Math.log10(limit));
    // Netflix's bounds, α and β, in calls; below a limit of about 24 a share of it is less, and a
    // small backend's queue (12 at once: 5 calls is a wait of 40 % of a call) costs its p99 the most.
    const alpha = Math.min(3 * log, 0.2 * limit);
    const beta = Math.min(6 * log, 0.35 * limit);
    let target: number;
    if (queue <= log)
      target = limit + 6 * log; // no queue: grow fast
    else if (queue < alpha) target = limit + log;
    else if (queue > 10 * log)
      target = limit - queue + 3 * log; // far past the knee (capacity fell): straight back to a short queue
    else if (queue > beta) target = limit - log;
    else return this.estimate; // between α and β: hold
    return limit * (1 - this.smoothing) + target * this.smoothing;
  }
}

import { WindowedLimit, type Bounds } from './bounded-limit.js';

/** Concurrency at which Vegas measures the no-load latency again: low enough that no backend queues. */
const PROBE_CONCURRENCY = 3;
/** Successes a probe takes its measure from. */
const PROBE_SAMPLES = 20;

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
  #sinceProbe = 0;
  /** Whether a probe ran yet: the first comes early, in case the limit started past the knee. */
  #probed = false;
  /**
   * Windows still to skip at the start: the first ones hold only the calls that ended soonest,
   * the shortest, so their latency is below the backend's true one.
   */
  #warmup = 2;
  /** When the probe under way pinned the limit (NaN: none), and what it measured so far. */
  #pinnedAt = NaN;
  #probeSum = 0;
  #probeCount = 0;
  /** The end of the last call seen, on the limit's clock. */
  #now = 0;

  constructor(
    bounds: Bounds,
    windowMs: number,
    private readonly probeEvery: number,
    private readonly smoothing: number,
  ) {
    super(bounds, windowMs);
  }

  /** While a probe runs, the limit is pinned low: calls then meet no queue at the backend. */
  override get limit(): number {
    const limit = super.limit;
    return Number.isNaN(this.#pinnedAt) ? limit : Math.min(limit, this.#pin());
  }

  #pin(): number {
    return Math.max(this.bounds.min, PROBE_CONCURRENCY);
  }

  protected override next(durationMs: number, inflight: number, endedAt: number): number {
    this.#now = endedAt;
    if (Number.isNaN(this.#pinnedAt)) return super.next(durationMs, inflight, endedAt);
    // Only calls admitted during the probe, at the pinned concurrency, measure the latency without a queue.
    if (endedAt - durationMs >= this.#pinnedAt && inflight <= this.#pin()) {
      this.#probeSum += durationMs;
      this.#probeCount++;
    }
    if (this.#probeCount >= PROBE_SAMPLES) {
      this.#noLoad = this.#smoothed = this.#probeSum / this.#probeCount;
      this.#endProbe();
    } else if (endedAt - this.#pinnedAt > 4 * this.windowMs) this.#endProbe(); // too few calls to measure: try again later
    return this.estimate;
  }

  #endProbe(): void {
    this.#probed = true;
    this.#pinnedAt = NaN;
    this.#probeSum = 0;
    this.#probeCount = 0;
    this.#sinceProbe = 0;
    this.resetWindow();
  }

  protected window(rtt: number, inflight: number, errorMs: number): number {
    if (this.#warmup > 0) {
      this.#warmup--;
      return this.estimate;
    }
    this.#smoothed = Number.isNaN(this.#smoothed) ? rtt : this.#smoothed + (rtt - this.#smoothed) * 0.25;
    // Measure the no-load latency again now and then, with the limit pinned low: the backend may
    // have got faster or slower for good.
    if (++this.#sinceProbe >= this.probeEvery * (this.#probed ? this.limit : 1)) {
      this.#pinnedAt = this.#now;
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

// The backend's latency without a queue: what every latency-reading algorithm measures a queue
// against. Under sustained load no call meets an idle backend, and a limit that took the latency
// it keeps for the norm would let the queue grow by its tolerance again and again: a ratchet.
// So calls that tested the limit never raise it; it goes up only from calls that met no queue of
// the limit's making, and from a probe: now and then the limit is pinned low for the few calls it
// takes to measure the backend without a queue (as Envoy's gradient controller does).

/** Concurrency at which a probe measures: low enough that no backend queues. */
const PROBE_CONCURRENCY = 3;
/** Successes a probe takes its measure from. */
const PROBE_SAMPLES = 20;
/** The fewest a probe in a fleet's pin measures from: the pin's few calls at once go round every instance. */
const FLEET_SAMPLES = 5;

/**
 * Pins the limit low now and then to measure the latency without a queue: the first time after
 * `every` windows (in case the limit started past the knee), then every `every` × limit windows.
 */
export class NoLoadProbe {
  /** When the probe under way pinned the limit (NaN: none), and when it gives up for too few calls. */
  #pinnedAt = NaN;
  #givesUpAt = NaN;
  /** The fewest calls it measures from by the time it would give up. */
  #least = PROBE_SAMPLES;
  /** When the last fleet's pin it joined ends. */
  #pinEnds = -Infinity;
  #sum = 0;
  #count = 0;
  #windows = 0;
  #probed = false;
  /** For an algorithm without windows of calls: when the window of time under way ends. */
  #windowEnd = -Infinity;
  /** The limit while a probe runs: 3, or the least the limit may be. */
  readonly pin: number;

  constructor(
    min: number,
    private readonly every: number,
    private readonly windowMs: number,
  ) {
    this.pin = Math.max(min, PROBE_CONCURRENCY);
  }

  get running(): boolean {
    return !Number.isNaN(this.#pinnedAt);
  }

  /** A window closed with the limit at `limit`: whether a probe begins now (then the window says nothing). */
  due(limit: number, now: number): boolean {
    if (++this.#windows < this.every * (this.#probed ? limit : 1)) return false;
    this.#begin(now, 4 * this.windowMs);
    return true;
  }

  /**
   * A fleet sharing the limit through Redis pinned it for `forMs` from `now` (another instance
   * asked, or this one): a probe here measures too, until then at least. One under way goes on.
   */
  join(now: number, forMs: number): void {
    const ends = now + forMs;
    if (this.running) this.#givesUpAt = Math.max(this.#givesUpAt, ends);
    else if (ends > this.#pinEnds + this.windowMs) this.#begin(now, forMs);
    else return; // the pin it measured in already: every answer meanwhile tells of it
    this.#pinEnds = ends;
    this.#least = FLEET_SAMPLES;
  }

  /**
   * How long a fleet should pin a shared limit for a probe: as long as one instance's probe takes
   * alone (PROBE_SAMPLES calls of `latencyMs`, the pin's worth at once, half again for chance; 4
   * windows at least, 10 s at most), so that the fleet pays what one instance would. Its calls go
   * round the instances, each of which measures from those it gets (FLEET_SAMPLES at least).
   */
  fleetMs(latencyMs: number): number {
    const needed = (1.5 * PROBE_SAMPLES * latencyMs) / this.pin;
    return Math.ceil(Math.min(10_000, Math.max(4 * this.windowMs, Number.isFinite(needed) ? needed : 0)));
  }

  /** Another instance of the fleet measured: as if this one had, just now. */
  adopted(): void {
    if (!this.running) this.#end();
  }

  #begin(now: number, forMs: number): void {
    this.#pinnedAt = now;
    this.#givesUpAt = now + forMs;
    this.#least = PROBE_SAMPLES;
  }

  /** A call ended `now`, for an algorithm without windows of calls: windows of `windowMs` of time count instead. */
  tick(limit: number, now: number): boolean {
    if (now < this.#windowEnd) return false;
    this.#windowEnd = now + this.windowMs;
    return this.due(limit, now);
  }

  /**
   * A call ended while the probe runs: the mean latency it measured once it has enough calls;
   * undefined while it goes on, or if it gave up (too few calls came; then it no longer runs).
   */
  call(durationMs: number, inflight: number, endedAt: number): number | undefined {
    // Only calls admitted during the probe, at the pinned concurrency, measure the latency without a queue.
    if (endedAt - durationMs >= this.#pinnedAt && inflight <= this.pin) {
      this.#sum += durationMs;
      this.#count++;
    }
    if (this.#count >= PROBE_SAMPLES || (endedAt > this.#givesUpAt && this.#count >= this.#least)) {
      const mean = this.#sum / this.#count;
      this.#end();
      return mean;
    }
    if (endedAt > this.#givesUpAt) this.#end(); // too few calls to measure: try again later
    return undefined;
  }

  #end(): void {
    this.#probed = true;
    this.#pinnedAt = this.#givesUpAt = NaN;
    this.#sum = 0;
    this.#count = 0;
    this.#windows = 0;
  }
}

/**
 * The latency without a queue as the gradient and AIMD keep it: an average over the last `calls`
 * calls that met no queue of the limit's making (calls admitted with fewer in flight than half
 * the limit, and the very first calls, before anything is known), lowered by calls that tested the
 * limit when their mean is lower, set by a probe.
 */
export class BackendLatency {
  /** ms; NaN until the first call. */
  value = NaN;
  #variance = 0;
  #seen = 0;
  readonly #weight: number;

  constructor(calls: number) {
    this.#weight = 2 / (calls + 1);
  }

  /** Whether it still takes any call: it knows too little to tell a queue. */
  get learning(): boolean {
    return this.#seen < 10;
  }

  /** A call that met no queue of the limit's making. */
  call(durationMs: number): void {
    this.#seen++;
    // A plain mean of the first calls, then an exponential average over about `calls` of them.
    const weight = Math.max(this.#weight, 1 / this.#seen);
    if (Number.isNaN(this.value)) {
      this.value = durationMs;
      return;
    }
    const delta = durationMs - this.value;
    this.value += delta * weight;
    this.#variance = (1 - weight) * (this.#variance + weight * delta * delta);
  }

  /** How widely single calls without a queue vary: their standard deviation, ms (0 until two calls). */
  get spread(): number {
    return Math.sqrt(this.#variance);
  }

  /** The mean latency of `calls` calls that tested the limit: it can only lower the value, by as much as they weigh. */
  lower(meanMs: number, calls: number): void {
    if (!(meanMs < this.value)) return;
    this.value += (meanMs - this.value) * (1 - (1 - this.#weight) ** calls);
  }

  /** A probe measured it (here or, shared, in the fleet): no longer learning from any call. */
  probed(ms: number): void {
    this.value = ms;
    this.#seen = Math.max(this.#seen, 10);
  }
}

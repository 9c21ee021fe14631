// Successes gathered into windows: the latency-based algorithms move, or measure, once per window
// of calls, on its mean latency, not on any one call.

/** A window of calls, closed: what the latency-based algorithms read. */
export interface ClosedWindow {
  /** The mean latency of its calls, ms (at least 0.001). */
  readonly meanMs: number;
  /** The standard error of that mean: how far it may be off by chance alone, ms. */
  readonly errorMs: number;
  /** The most calls in flight any of its calls was admitted with. */
  readonly inflight: number;
  readonly calls: number;
  /** When its last call ended. */
  readonly endedAt: number;
}

/** Successes gathered into windows of at least `windowMs` and 10 calls. */
export class CallWindow {
  #start = NaN;
  #count = 0;
  #sum = 0;
  #squares = 0;
  #inflight = 0;

  constructor(readonly windowMs: number) {}

  /** A success: the window it closed, if it closed one. */
  add(durationMs: number, inflight: number, endedAt: number): ClosedWindow | undefined {
    if (Number.isNaN(this.#start) || endedAt < this.#start) this.#start = endedAt; // a clock that went back starts a new window
    this.#count++;
    this.#sum += durationMs;
    this.#squares += durationMs * durationMs;
    if (inflight > this.#inflight) this.#inflight = inflight;
    if (this.#count < 10 || endedAt - this.#start < this.windowMs) return undefined;
    const calls = this.#count;
    const mean = this.#sum / calls;
    const errorMs = Math.sqrt(Math.max(0, this.#squares / calls - mean * mean) / calls);
    const closed = { meanMs: Math.max(mean, 0.001), errorMs, inflight: this.#inflight, calls, endedAt };
    this.reset();
    this.#start = endedAt;
    return closed;
  }

  /** Starts the next window afresh. */
  reset(): void {
    this.#start = NaN;
    this.#count = 0;
    this.#sum = 0;
    this.#squares = 0;
    this.#inflight = 0;
  }
}

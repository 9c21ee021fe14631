import { Average, WindowedLimit, type Bounds } from './bounded-limit.js';

export class GradientLimit extends WindowedLimit {
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

import { WindowedLimit, type Bounds } from './bounded-limit.js';
import type { ClosedWindow } from './call-window.js';
import { BackendLatency, NoLoadProbe } from './no-load-latency.js';

export class GradientLimit extends WindowedLimit {
  readonly name = 'gradient';
  /** The long-term latency: over the last `longWindow` calls that met no queue (no-load-latency.ts). */
  readonly #long: BackendLatency;
  protected override readonly probe: NoLoadProbe;

  constructor(
    bounds: Bounds,
    windowMs: number,
    private readonly tolerance: number,
    longWindow: number,
    private readonly smoothing: number,
    probeEvery: number,
  ) {
    super(bounds, windowMs);
    this.#long = new BackendLatency(longWindow);
    this.probe = new NoLoadProbe(bounds.min, probeEvery, windowMs);
  }

  protected override next(durationMs: number, inflight: number, endedAt: number): number {
    if (!this.probe.running && (this.#long.learning || this.appLimited(inflight))) this.#long.call(durationMs);
    return super.next(durationMs, inflight, endedAt);
  }

  protected override probed(ms: number): void {
    this.#long.probed(ms);
  }

  protected window(closed: ClosedWindow): number {
    if (this.probe.due(this.limit, closed.endedAt)) return this.estimate;
    this.#long.lower(closed.meanMs + closed.errorMs, closed.calls);
    if (this.appLimited(closed.inflight)) return this.estimate;
    const estimate = this.estimate;
    // Latency above the long-term one by less than chance explains is no queue: a window must be
    // past the tolerance by two standard errors of its mean (one in 40 by chance alone). With
    // calls whose times vary widely (exponential), one error let chance cut a limit far below the
    // knee, window after window, down to its least.
    const short = Math.max(0.001, closed.meanMs - 2 * closed.errorMs);
    const gradient = (this.tolerance * this.#long.value) / short;
    // Within the tolerance: room to grow, smoothly. Past it: down at once, in proportion (a queue is
    // building, and the limit that would bring latency back within it is this much lower).
    if (gradient >= 1) return estimate + Math.sqrt(estimate) * this.smoothing;
    return estimate * Math.max(0.5, gradient);
  }
}

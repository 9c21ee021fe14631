import { BoundedLimit } from './bounded-limit.js';

export class AimdLimit extends BoundedLimit {
  readonly name = 'aimd';
  readonly growth = 'call';

  protected next(_durationMs: number, inflight: number): number {
    if (this.appLimited(inflight)) return this.estimate;
    // One more per limit's worth of successes, as TCP's congestion avoidance.
    return this.estimate + 1 / Math.max(1, this.limit);
  }

  /** A success counts whether it was timed or not: AIMD never reads its latency. */
  protected override untimed(inflight: number): number {
    return this.next(0, inflight);
  }
}

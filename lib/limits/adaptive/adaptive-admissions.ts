import type { Admission, CallResult } from '../../core/index.js';
import type { Learner } from '../local/index.js';

// The admissions an AdaptiveLimiter hands out in place of its inner limiter's: they pass the
// inner one through and tell the limiter how the call ended.

/** An admission that passes the limiter's own through, and hears how its call ended. */
abstract class WrappedAdmission implements Admission {
  constructor(readonly inner: Admission) {}

  get id(): string {
    return this.inner.id;
  }

  get signal(): AbortSignal {
    return this.inner.signal;
  }

  get fence(): number | undefined {
    return this.inner.fence;
  }

  expire(why: string): void {
    this.inner.expire?.(why);
  }

  release(): void {
    this.inner.release();
  }

  abstract ended(result: CallResult): void;
}

/** The admission of a probe through a pause: it tells the limiter how the probe ended, once, however it ends. */
export class ProbeAdmission extends WrappedAdmission {
  #told = false;

  constructor(
    inner: Admission,
    readonly told: (result: CallResult | undefined) => void,
  ) {
    super(inner);
  }

  ended(result: CallResult): void {
    this.inner.ended?.(result);
    this.#tell(result);
  }

  override release(): void {
    super.release();
    this.#tell(undefined);
  }

  #tell(result: CallResult | undefined): void {
    if (this.#told) return;
    this.#told = true;
    this.told(result);
  }
}

/** An admission of an {@link AdaptiveLimiter} shared through Redis: the inner one, and when and at what load it began. One small object, no closure. */
export class TrackedAdmission extends WrappedAdmission {
  #told = false;

  constructor(
    inner: Admission,
    readonly learner: Learner,
    readonly startedAt: number,
    readonly inflight: number,
  ) {
    super(inner);
  }

  ended(result: CallResult): void {
    if (this.#told) return;
    this.#told = true;
    this.learner.learn(result, this.startedAt, true, this.inflight, this.inner.fence);
  }
}

// One caller of a limiter on virtual time, holding its slot a while once admitted: what became of
// it and when. The limiter specs drive queues with many of them.
import type { Admission, AdmissionLimiter, AdmissionRequest, CapacityExceededError } from '../../lib/index.js';
import type { VirtualClock } from './virtual-clock.js';

/** What became of one caller. */
export interface Outcome {
  /** When it asked. */
  readonly arrived: number;
  /** When it was admitted or refused; NaN while it waits. */
  at: number;
  admitted: boolean;
  /** The refusal's reason and message. */
  reason?: string;
  message?: string;
}

/**
 * Asks `limiter` for a slot within `timeoutMs` (`ask`: more of the request, such as its class);
 * once admitted, holds it `holdMs`, tells the limiter the call succeeded, and gives it back.
 */
export function heldAdmission(
  limiter: AdmissionLimiter,
  clock: VirtualClock,
  holdMs: number,
  timeoutMs: number,
  ask: Partial<AdmissionRequest> = {},
): Outcome {
  const outcome: Outcome = { arrived: clock.now(), at: NaN, admitted: false };
  limiter.admit({ pool: 'api', timeoutMs, ...ask }).then(
    (admission: Admission) => {
      Object.assign(outcome, { at: clock.now(), admitted: true });
      clock.setTimeout(() => {
        admission.ended?.({ ok: true, value: undefined }); // an adaptive limit learns from it, as from a pool's call
        admission.release();
      }, holdMs);
    },
    (err: CapacityExceededError) =>
      Object.assign(outcome, { at: clock.now(), reason: err.reason, message: err.message }),
  );
  return outcome;
}

import { CapacityExceededError, ConnectionsExhaustedError, KeyLimitError, QueueFullError } from './errors.js';

/**
 * An error that says a call was not served, and none of its work ran: refused by a limit
 * ({@link CapacityExceededError}, {@link KeyLimitError}), by the pool's queue
 * ({@link QueueFullError}), or given no connection by its deadline
 * ({@link ConnectionsExhaustedError}). Safe to hand the work elsewhere (a job queue) or to retry
 * it later; `@UsePooled`'s `onRefused` receives one.
 */
export type RefusalError = CapacityExceededError | KeyLimitError | QueueFullError | ConnectionsExhaustedError;

/** Whether `error` is a {@link RefusalError}. */
export function isRefusal(error: unknown): error is RefusalError {
  return (
    error instanceof CapacityExceededError ||
    error instanceof KeyLimitError ||
    error instanceof QueueFullError ||
    error instanceof ConnectionsExhaustedError
  );
}

/**
 * When a refused call may be tried again, in ms: its error's `retryAfterMs` (what `Retry-After`
 * says over HTTP), or a second for one given no connection by its deadline. A job queue's delay.
 */
export function retryAfterOf(error: RefusalError): number {
  return error instanceof ConnectionsExhaustedError ? 1_000 : error.retryAfterMs;
}

/**
 * The project's one backoff: `firstMs` after the first failure, doubled per failure after it, at
 * most `maxMs`. Pool creates, `use()` retries and the Redis limiter's reconnects all use it.
 */
export function backoffMs(failures: number, firstMs: number, maxMs: number): number {
  return Math.min(firstMs * 2 ** Math.max(0, failures - 1), maxMs);
}

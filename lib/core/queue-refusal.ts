import { PoolClosedError, QueueFullError, SelfDeadlockError } from './errors.js';
import type { ReportedPool } from './pool-report.js';
import { scopeLeases } from './pool-use.js';

/**
 * Why a caller may not queue, if it may not: the pool closed, its signal aborted, the breaker of
 * failing creates is open (see `blockingPeriod`), the queue is full, or the caller's own `use()`
 * scopes hold every slot it could ever get (it would wait for itself). `scopesLive`: use() scopes
 * of the pool running now; only then can a caller deadlock on its own lease.
 */
export function queueRefusal(pool: ReportedPool & { readonly pool: object }, scopesLive: number, signal: AbortSignal | undefined): unknown {
  const o = pool.options;
  if (pool.isClosed()) return new PoolClosedError(o.name);
  if (signal?.aborted) {
    pool.counters.aborted++;
    return signal.reason;
  }
  const { set, backoff } = pool.supply;
  if (backoff.blocks(set.ready === 0, set.opening)) {
    pool.counters.failedFast++;
    return backoff.failFast(set.opening);
  }
  // Callers may also wait for the slots that connections opening or still to open will bring.
  const maxSize = pool.supply.maxSizeNow;
  const slotsToCome = (set.opening + Math.max(0, maxSize - set.size)) * pool.supply.perConnection;
  if (o.maxWaiting !== Infinity && pool.waiting() >= o.maxWaiting + slotsToCome) return new QueueFullError(o.name, o.maxWaiting);
  if (scopesLive > 0 && set.clients > 0 && set.opening === 0 && set.validating === 0 && set.size >= maxSize) {
    const own = scopeLeases(pool.pool);
    if (own > 0 && own >= set.clients) return new SelfDeadlockError(o.name, own, maxSize, o.clientLimit);
  }
  return undefined;
}

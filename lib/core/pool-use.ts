import { backoffMs } from './backoff.js';
import type { Timers } from './clock.js';
import type { Connector } from './connector.js';
import { PoolClosedError } from './errors.js';
import { kEnded, type Lease } from './lease.js';
import type { PoolLogger } from './logger.js';
import { messageOf } from './message-of.js';
import type { RetryOptions, UseOptions } from './call-options.js';
import { findScope, scopes } from './scope.js';

/** What `use()` needs of its pool. */
export interface UsingPool<T> {
  /** The pool itself: the key of its scopes. */
  readonly pool: object;
  readonly name: string;
  readonly logger: PoolLogger;
  readonly connector: Connector<T>;
  readonly timers: Timers;
  /** Aborted when the pool closes: a pause between tries ends with PoolClosedError. */
  readonly closeSignal: AbortSignal;
  isClosed(): boolean;
  /** acquire() with the options already checked. */
  acquire(options: UseOptions | undefined): Promise<Lease<T>>;
  /** One more (+1) or one fewer (-1) use() scope of this pool runs now. */
  scopes(delta: 1 | -1): void;
  /** Keeps the process alive while a pause runs. */
  hold(): void;
  unhold(): void;
}

/**
 * Runs `fn` with a connection and releases it whatever happens, inside a scope where
 * `pool.current` is the connection. A nested `use()` of the same pool reuses the lease unless
 * `propagation: 'new'`; `propagation: 'none'` neither joins a scope nor opens one (no
 * AsyncLocalStorage at all). With `retry`, an error the connector calls fatal (or `retry.retryOn`
 * accepts) fails the lease and tries again on another connection after a backoff.
 */
export async function runUse<T, R>(host: UsingPool<T>, fn: (conn: T) => R | Promise<R>, options: UseOptions | undefined): Promise<R> {
  const propagation = options?.propagation;
  const scoped = propagation !== 'none';
  const outer = propagation === 'new' || !scoped ? undefined : findScope(host.pool);
  if (outer !== undefined) return fn(outer.lease.connection as T);
  const retry = options?.retry;
  const attempts = retry?.attempts ?? 1;
  for (let attempt = 1; ; attempt++) {
    const lease = await host.acquire(options);
    host.scopes(1);
    try {
      // The scope ends with this use(): a task that outlives it finds the lease no longer live.
      const result = scoped ? await scopes.run({ pool: host.pool, lease, parent: scopes.getStore() }, fn, lease.connection) : await fn(lease.connection);
      host.scopes(-1);
      lease[kEnded]({ ok: true, value: result });
      lease.release();
      return result;
    } catch (err) {
      host.scopes(-1);
      lease[kEnded]({ ok: false, error: err });
      const fatal = isFatal(host, err);
      const retryable = attempt < attempts && (fatal || retryOn(host, retry, err));
      if (retryable || fatal) lease.fail(err);
      else lease.release();
      if (!retryable) throw err;
      await pause(host, backoffMs(attempt, retry?.baseDelayMs ?? 10, retry?.maxDelayMs ?? 1_000));
    }
  }
}

/** A pause between tries: it keeps the process alive, and close() ends it with PoolClosedError. */
function pause(host: UsingPool<unknown>, ms: number): Promise<void> {
  if (host.isClosed()) return Promise.reject(new PoolClosedError(host.name));
  host.hold();
  return new Promise<void>((resolve, reject) => {
    const signal = host.closeSignal;
    const onClose = () => {
      host.timers.clear(timer);
      reject(new PoolClosedError(host.name));
    };
    const timer = host.timers.set(() => {
      signal.removeEventListener('abort', onClose);
      resolve();
    }, ms);
    signal.addEventListener('abort', onClose, { once: true });
  }).finally(() => host.unhold());
}

/** The connector's isFatal(); one that throws is logged and means "not fatal". */
function isFatal(host: UsingPool<unknown>, err: unknown): boolean {
  try {
    return host.connector.isFatal?.(err) === true;
  } catch (thrown) {
    host.logger.error(`pool "${host.name}": connector.isFatal() threw (${messageOf(thrown)}); the error counts as not fatal`, thrown);
    return false;
  }
}

/** The caller's retryOn predicate; one that throws is logged and means "do not retry". */
function retryOn(host: UsingPool<unknown>, retry: RetryOptions | undefined, err: unknown): boolean {
  if (retry?.retryOn === undefined) return false;
  try {
    return retry.retryOn(err) === true;
  } catch (thrown) {
    host.logger.error(`pool "${host.name}": retry.retryOn threw (${messageOf(thrown)}); not retrying`, thrown);
    return false;
  }
}

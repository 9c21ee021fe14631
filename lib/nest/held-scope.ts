import { AsyncLocalStorage } from 'node:async_hooks';
import type { ConnectionPool, UseOptions } from '../core/index.js';

/** A `pool.use()` scope held open across many turns of the event loop, for streams. */
export interface HeldScope {
  /** The held lease's connection. */
  readonly connection: unknown;
  /** Runs `fn` inside the scope: `pool.current` is the held connection. */
  run<R>(fn: () => R): R;
  /**
   * Leaves the scope. Without a failure the lease is released; with one, `use()` handles it as
   * it handles any error (a fatal one retires the connection) and the returned promise rejects
   * with it.
   */
  end(failure?: { error: unknown }): Promise<void>;
}

/**
 * Enters `pool.use()` and keeps it open until `end()`. Resolves once the lease is held; rejects
 * if it cannot be had (timeout, abort, closed pool). Reuse, scoping, release and fatal-error
 * handling are all `use()`'s own.
 */
export function holdScope(pool: Pick<ConnectionPool<unknown>, 'use'>, options: UseOptions): Promise<HeldScope> {
  return new Promise((resolve, reject) => {
    const used: Promise<void> = pool.use((conn) => {
      const { scope, body } = keepScope(() => used, conn);
      resolve(scope);
      return body;
    }, options);
    // Before the scope is entered this rejects the caller; after, the caller awaits end().
    used.catch(reject);
  });
}

/**
 * Keeps the `use()` scope this is called in open: return `body` from the use() callback, and the
 * lease is held until `scope.end()`; `used` is that use()'s promise, which `end()` returns.
 */
export function keepScope(
  used: () => Promise<unknown>,
  connection: unknown,
): { scope: HeldScope; body: Promise<void> } {
  const run = AsyncLocalStorage.snapshot();
  let finish!: (failure?: { error: unknown }) => void;
  const body = new Promise<void>((ok, fail) => (finish = (f) => (f === undefined ? ok() : fail(f.error))));
  const scope: HeldScope = {
    connection,
    run: (fn) => run(fn),
    end: (failure) => {
      finish(failure);
      return used().then(() => {});
    },
  };
  return { scope, body };
}

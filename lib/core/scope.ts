import { AsyncLocalStorage } from 'node:async_hooks';

/** What a scope needs of its lease. */
export interface ScopeLease {
  readonly connection: unknown;
  /** False once the lease was given back or its connection closed: the scope has ended. */
  readonly live: boolean;
}

/** One `use()` scope: the pool, its lease, and the scope around it. */
export interface ScopeFrame {
  readonly pool: object;
  readonly lease: ScopeLease;
  readonly parent: ScopeFrame | undefined;
}

/** One store for every pool: nested scopes of different pools chain through `parent`. */
export const scopes = new AsyncLocalStorage<ScopeFrame>();

/**
 * The innermost live scope of `pool` around the caller, if any. A task started inside `use()`
 * that outlives it still carries the frame (AsyncLocalStorage copies it), but the frame's lease
 * is no longer live, so that task is outside any scope.
 */
export function findScope(pool: object): ScopeFrame | undefined {
  for (let f = scopes.getStore(); f !== undefined; f = f.parent) if (f.pool === pool && f.lease.live) return f;
  return undefined;
}

/** How many live leases of `pool` the caller's enclosing scopes hold. */
export function scopeLeases(pool: object): number {
  let n = 0;
  for (let f = scopes.getStore(); f !== undefined; f = f.parent) if (f.pool === pool && f.lease.live) n++;
  return n;
}

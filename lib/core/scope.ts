import { AsyncLocalStorage } from 'node:async_hooks';

/** One `use()` scope: the pool, its lease, and the scope around it. */
export interface ScopeFrame {
  readonly pool: object;
  readonly lease: { readonly connection: unknown };
  readonly parent: ScopeFrame | undefined;
}

/** One store for every pool: nested scopes of different pools chain through `parent`. */
export const scopes = new AsyncLocalStorage<ScopeFrame>();

/** The innermost scope of `pool` around the caller, if any. */
export function findScope(pool: object): ScopeFrame | undefined {
  for (let f = scopes.getStore(); f !== undefined; f = f.parent) if (f.pool === pool) return f;
  return undefined;
}

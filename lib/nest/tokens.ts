/** A pool's name: a string, or the `PoolRef` of `definePool()`. */
export type PoolName = string | { readonly name: string; readonly token: string };

/** The name of a pool given by name or by `PoolRef`. */
export function poolNameOf(pool: PoolName): string {
  return typeof pool === 'string' ? pool : ((pool as { name?: unknown } | null)?.name as string);
}

/** The injection token of the pool named `name`: `@Inject(getPoolToken('db'))` or `moduleRef.get(...)`. */
export function getPoolToken(name: PoolName): string {
  return `nestjs-shared-pool:${poolNameOf(name)}`;
}

/** @internal The settings of one `PoolModule` import, after its async factory ran. */
export const POOL_MODULE_SETTINGS = Symbol('PoolModuleSettings');

/** @internal The pools of one `PoolModule` import. */
export const MODULE_POOLS = Symbol('PoolModulePools');

/** @internal The connector of the pool named `name` within one `PoolModule` import. */
export function getConnectorToken(name: string): string {
  return `nestjs-shared-pool:${name}:connector`;
}

/** @internal The limiters of one `PoolModule` import. */
export const MODULE_LIMITERS = Symbol('PoolModuleLimiters');

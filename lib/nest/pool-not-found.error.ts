import { PoolError } from '../core/index.js';

/** No open pool has this name: a `@UsePooled` method names a pool that was never registered. */
export class PoolNotFoundError extends PoolError {
  constructor(
    pool: string,
    /** Who asked, e.g. `CatsService.findAll`. */
    readonly usedBy: string,
    /** Names of the pools that are registered. */
    readonly registered: readonly string[],
  ) {
    const known = registered.length === 0 ? 'no pool is registered' : `registered: ${registered.map((n) => `"${n}"`).join(', ')}`;
    super(
      'POOL_NOT_FOUND',
      pool,
      `pool "${pool}" used by ${usedBy} does not exist (${known}); add { name: '${pool}', connector } to PoolModule.forRoot({ pools }) or fix the name`,
    );
  }
}

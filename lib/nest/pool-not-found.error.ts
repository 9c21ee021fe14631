import { brandError, closest, PoolError } from '../core/index.js';

/**
 * A `@UsePooled` method cannot find its pool: no pool of the application has the name, or the
 * method was called on an object no Nest application made.
 */
export class PoolNotFoundError extends PoolError {
  constructor(
    pool: string,
    /** Who asked, e.g. `CatsService.findAll`. */
    readonly usedBy: string,
    /** Names of the pools the application registers. */
    readonly registered: readonly string[],
    /** Why, when the name is not the problem. */
    problem?: string,
  ) {
    const known =
      registered.length === 0 ? 'no pool is registered' : `registered: ${registered.map((n) => `"${n}"`).join(', ')}`;
    const near = closest(pool, registered);
    const fix =
      near === undefined
        ? `add { name: '${pool}', connector } to PoolModule.forRoot({ pools }) or fix the name`
        : `did you mean "${near}"?`;
    super(
      'POOL_NOT_FOUND',
      pool,
      problem === undefined
        ? `pool "${pool}" used by ${usedBy} does not exist (${known}); ${fix}`
        : `@UsePooled('${pool}') on ${usedBy} ${problem}`,
    );
  }
}

brandError(PoolNotFoundError, 'POOL_NOT_FOUND');

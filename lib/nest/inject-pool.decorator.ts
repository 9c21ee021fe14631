import { Inject } from '@nestjs/common';
import { getPoolToken, type PoolName } from './tokens.js';

/**
 * Injects the pool named `name` (or by its `PoolRef`): `constructor(@InjectPool('db') private
 * readonly db: ConnectionPool<Client>)`, or with `definePool`, `@InjectPool(Db) db: PoolOf<typeof Db>`.
 */
export const InjectPool = (name: PoolName): ParameterDecorator & PropertyDecorator => Inject(getPoolToken(name));

import { Inject } from '@nestjs/common';
import { getPoolToken } from './tokens.js';

/** Injects the pool named `name`: `constructor(@InjectPool('db') private readonly db: ConnectionPool<Client>)`. */
export const InjectPool = (name: string): ParameterDecorator & PropertyDecorator => Inject(getPoolToken(name));

import { type ConnectionPool, optionError } from '../core/index.js';
import type { ConnectorSource, PoolDefinition, PooledOptions } from './pool-module-options.js';
import { getPoolToken } from './tokens.js';

declare const kConnection: unique symbol;

/**
 * A pool's name with the type of its connections, made by {@link definePool}. Pass it wherever a
 * pool's name goes (`@InjectPool`, `@UsePooled`, `getPoolToken`); its `define()` checks the
 * connector against the type, and `get()` returns the pool typed, so the type is written once.
 */
export interface PoolRef<T> {
  readonly name: string;
  /** The injection token, `getPoolToken(name)`. */
  readonly token: string;
  /** An entry of `PoolModule.forRoot({ pools })` (or forFeature, or forRootAsync without options): the connector must make `T`. */
  define(connector: ConnectorSource<T>, options?: PooledOptions): PoolDefinition<T>;
  /** The pool, from an application or a module ref: `Db.get(app)`. */
  get(from: { get(token: string, options?: { strict?: boolean }): unknown }): ConnectionPool<T>;
  /** The type of the connections; never present at run time. */
  readonly [kConnection]?: T;
}

/** The pool type of a {@link PoolRef}: `@InjectPool(Db) private readonly db: PoolOf<typeof Db>`. */
export type PoolOf<R> = R extends PoolRef<infer T> ? ConnectionPool<T> : never;

/**
 * Names a pool and the type of its connections, once, for registration and injection alike:
 *
 * ```ts
 * export const Db = definePool<pg.Client>('db');
 * PoolModule.forRoot({ pools: [Db.define(new PgConnector(url), { maxSize: 10 })] });
 * constructor(@InjectPool(Db) private readonly db: PoolOf<typeof Db>) {}
 * ```
 */
export function definePool<T>(name: string): PoolRef<T> {
  if (typeof name !== 'string' || name.length === 0) {
    throw optionError(
      { subject: 'decorator', name: `definePool(${JSON.stringify(name) ?? String(name)})` },
      'the name',
      'must be a non-empty string naming a pool',
    );
  }
  const token = getPoolToken(name);
  return Object.freeze({
    name,
    token,
    define: (connector: ConnectorSource<T>, options?: PooledOptions): PoolDefinition<T> =>
      options === undefined ? { name, connector } : { name, connector, options },
    get: (from: { get(token: string, options?: { strict?: boolean }): unknown }) =>
      from.get(token, { strict: false }) as ConnectionPool<T>,
  });
}

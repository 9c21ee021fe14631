import { optionError } from '../core/index.js';

/** The `@PooledConnection()` parameter of each method, by prototype (or class, for static methods). */
const marked = new WeakMap<object, Map<string | symbol, number>>();

/**
 * Marks the parameter of a `@UsePooled` method that takes its connection: the decorated method
 * puts the lease's connection there on every call, whatever the caller passed. It is how a method
 * with `propagation: 'none'` (no `pool.current`, no AsyncLocalStorage) reaches its connection,
 * and works with the other propagations too. Make the parameter optional, and last:
 *
 * ```ts
 * @UsePooled('db', { propagation: 'none' })
 * async find(id: string, @PooledConnection() db?: pg.Client) { return db!.query(...) }
 * ```
 */
export function PooledConnection(): ParameterDecorator {
  return (target, propertyKey, index) => {
    if (propertyKey === undefined) {
      const owner = typeof target === 'function' ? target.name : target.constructor.name;
      throw optionError(
        { subject: 'decorator', name: '@PooledConnection()' },
        `on parameter ${index} of the constructor of ${owner}`,
        'marks a parameter of a @UsePooled method, not of a constructor; inject the pool there instead',
      );
    }
    const params = marked.get(target) ?? new Map<string | symbol, number>();
    marked.set(target, params);
    params.set(propertyKey, index);
  };
}

/** @internal The index of the `@PooledConnection()` parameter of `target[propertyKey]`, if any. */
export function pooledConnectionAt(target: object, propertyKey: string | symbol): number | undefined {
  return marked.get(target)?.get(propertyKey);
}

import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { closest, PoolConfigError, shown } from '../core/index.js';
import { canInject, type ModuleLike } from './module-visibility.js';
import { PoolNotFoundError } from './pool-not-found.error.js';
import { pooledCallsOf, type PooledCall } from './pooled-call.js';
import { PoolRegistry, type PoolLike } from './pool-registry.js';
import { getPoolToken } from './tokens.js';

/**
 * Gives each `@UsePooled` method of every provider and controller of the application the pool
 * DI resolves for its name. It runs before any other module's `onModuleInit` (its module is
 * global, and Nest starts global modules first), so decorated methods work in start-up hooks.
 * A method whose pool does not exist, or whose module cannot see the `forFeature` import that
 * registers it, fails the application's start, as a missing provider does.
 */
@Injectable()
export class PooledMethodBinder implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly registry: PoolRegistry,
  ) {}

  onModuleInit(): void {
    const registered = () => this.registry.names();
    const poolOf = (call: PooledCall, host: ModuleLike | undefined): PoolLike => {
      const pool = this.registry.forMethods(call.pool);
      if (pool === undefined) throw new PoolNotFoundError(call.pool, call.where, registered());
      if (host !== undefined && this.registry.isFeature(call.pool) && !canInject(host, getPoolToken(call.pool))) {
        const module = host.metatype?.name ?? 'its module';
        throw new PoolNotFoundError(
          call.pool,
          call.where,
          registered(),
          `cannot see pool "${call.pool}": PoolModule.forFeature registers it in a module that ${module} does not import. Add that module (or the PoolModule.forFeature([...]) registration itself) to the imports of ${module}, or register the pool with forRoot`,
        );
      }
      checkClass(call, pool);
      return pool;
    };
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      const instance: unknown = wrapper.instance;
      const made = typeof instance === 'object' && instance !== null ? instance : undefined;
      const { metatype } = wrapper;
      const prototype: object | null =
        made !== undefined
          ? (Object.getPrototypeOf(made) as object | null)
          : typeof metatype === 'function' && wrapper.inject == null
            ? (metatype.prototype as object) // a class Nest has not made yet
            : null;
      const calls = pooledCallsOf(prototype);
      if (calls.length === 0) continue;
      // A singleton is bound itself. Instances Nest makes later (per request, per injection)
      // find their pool through their class; the newest application to bind the class wins.
      const single = wrapper.isDependencyTreeStatic() && !wrapper.isTransient;
      const instanceKey = single ? made : undefined;
      const type = single ? undefined : (prototype as { constructor?: object }).constructor;
      for (const call of calls) call.bind(instanceKey, type, poolOf(call, wrapper.host as ModuleLike | undefined));
    }
  }
}

/**
 * A method's fixed `class` must name a class of its pool's limiter: a misspelt one fails the
 * start, not the first call. (A class a function picks is checked per call.)
 */
function checkClass(call: PooledCall, pool: PoolLike): void {
  const asked = call.options.class;
  const names = pool.stats?.().admission?.classes?.map((c) => c.name);
  if (typeof asked !== 'string' || names === undefined || names.includes(asked)) return;
  const near = closest(asked, names);
  throw new PoolConfigError(
    `@UsePooled('${call.pool}') on ${call.where}`,
    'class',
    `(${shown(asked)}) is not a class of the pool's limiter: one of ${names.map((n) => `'${n}'`).join(', ')}${
      near === undefined ? '' : ` (did you mean '${near}'?)`
    }`,
    'decorator',
  );
}

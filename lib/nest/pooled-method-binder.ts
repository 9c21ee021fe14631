import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { pooledCallsOf } from './pooled-call.js';
import { PoolRegistry } from './pool-registry.js';

/**
 * Gives each `@UsePooled` method of every provider and controller of the application the pool
 * DI resolves for its name. It runs before any other module's `onModuleInit` (its module is
 * global, and Nest starts global modules first), so decorated methods work in start-up hooks.
 */
@Injectable()
export class PooledMethodBinder implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly registry: PoolRegistry,
  ) {}

  onModuleInit(): void {
    const registered = () => this.registry.names();
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
      for (const call of calls) call.bind(instanceKey, type, this.registry.forMethods(call.pool), registered);
    }
  }
}

import { Global, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { PoolHealthIndicator } from './pool-health.indicator.js';
import { PooledMethodBinder } from './pooled-method-binder.js';
import { PoolRegistry } from './pool-registry.js';

/**
 * What one application shares across its `PoolModule` imports: the registry of pool names, the
 * binder of `@UsePooled` methods and the health indicator. Global, so it exists once per
 * application and its start-up hook runs before any other module's.
 */
@Global()
@Module({
  imports: [DiscoveryModule],
  providers: [PoolRegistry, PooledMethodBinder, PoolHealthIndicator],
  exports: [PoolRegistry, PoolHealthIndicator],
})
export class PoolCoreModule {}

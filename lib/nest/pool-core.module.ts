import { Global, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { KeepAliveDrain } from './keep-alive-drain.js';
import { PoolHealthIndicator } from './pool-health.indicator.js';
import { PooledMethodBinder } from './pooled-method-binder.js';
import { PoolRegistry } from './pool-registry.js';

/**
 * What one application shares across its `PoolModule` imports: the registry of pool names, the
 * binder of `@UsePooled` methods, the health indicator, and the drain of keep-alive connections
 * at shutdown. Global, so it exists once per application and its start-up hook runs before any
 * other module's.
 */
@Global()
@Module({
  imports: [DiscoveryModule],
  providers: [PoolRegistry, PooledMethodBinder, PoolHealthIndicator, KeepAliveDrain],
  exports: [PoolRegistry, PoolHealthIndicator],
})
export class PoolCoreModule {}

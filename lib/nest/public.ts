export { getPoolToken, type PoolName } from './tokens.js';
export { definePool, type PoolOf, type PoolRef } from './define-pool.js';
export { InjectPool } from './inject-pool.decorator.js';
export { UsePooled, type PooledMethodDecorator, type UsePooledOptions } from './use-pooled.decorator.js';
export { PooledConnection } from './pooled-connection.decorator.js';
export { PoolModule } from './pool.module.js';
export type {
  AsyncGroupDefinition,
  AsyncPoolDefinition,
  GroupConnectorSource,
  GroupDefinition,
  GroupedOptions,
  LimitsConfig,
  MemberConnectors,
  ConnectorFactory,
  ConnectorSource,
  PoolDefinition,
  PoolFeatureAsyncOptions,
  PoolFeatureSettings,
  PoolModuleAsyncOptions,
  PoolModuleOptions,
  PoolModuleSettings,
  PoolSettingsFactory,
  PooledOptions,
} from './pool-module-options.js';
export {
  PoolHealthIndicator,
  type PoolHealthCheckOptions,
  type PoolHealthDetails,
  type StandingSummary,
} from './pool-health.indicator.js';
export { PoolErrorFilter, poolErrorResponse, type PoolErrorResponse } from './pool-error.filter.js';
export { NestPoolLogger } from './nest-pool-logger.js';
export { PoolNotFoundError } from './pool-not-found.error.js';
export { currentRequestClass, currentRequestKey, type RequestClassFn, type RequestKeyFn } from './request-key.js';

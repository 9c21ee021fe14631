export * from './clock.js';
export * from './connector.js';
export * from './errors.js';
export * from './logger.js';
export * from './options.js';
export * from './stats.js';
export { Lease } from './lease.js';
export type { ConnectionState } from './shared-connection.js';
export { ConnectionPool, type AcquireOptions, type CloseOptions, type RetryOptions, type UseOptions } from './connection-pool.js';

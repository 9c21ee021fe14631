/**
 * nestjs-shared-pool: a pool of shared transports, each connection serving up to `clientLimit`
 * callers at once.
 * @packageDocumentation
 */
export * from './core/index.js';
export * from './limits/index.js';
export * from './groups/index.js';
export * from './connectors/index.js';
export * from './nest/index.js';

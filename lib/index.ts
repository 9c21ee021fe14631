/**
 * nestjs-shared-pool: a pool of shared transports, each connection serving up to `clientLimit`
 * callers at once.
 * @packageDocumentation
 */
export * from './core/public.js';
export * from './limits/public.js';
export * from './groups/public.js';
export * from './connectors/public.js';
export * from './nest/public.js';

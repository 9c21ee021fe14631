// What the other folders of lib use of the limits: their public surface (public.ts), and what follows.
export * from './public.js';
export { type HeardInstance, kCountLapsed, kDemand, type RedisDemand } from './redis/index.js';

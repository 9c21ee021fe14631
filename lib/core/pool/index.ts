export { ConnectionPool } from './connection-pool.js';
export { Lease } from './lease.js';
export { findScope, kUseOn, type MethodBody, type MethodPool, useOn } from './pool-use.js';

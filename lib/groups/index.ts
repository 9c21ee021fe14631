// The public surface of pool groups: many pools, one per key, sharing one budget of connections.
export { PoolGroup, type PoolGroupMemberStats, type PoolGroupStats } from './pool-group.js';
export type { PoolGroupMemberOptions, PoolGroupOptions } from './group-options.js';
export type { Hunger } from './group-planner.js';

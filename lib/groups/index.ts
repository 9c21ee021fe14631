// The public surface of pool groups: many pools, one per key, sharing one budget of connections.
export { PoolGroup } from './pool-group.js';
export type { PoolGroupMemberStats, PoolGroupStats } from './group-stats.js';
export type { PoolGroupMemberOptions, PoolGroupOptions } from './group-options.js';
export type { Hunger } from './group-planner.js';

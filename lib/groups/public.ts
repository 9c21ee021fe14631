// The public surface of pool groups: many pools, one per key, sharing one budget of connections.
export { PoolGroup } from './pool-group.js';
export type { PoolGroupMemberRow, PoolGroupMemberStats, PoolGroupStats, PoolGroupSummary } from './group-stats.js';
export type { PoolGroupMemberOptions, PoolGroupOptions } from './group-options.js';
export type { Hunger } from './group-planner.js';
export { FleetBudget } from './fleet-budget.js';
export type { FleetBudgetOptions, FleetBudgetStats } from './fleet-budget-options.js';
export type { FleetInstance } from './fleet-shares.js';

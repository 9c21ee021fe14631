export type * from './admission.js';
export {
  type BudgetMember,
  type ConnectionBudget,
  kBudget,
  kMember,
  type MemberLoadFigures,
  type MemberSide,
  type SharedBudget,
} from './connection-budget.js';
export type { Connector, CreateContext, HandleLending, ResetContext, RetireOptions } from './connector.js';
export { DEFAULT_HEALTH_THRESHOLDS, type HealthThresholds, type PoolHealth, utilizationHealth } from './health.js';
export type * from './stats.js';

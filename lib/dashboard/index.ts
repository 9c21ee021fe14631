// The optional live dashboard: `import { PoolDashboardModule } from 'nestjs-shared-pool/dashboard'`.
export { PoolDashboard, PoolDashboardModule } from './pool-dashboard.module.js';
export type { PoolDashboardOptions } from './dashboard-options.js';
export type { FeedStats } from './dashboard-feed.js';
export type * from './dashboard-snapshot.js';
export { scrub } from '../core/index.js';

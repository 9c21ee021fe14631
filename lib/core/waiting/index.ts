export { PoolQueue } from './pool-queue.js';
export { LinkedQueue, type QueueNode, Waiter, WaiterQueue } from './waiter-queue.js';
export { DRAIN_WINDOW_MS, DrainRate } from './drain-rate.js';
export { QueueWatch } from './queue-watch.js';
export { INTERVAL_TARGETS, LEAST_INTERVAL_MS, StandingQueue } from './standing-queue.js';
export { type ResolvedWaiting, resolveWaiting, type WaitingOptions } from './waiting-options.js';

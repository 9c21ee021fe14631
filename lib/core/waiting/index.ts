export { PoolQueue } from './pool-queue.js';
export { LinkedQueue, type QueueNode, Waiter, WaiterQueue } from './waiter-queue.js';
export { DRAIN_WINDOW_MS, DrainRate } from './drain-rate.js';
export { INTERVAL_TARGETS, LEAST_INTERVAL_MS, StandingQueue, type WaitingOptions } from './standing-queue.js';

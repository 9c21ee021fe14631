export { PoolQueue } from './pool-queue.js';
export { LinkedQueue, type QueueNode, Waiter, WaiterQueue } from './waiter-queue.js';

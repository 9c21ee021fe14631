// Redis in the sample app, used the two ways that each fit a job:
// - plain commands (INCR, GET, RPUSH) go through ONE shared client with auto-pipelining: it sends
//   every caller's commands together on one connection, which no pool of clients beats;
// - commands that hold a connection for themselves (BLPOP blocks it, WATCH/MULTI keeps state on
//   it) take a connection of their own from the pool `redis` (clientLimit 1), so they never stall
//   or disturb the shared client's other callers.
import type { OnApplicationShutdown } from '@nestjs/common';
import { Redis } from 'ioredis';

/** The one shared, auto-pipelined client for plain commands. */
export class SharedRedis implements OnApplicationShutdown {
  readonly client: Redis;

  constructor(url: string) {
    this.client = new Redis(url, { enableAutoPipelining: true, maxRetriesPerRequest: 1 });
    this.client.on('error', () => {}); // ioredis reconnects; commands meanwhile fail and say why
  }

  async onApplicationShutdown(): Promise<void> {
    await this.client.quit().catch(() => this.client.disconnect());
  }
}

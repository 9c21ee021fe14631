// A Redis of the spec's own for fleet budgets, started before its tests and stopped after, with a
// client to look at what the budgets keep there.
import { afterAll, beforeAll } from '@jest/globals';
import { Redis } from 'ioredis';
import { RedisServer } from './redis-server.js';

export interface BudgetRedis {
  readonly url: string;
  readonly inspector: Redis;
  /** Places the budget `name` holds in Redis, every instance's (by their expiry; the set's marker has none). */
  places(name: string): Promise<number>;
}

/** Registers the spec's Redis; read its fields inside tests. */
export function budgetRedis(): BudgetRedis {
  let server: RedisServer | undefined;
  let inspector: Redis | undefined;
  beforeAll(async () => {
    server = await RedisServer.start();
    inspector = new Redis(server.url);
  });
  afterAll(async () => {
    inspector?.disconnect();
    await server?.stop();
  });
  return {
    get url() {
      return server!.url;
    },
    get inspector() {
      return inspector!;
    },
    places: (name) => inspector!.zcount(`{budget:${name}}:g`, '-inf', '(+inf'),
  };
}

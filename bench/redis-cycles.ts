/**
 * Redis GET and SET through `sharedRedisConnector` against what a user would pick instead, one
 * auto-pipelined ioredis client, each variant in a process of its own, taken in turn (see
 * fresh-process.ts): Redis shares the two cores, so only rounds paired in time tell a few percent.
 *
 * Run by `npm run bench`; `node dist-bench/bench/redis-cycles.js <variant> <callers>` prints the
 * best of five rounds (calls per second) as JSON.
 */
import { Redis } from 'ioredis';
import { ConnectionPool, type Connector } from '../lib/core/index.js';
import { sharedRedisConnector } from '../lib/connectors/ioredis/index.js';
import { alternatingWithCallers, callRound, serveWhenRun, type Rounds } from './fresh-process.js';

/**
 * `ioredis`: one client, `enableAutoPipelining`, called directly; `sharedRedisConnector, use()`:
 * the ready-made connector (its gate on), each call in `pool.use()`; with `propagation: 'none'`:
 * use() with no AsyncLocalStorage scope (on Node 20 and 22 a scope turns on a promise hook that
 * every promise of the process pays, ioredis's own included); `a lease by hand`: acquire and
 * release, no scope either; `use() lending the client itself`: the connector with
 * `lendsHandles: false` (the client itself, not a handle per lease), to tell the handle's cost;
 * `use() on a plain client`: use() around a client with no gate (nor handle), to tell the gate's.
 */
export type RedisVariant =
  | 'ioredis'
  | 'sharedRedisConnector, use()'
  | "sharedRedisConnector, use() with propagation: 'none'"
  | 'sharedRedisConnector, a lease by hand'
  | 'use() lending the client itself'
  | 'use() on a plain client';

const URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379/0';
const KEYS = 100;
const prefix = `nsp:bench:${process.pid}:`;

/** A call: a SET of one of {@link KEYS} keys, then a GET of another, one per call in turn. */
function commandsOn(client: () => Redis): () => Promise<unknown> {
  let n = 0;
  return () => {
    const i = n++;
    const key = prefix + (i % KEYS);
    return (i & 1) === 0 ? client().set(key, 'v') : client().get(key);
  };
}

/** A plain auto-pipelined client per connection, no gate. */
const plain: Connector<Redis> = {
  clientLimit: 100,
  async create() {
    const client = new Redis(URL, { enableAutoPipelining: true, lazyConnect: true });
    await client.connect();
    return client;
  },
  close: async (client) => void (await client.quit()),
};

async function setUp(variant: RedisVariant, callers: number): Promise<Rounds> {
  if (variant === 'ioredis') {
    const client = new Redis(URL, { enableAutoPipelining: true });
    await client.ping();
    const call = commandsOn(() => client);
    const round = callRound(callers, call);
    return { round: () => round(ROUND_CALLS), close: async () => void (await client.quit()), warmRounds: 8 };
  }
  const shared = sharedRedisConnector(URL, { clientLimit: 100 });
  const connector =
    variant === 'use() on a plain client'
      ? plain
      : variant === 'use() lending the client itself'
        ? { ...shared, lendsHandles: false }
        : shared;
  const logger = { warn: () => {}, error: (message: string) => console.error(message) };
  const pool = new ConnectionPool(connector, { name: 'redis', maxSize: 1, minSize: 1, metrics: false, logger });
  await pool.warmup();
  let current!: Redis;
  const command = commandsOn(() => current);
  const call =
    variant === 'sharedRedisConnector, a lease by hand'
      ? async () => {
          const lease = await pool.acquire();
          try {
            current = lease.connection;
            return await command();
          } finally {
            lease.release();
          }
        }
      : variant === "sharedRedisConnector, use() with propagation: 'none'"
        ? () =>
            pool.use(
              (client) => {
                current = client;
                return command();
              },
              { propagation: 'none' },
            )
        : () =>
            pool.use((client) => {
              current = client;
              return command();
            });
  const round = callRound(callers, call);
  return { round: () => round(ROUND_CALLS), close: () => pool.close(), warmRounds: 8 };
}

/** A round: 10,000 calls, about 0.1 s here. */
const ROUND_CALLS = 10_000;

/** Sets of live processes, one per variant, the variants in turn (see {@link alternatingWithCallers}). */
export const alternatingRedisCycles = alternatingWithCallers<RedisVariant>(import.meta.url);

serveWhenRun(import.meta.url, ([variant, callers]) => setUp(variant as RedisVariant, Number(callers)));

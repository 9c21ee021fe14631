/**
 * PostgreSQL `SELECT 1` through this pool against `pg.Pool`, each variant in a process of its own
 * (no shared JIT feedback, no promise hook left on by another variant), taken in turn: a query
 * on the real server costs tens of microseconds, so the pools' difference is small against the
 * noise (and the server, on the same two cores, moves each process's rate by up to 50 %): only
 * alternating fresh processes, compared round by round, can tell it.
 *
 * Run by `npm run bench`; `node dist-bench/bench/pg-cycles.js <variant> <callers>` prints the
 * best of five rounds (queries per second) as JSON.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';
import { ConnectionPool, type Connector } from '../lib/core/index.js';
import { pgConnector } from '../lib/connectors/pg/index.js';
import { alternatingWithCallers, callRound, serveWhenRun, type Rounds } from './fresh-process.js';

/**
 * `use()`: this pool's `use()` with its scope; `acquire`: a lease by hand; `pg.Pool`:
 * `pool.query()`; `pg.Pool, a scope per query`: each query run
 * inside an AsyncLocalStorage scope of its own (`als.run()`), as `use()` runs its function: what
 * a scope per call costs any pool on Node 20, and `use()`'s equal terms; `use(), reset on return`:
 * `use()` on the package's pg connector, whose reset checks each client given back.
 */
export type PgVariant = 'use()' | 'acquire' | 'pg.Pool' | 'pg.Pool, a scope per query' | 'use(), reset on return';

export const PG_URL = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';
const MAX = 10;

/** A plain pg.Client per connection, exclusive, as pg.Pool has them. */
const clients: Connector<pg.Client> = {
  clientLimit: 1,
  async create(ctx) {
    const client = new pg.Client({ connectionString: PG_URL });
    client.on('error', (err: Error) => ctx.retire(err.message));
    await client.connect();
    return client;
  },
  close: (client) => client.end(),
};

async function queryOf(variant: PgVariant): Promise<{ query: () => Promise<unknown>; close: () => Promise<void> }> {
  if (variant === 'pg.Pool' || variant === 'pg.Pool, a scope per query') {
    const pool = new pg.Pool({ connectionString: PG_URL, max: MAX });
    if (variant === 'pg.Pool, a scope per query') {
      const scope = new AsyncLocalStorage<number>();
      let calls = 0;
      return { query: () => scope.run(calls++, () => pool.query('SELECT 1')), close: () => pool.end() };
    }
    return { query: () => pool.query('SELECT 1'), close: () => pool.end() };
  }
  // Health lines (exhausted under this load, by design) would land in the measurement's stdout.
  const logger = { warn: () => {}, error: (message: string) => console.error(message) };
  const connector = variant === 'use(), reset on return' ? pgConnector(PG_URL) : clients;
  const pool = new ConnectionPool(connector, { name: 'pg', maxSize: MAX, minSize: MAX, metrics: false, logger });
  await pool.warmup();
  const query =
    variant !== 'acquire'
      ? () => pool.use((client) => client.query('SELECT 1'))
      : async () => {
          const lease = await pool.acquire();
          try {
            return await lease.connection.query('SELECT 1');
          } finally {
            lease.release();
          }
        };
  return { query, close: () => pool.close() };
}

/**
 * A round: 5,000 queries, about 0.1-0.2 s here. Short rounds, many of them (see run.ts's
 * PG_ROUNDS): this machine's speed flips within a second, and a flip between two paired rounds
 * moves their ratio.
 */
const ROUND_QUERIES = 5_000;

/** `variant` with `callers` concurrent callers, set up: a round is {@link ROUND_QUERIES} queries (queries per second); 40,000 warm it. */
async function setUp(variant: PgVariant, callers: number): Promise<Rounds> {
  const { query, close } = await queryOf(variant);
  const round = callRound(callers, query);
  return { round: () => round(ROUND_QUERIES), close, warmRounds: 40_000 / ROUND_QUERIES };
}

/** Sets of live processes, one per variant, the variants in turn (see {@link alternatingWithCallers}). */
export const alternatingPgCycles = alternatingWithCallers<PgVariant>(import.meta.url);

serveWhenRun(import.meta.url, ([variant, callers]) => setUp(variant as PgVariant, Number(callers)));

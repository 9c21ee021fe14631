// Sharing is declared, never assumed: 20 concurrent transactions on a real PostgreSQL through the
// README's connector (and through one that declares nothing, as a new user writes it) each see only
// their own state. Given `clientLimit: 20`, the same transactions interleave on one client: the
// check can fail.
import { describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { pgConnector } from '../../lib/connectors/pg/index.js';
import { ConnectionPool, type Connector, type PoolOptions } from '../../lib/index.js';

const URL = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';
const CALLERS = 20;

/** A connector as a new user writes it from the README, without the clientLimit line. */
const undeclared: Connector<pg.Client> = {
  async create(ctx) {
    const client = new pg.Client({ connectionString: URL });
    client.on('error', (err: Error) => ctx.retire(err.message));
    await client.connect();
    return client;
  },
  close: (client) => client.end(),
};

/** Runs CALLERS transactions at once; returns how many saw another caller's state. */
async function transactions(
  connector: Connector<pg.Client>,
  options: PoolOptions = {},
): Promise<{ foreign: number; clientLimit: number; backends: number }> {
  const pool = new ConnectionPool(connector, { name: 'pg-sharing', maxSize: 4, ...options });
  const backends = new Set<number>();
  try {
    const seen = await Promise.all(
      Array.from({ length: CALLERS }, (_, i) =>
        pool.use(async (client) => {
          const me = `caller-${i}`;
          await client.query('BEGIN');
          await client.query("SELECT set_config('nsp.caller', $1, true)", [me]);
          await client.query('SELECT pg_sleep(0.01)');
          const { rows } = await client.query<{ caller: string; pid: number }>(
            "SELECT current_setting('nsp.caller') AS caller, pg_backend_pid() AS pid",
          );
          await client.query('COMMIT');
          backends.add(rows[0]!.pid);
          return rows[0]!.caller === me;
        }),
      ),
    );
    return {
      foreign: seen.filter((own) => !own).length,
      clientLimit: pool.stats().clientLimit,
      backends: backends.size,
    };
  } finally {
    await pool.close();
  }
}

describe('sharing a PostgreSQL client only when someone said so', () => {
  it('the README connector (clientLimit 1 declared): no transaction sees another caller’s state', async () => {
    const result = await transactions(pgConnector(URL));
    expect(result).toMatchObject({ foreign: 0, clientLimit: 1 });
    expect(result.backends).toBeGreaterThan(1);
  });

  it('a connector that declares nothing is exclusive by default: no transaction sees another caller’s state', async () => {
    expect(await transactions(undeclared)).toMatchObject({ foreign: 0, clientLimit: 1 });
  });

  it('clientLimit 20 given on purpose: the transactions interleave on one client, as they would have by default before', async () => {
    const result = await transactions(undeclared, { maxSize: 1, clientLimit: 20 });
    expect(result.clientLimit).toBe(20);
    expect(result.backends).toBe(1);
    expect(result.foreign).toBeGreaterThan(CALLERS / 2);
  });
});

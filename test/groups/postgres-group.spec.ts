// A pool group on a real PostgreSQL server: one database per tenant (made by the test), a shared
// budget smaller than the tenants' combined demand, and the server's own view of the connections
// (pg_stat_activity), which must never show more than maxTotal of the group's.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { PoolGroup, type Connector } from '../../lib/index.js';

const SERVER = 'postgres://postgres@127.0.0.1:5432';
const TENANTS = Array.from({ length: 6 }, (_, i) => `nsp_tenant_${i}`);
/** Marks the group's connections in pg_stat_activity. */
const APP = `nsp-group-${process.pid}`;

function tenantConnector(database: string): Connector<pg.Client> {
  return {
    async create(ctx) {
      const client = new pg.Client({ connectionString: `${SERVER}/${database}`, application_name: APP });
      client.on('error', (err: Error) => ctx.retire(err.message));
      await client.connect();
      return client;
    },
    close: (client) => client.end(),
  };
}

describe('a pool group of PostgreSQL databases', () => {
  const admin = new pg.Client({ connectionString: `${SERVER}/test`, application_name: 'nsp-group-admin' });
  const count = async () => Number((await admin.query<{ n: string }>('SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1', [APP])).rows[0]!.n);

  beforeAll(async () => {
    await admin.connect();
    for (const db of TENANTS) {
      await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
      await admin.query(`CREATE DATABASE ${db}`);
    }
  });

  afterAll(async () => {
    for (const db of TENANTS) await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
    await admin.end();
  });

  it('never has more connections on the server than maxTotal, and runs every tenant on its own database', async () => {
    const maxTotal = 4;
    const group = new PoolGroup<pg.Client>({ name: 'tenants', maxTotal, connector: tenantConnector, member: { clientLimit: 1, acquireTimeoutMs: 30_000 } });
    let peak = 0;
    let sampling = true;
    const monitor = (async () => {
      while (sampling) {
        peak = Math.max(peak, await count());
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    })();
    // Six tenants, five callers each, 10 ms queries: 30 callers want a connection, 4 may have one.
    const answers: { tenant: string; db: string; seen: number }[] = [];
    const worker = async (tenant: string) => {
      for (let i = 0; i < 6; i++) {
        const row = await group.use(tenant, async (client) => {
          const { rows } = await client.query<{ db: string; seen: string }>(
            'SELECT current_database() AS db, (SELECT count(*) FROM pg_stat_activity WHERE application_name = $1) AS seen, pg_sleep(0.01)',
            [APP],
          );
          return rows[0]!;
        });
        answers.push({ tenant, db: row.db, seen: Number(row.seen) });
      }
    };
    await Promise.all(TENANTS.flatMap((t) => Array.from({ length: 5 }, () => worker(t))));
    sampling = false;
    await monitor;

    expect(answers).toHaveLength(6 * 5 * 6);
    expect(answers.filter((a) => a.db !== a.tenant)).toEqual([]);
    const seen = Math.max(peak, ...answers.map((a) => a.seen));
    expect(seen).toBeLessThanOrEqual(maxTotal);
    expect(seen).toBeGreaterThanOrEqual(2); // the budget was in use, not one connection at a time
    expect(group.stats().transfers).toBeGreaterThan(0); // connections moved between tenants
    await group.close();
    for (let i = 0; i < 100 && (await count()) > 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await count()).toBe(0);
  }, 60_000);
});

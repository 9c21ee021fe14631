// Runs the connector specs share: tenants interleaved on a pool's connections, and callers driven
// through a server outage.
import type { ConnectionPool } from '../../lib/index.js';
import type { TcpProxy } from './tcp-proxy.js';
import { sleep, until } from './wait.js';

/** How a spec reads and sets a tenant's session state on its client. */
export interface TenantState<T> {
  /** The tenant the session holds now; empty or null when none. */
  read(conn: T): Promise<string | null>;
  /** Sets the tenant for the rest of the session (not the transaction). */
  write(conn: T, tenant: string): Promise<void>;
}

/**
 * `calls` calls of 20 tenants, interleaved by 12 workers on the pool's connections: each reads
 * the session's tenant before it sets its own. Returns how many found another tenant's there.
 */
export async function tenantLeaks<T>(pool: ConnectionPool<T>, state: TenantState<T>, calls = 500): Promise<number> {
  let leaks = 0;
  let next = 0;
  const worker = async () => {
    while (next < calls) {
      const tenant = `tenant-${next++ % 20}`;
      await pool.use(async (conn) => {
        if (((await state.read(conn)) ?? '') !== '') leaks++;
        await state.write(conn, tenant);
      });
    }
  };
  await Promise.all(Array.from({ length: 12 }, worker));
  return leaks;
}

/**
 * Callers in a loop through `call` while the server behind `proxy` goes away for `downMs` (every
 * session cut, connects refused) and comes back; resolves once 50 more calls succeeded after it
 * came back and every caller's last call has settled (none hung). Returns the outcomes.
 */
export async function throughOutage(
  proxy: TcpProxy,
  call: () => Promise<unknown>,
  { workers = 8, downMs = 500 } = {},
): Promise<{ ok: number; failed: number }> {
  const outcomes = { ok: 0, failed: 0 };
  let running = true;
  const worker = async () => {
    while (running) {
      await call().then(
        () => outcomes.ok++,
        () => outcomes.failed++,
      );
      await sleep(1);
    }
  };
  const loops = Array.from({ length: workers }, worker);
  try {
    await sleep(300);
    await proxy.down();
    await sleep(downMs);
    const okWhileDown = outcomes.ok;
    await proxy.up();
    await until(() => outcomes.ok > okWhileDown + 50, 10_000);
  } finally {
    running = false;
    await Promise.all(loops);
  }
  return outcomes;
}

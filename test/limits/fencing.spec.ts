// Fencing tokens on a real Redis and a real PostgreSQL: a holder frozen past its lease (its clock
// stood still, so it cannot tell) writes after the slot went to another holder; the store, which
// keeps the highest token it accepted, refuses the late write. What no lease can do alone.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { RedisLimiter } from '../../lib/index.js';
import { RecordingLogger } from '../support/harness.js';
import { namespace, REDIS_URL, started } from '../support/redis.js';
import { VirtualClock } from '../support/virtual-clock.js';

const DATABASE_URL = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';
const TABLE = `nsp_fenced_${process.pid}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('fencing tokens', () => {
  const db = new pg.Client({ connectionString: DATABASE_URL });

  beforeAll(async () => {
    await db.connect();
    await db.query(`CREATE TABLE ${TABLE} (id int PRIMARY KEY, fence bigint NOT NULL, value text NOT NULL)`);
    await db.query(`INSERT INTO ${TABLE} VALUES (1, 0, 'initial')`);
  });

  afterAll(async () => {
    await db.query(`DROP TABLE IF EXISTS ${TABLE}`);
    await db.end();
  });

  /** The store's side: a write carries its token and is refused unless it is the highest yet. */
  const write = async (fence: number, value: string) =>
    (await db.query(`UPDATE ${TABLE} SET fence = $1, value = $2 WHERE id = 1 AND fence < $1`, [fence, value])).rowCount;

  it('a store refuses the late write of a holder whose lease lapsed and was given to another', async () => {
    const ns = namespace();
    const redis = { url: REDIS_URL, namespace: ns, restartProtection: false, leaseTtlMs: 300, heartbeatMs: 100 };
    const frozenClock = new VirtualClock(); // time stands still for this holder: no heartbeat, no expiry
    const frozen = await started(
      new RedisLimiter({ global: 1, clock: frozenClock, logger: new RecordingLogger(), redis }),
    );
    const other = await started(new RedisLimiter({ global: 1, logger: new RecordingLogger(), redis }));

    const stale = await frozen.admit({ pool: 'jobs', timeoutMs: 0 });
    expect(stale.fence).toEqual(expect.any(Number));
    await sleep(400); // past the TTL: Redis let the lease lapse
    const current = await other.admit({ pool: 'jobs', timeoutMs: 0 });
    expect(current.fence!).toBeGreaterThan(stale.fence!);
    expect(stale.signal.aborted).toBe(false); // the frozen holder cannot know: its clock did not move

    expect(await write(current.fence!, 'by the current holder')).toBe(1);
    expect(await write(stale.fence!, 'by the holder that woke up')).toBe(0); // refused by the store
    const { rows } = await db.query<{ value: string; fence: string }>(`SELECT value, fence FROM ${TABLE} WHERE id = 1`);
    expect(rows[0]).toEqual({ value: 'by the current holder', fence: String(current.fence) });
    stale.release();
    current.release();
  });
});

// Keys from outside (a tenant header, a user id) cannot grow the process without bound: 100,000
// distinct keys through a group and through a per-key limiter, each with its default options.
import { describe, expect, it } from '@jest/globals';
import { ConnectionPool, LocalLimiter, PoolGroup } from '../../lib/index.js';
import { DEFAULT_MAX_MEMBERS } from '../../lib/groups/group-options.js';
import { liveHeap } from '../support/gc.js';
import { VirtualClock } from '../support/virtual-clock.js';

const KEYS = 100_000;
const BATCH = 1_000;
const quiet = { warn: () => {}, error: () => {} };
const MB = 1024 * 1024;

describe('keys from outside', () => {
  it(`take at most maxMembers (${DEFAULT_MAX_MEMBERS} by default) places in a group: 100,000 distinct keys grow the heap by under 50 MB`, async () => {
    // On virtual time: places move from members that used them lately to new keys at the group's
    // rebalance ticks (a member's recent need fades tick by tick), which real time would wait for.
    const clock = new VirtualClock();
    const group = new PoolGroup<object>({
      name: 'tenants',
      maxTotal: 200,
      clock,
      metrics: false,
      logger: quiet,
      connector: () => ({ create: async () => ({}) }),
    });
    const before = liveHeap();
    let most = 0;
    for (let i = 0; i < KEYS; i += BATCH) {
      let done = false;
      const batch = Promise.all(
        Array.from({ length: BATCH }, (_, j) => group.use(`tenant-${i + j}`, () => i + j)),
      ).finally(() => (done = true));
      while (!done) await clock.advance(100);
      await batch;
      if (i % (BATCH * 10) === 0) most = Math.max(most, group.stats().members.length);
    }
    const grown = (liveHeap() - before) / MB;
    const stats = group.stats();
    expect(most).toBeLessThanOrEqual(DEFAULT_MAX_MEMBERS);
    expect(stats.members.length).toBe(DEFAULT_MAX_MEMBERS);
    expect(stats.forgotten).toBe(KEYS - DEFAULT_MAX_MEMBERS);
    expect(stats.total).toBeLessThanOrEqual(200);
    // The most recent keys stay; the first ones were evicted, and come back as new members.
    expect(group.member(`tenant-${KEYS - 1}`)).toBeDefined();
    expect(group.member('tenant-0')).toBeUndefined();
    const back = group.use('tenant-0', () => 'back');
    await clock.advance(1_000);
    await expect(back).resolves.toBe('back');
    console.log(
      `group: ${KEYS} keys, heap grown by ${grown.toFixed(1)} MB for ${stats.members.length} members (${((grown * MB) / stats.members.length / 1024).toFixed(1)} KB a member)`,
    );
    expect(grown).toBeLessThan(50);
    await group.close();
  }, 120_000);

  it('leave nothing behind in a per-key limiter: 100,000 distinct keys grow the heap by under 50 MB', async () => {
    const limiter = new LocalLimiter({ perKey: 2 });
    const pool = new ConnectionPool(
      { clientLimit: 1_000, create: async () => ({}) },
      { name: 'api', maxSize: 2, limiter, metrics: false, logger: quiet },
    );
    const before = liveHeap();
    for (let i = 0; i < KEYS; i += BATCH)
      await Promise.all(Array.from({ length: BATCH }, (_, j) => pool.use(() => i + j, { key: `user-${i + j}` })));
    const grown = (liveHeap() - before) / MB;
    const stats = limiter.stats();
    expect(stats).toMatchObject({ held: 0, used: 0, counters: { admitted: KEYS, released: KEYS } });
    expect(stats.topKeys).toEqual([]);
    console.log(`per-key limiter: ${KEYS} keys, heap grown by ${grown.toFixed(1)} MB`);
    expect(grown).toBeLessThan(50);
    await pool.close();
  }, 120_000);
});

// Keys from outside (a tenant header, a user id) cannot grow the process without bound: tens of
// thousands of distinct keys through a group and through a per-key limiter, each with its defaults.
import { describe, expect, it } from '@jest/globals';
import { ConnectionPool, LocalLimiter, PoolGroup } from '../../lib/index.js';
import { DEFAULT_MAX_MEMBERS } from '../../lib/groups/group-options.js';
import { liveHeap } from '../support/gc.js';
import { VirtualClock } from '../support/virtual-clock.js';

const KEYS = 100_000;
// Each key a group meets builds a member pool and forgets another one (about 0.25 ms apiece here,
// five times that beside the rest of the suite): fewer keys, measured once the group is full.
const GROUP_KEYS = 20_000;
const BATCH = 1_000;
const quiet = { warn: () => {}, error: () => {} };
const MB = 1024 * 1024;

describe('keys from outside', () => {
  it(`take at most maxMembers (${DEFAULT_MAX_MEMBERS} by default) places in a group: past them, ${GROUP_KEYS.toLocaleString('en')} more distinct keys grow the heap by under 5 MB`, async () => {
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
    let most = 0;
    const run = async (from: number, to: number): Promise<void> => {
      for (let i = from; i < to; i += BATCH) {
        let done = false;
        const batch = Promise.all(
          Array.from({ length: BATCH }, (_, j) => group.use(`tenant-${i + j}`, () => i + j)),
        ).finally(() => (done = true));
        while (!done) await clock.advance(100);
        await batch;
        most = Math.max(most, group.stats().members.length);
      }
    };
    // The group first fills to maxMembers and starts forgetting; what it holds from then on is
    // what a leak per key would add to: every later key is forgotten again.
    const warm = 2 * DEFAULT_MAX_MEMBERS;
    await run(0, warm);
    const before = liveHeap();
    await run(warm, warm + GROUP_KEYS);
    const grown = (liveHeap() - before) / MB;
    const stats = group.stats();
    const keys = warm + GROUP_KEYS;
    expect(most).toBeLessThanOrEqual(DEFAULT_MAX_MEMBERS);
    expect(stats.members.length).toBe(DEFAULT_MAX_MEMBERS);
    expect(stats.forgotten).toBe(keys - DEFAULT_MAX_MEMBERS);
    expect(stats.total).toBeLessThanOrEqual(200);
    // The most recent keys stay; the first ones were evicted, and come back as new members.
    expect(group.member(`tenant-${keys - 1}`)).toBeDefined();
    expect(group.member('tenant-0')).toBeUndefined();
    const back = group.use('tenant-0', () => 'back');
    await clock.advance(1_000);
    await expect(back).resolves.toBe('back');
    console.log(
      `group: ${GROUP_KEYS} keys past ${warm}, heap grown by ${grown.toFixed(1)} MB (${((grown * MB) / GROUP_KEYS).toFixed(0)} B a key)`,
    );
    expect(grown).toBeLessThan(5);
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

// A pool group on a FleetBudget, through a real Redis of the test's own: two instances, each a
// group of tenants with a maxTotal of its own larger than the fleet's budget, never have more
// connections between them than the budget; every tenant of both is served; a group shares what
// it holds between its members while they wait for places; nothing is left in Redis after close.
import { afterEach, describe, expect, it } from '@jest/globals';
import { FleetBudget, PoolConfigError, PoolGroup } from '../../lib/index.js';
import { budgetRedis } from '../support/budget-redis.js';

const quiet = { warn: () => {}, error: () => {} };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a pool group on a FleetBudget', () => {
  const redis = budgetRedis();
  const places = (name: string) => redis.places(name);
  const closeAfter: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    for (const thing of closeAfter.splice(0)) await thing.close();
  });

  /** Connections open at the server, every instance's, and the most at once. */
  const server = { open: 0, most: 0 };
  const connector = () => ({
    create: async () => {
      server.open++;
      server.most = Math.max(server.most, server.open);
      await sleep(10);
      return {};
    },
    close: async () => {
      await sleep(2);
      server.open--;
    },
  });

  it('holds two instances’ groups to the fleet’s budget, and serves every tenant of both', async () => {
    Object.assign(server, { open: 0, most: 0 });
    const instances = [0, 1].map((i) => {
      const budget = new FleetBudget({
        name: 'tenants-db',
        maxTotal: 6,
        redis: { url: redis.url, leaseTtlMs: 1_000 },
        logger: quiet,
        metrics: false,
      });
      const group = new PoolGroup({
        name: `tenants-${i}`,
        maxTotal: 10, // more than the fleet's budget: the fleet binds
        connector,
        budget,
        logger: quiet,
        metrics: false,
      });
      return { budget, group };
    });
    closeAfter.push(...instances.map((i) => i.group), ...instances.map((i) => i.budget));
    await Promise.all(instances.map((i) => i.budget.start()));
    expect(instances.map((i) => i.budget.pools)).toEqual([1, 1]); // each group counts once

    // Three tenants on each instance, 8 callers each, 40 calls of 15 ms each: 48 callers for 6 places.
    const served = new Map<string, number>();
    await Promise.all(
      instances.flatMap(({ group }, i) =>
        ['a', 'b', 'c'].flatMap((tenant) =>
          Array.from({ length: 8 }, async () => {
            for (let n = 0; n < 5; n++) {
              await group.use(
                tenant,
                async () => {
                  await sleep(15);
                  served.set(`${i}:${tenant}`, (served.get(`${i}:${tenant}`) ?? 0) + 1);
                },
                { timeoutMs: 20_000 },
              );
            }
          }),
        ),
      ),
    );
    expect(server.most).toBeLessThanOrEqual(6);
    expect(server.most).toBeGreaterThanOrEqual(3); // the budget was used, not one connection at a time
    // Every tenant of both instances served all its calls.
    expect([...served.values()]).toEqual(Array(6).fill(40));
    // Each instance held places (no instance starved the other of the fleet's budget).
    for (const { group } of instances) expect(group.stats().members.length).toBe(3);
    // A member's stats name the fleet's budget, as a pool's own budget is named.
    expect(instances[0]!.group.member('a')!.stats().budget).toEqual({ name: 'tenants-db', holdsBack: false });

    for (const { group } of instances) await group.close();
    expect(instances.map((i) => i.budget.pools)).toEqual([0, 0]);
    expect(server.open).toBe(0);
    // Places granted but not taken yet (spare) go back within 1.5 s, or at the budget's close.
    for (const { budget } of instances) await budget.close();
    expect(await places('tenants-db')).toBe(0);
  }, 60_000);

  it('names no budget in a member’s stats when the group has none', async () => {
    const group = new PoolGroup({ name: 'plain', maxTotal: 2, connector, logger: quiet, metrics: false });
    closeAfter.push(group);
    await group.use('a', () => sleep(1));
    expect(group.member('a')!.stats()).not.toHaveProperty('budget');
  });

  it('refuses a budget that is not one, and a budget in the member options', () => {
    expect(
      () => new PoolGroup({ name: 'g', maxTotal: 2, connector, budget: { maxTotal: 5 } as never, logger: quiet }),
    ).toThrow('pool group "g": option "budget" must be a FleetBudget (from nestjs-shared-pool/groups)');
    const budget = new FleetBudget({ name: 'x', maxTotal: 2, redis: { url: redis.url }, logger: quiet });
    expect(
      () => new PoolGroup({ name: 'g', maxTotal: 2, connector, member: { budget } as never, logger: quiet }),
    ).toThrow(PoolConfigError);
    expect(
      () => new PoolGroup({ name: 'g', maxTotal: 2, connector, member: { budget } as never, logger: quiet }),
    ).toThrow(/give a FleetBudget to the group's own budget option/);
  });
});

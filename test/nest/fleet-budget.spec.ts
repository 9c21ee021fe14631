// A FleetBudget in a Nest app: PoolModule starts the budgets its pools share before they warm up
// (a fleet budget's first places wait one lease TTL, which then runs during boot) and closes each
// after its pools on shutdown, unless a pool made elsewhere is still open on it.
import { describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import {
  ConnectionPool,
  FleetBudget,
  getPoolToken,
  InjectPool,
  PoolGroup,
  PoolHealthIndicator,
  PoolModule,
} from '../../lib/index.js';
import { FakeConnector } from '../support/fake-connector.js';
import { budgetRedis } from '../support/budget-redis.js';
import { boot } from '../support/nest.js';
import { until } from '../support/wait.js';

const quiet = { warn: () => {}, error: () => {} };

@Injectable()
class Orders {
  constructor(
    @InjectPool('orders') readonly orders: ConnectionPool<unknown>,
    @InjectPool('reports') readonly reports: ConnectionPool<unknown>,
  ) {}
}

describe('a FleetBudget in PoolModule', () => {
  const redis = budgetRedis();

  /** Clients connected to the test's Redis, the inspector left out. */
  const clients = async () =>
    String(await redis.inspector.client('LIST'))
      .trim()
      .split('\n').length - 1;
  const places = (name: string) => redis.places(name);
  const budgetOf = (name: string) =>
    new FleetBudget({ name, maxTotal: 3, redis: { url: redis.url, leaseTtlMs: 500 }, logger: quiet });

  it('is started at boot, serves its pools, and is closed with them', async () => {
    const budget = budgetOf('nest-owned');
    const before = await clients();
    const connector = new FakeConnector();
    const app = await boot({
      imports: [
        PoolModule.forRoot({
          pools: [
            { name: 'orders', connector, options: { maxSize: 5, budget } },
            { name: 'reports', connector, options: { maxSize: 5, budget } },
          ],
        }),
      ],
      providers: [Orders],
    });
    // Connected at boot, before any caller asked for a place.
    expect(await clients()).toBeGreaterThan(before);
    expect(budget.pools).toBe(2);
    const { orders, reports } = app.get(Orders);
    let most = 0;
    const calls = Array.from({ length: 12 }, (_, i) =>
      (i % 2 === 0 ? orders : reports).use(async () => {
        most = Math.max(most, connector.live.size);
        await new Promise((r) => setTimeout(r, 20));
      }),
    );
    await Promise.all(calls);
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(3); // the budget, across both pools
    expect(await places('nest-owned')).toBeGreaterThan(0);
    // The health check names the budget of each pool.
    const health = app.get(PoolHealthIndicator).isHealthy('pools');
    expect(health.pools.orders).toMatchObject({ budget: { name: 'nest-owned', holdsBack: false } });
    expect(health.pools.reports).toMatchObject({ budget: { name: 'nest-owned', holdsBack: false } });

    await app.close();
    expect(budget.pools).toBe(0);
    expect(connector.live.size).toBe(0);
    expect(await places('nest-owned')).toBe(0); // given back, not left to lapse
    await until(async () => (await clients()) === before, 2_000); // and disconnected
  });

  it('starts and closes the budget of a pool group as a pool’s', async () => {
    const budget = budgetOf('nest-group');
    const before = await clients();
    const connectors = new Map<string, FakeConnector>();
    const app = await boot({
      imports: [
        PoolModule.forRoot({
          groups: [
            {
              name: 'tenants',
              connector: (key: string) => {
                const c = new FakeConnector();
                connectors.set(key, c);
                return c;
              },
              options: { maxTotal: 10, budget },
            },
          ],
        }),
      ],
    });
    expect(await clients()).toBeGreaterThan(before); // started at boot
    expect(budget.pools).toBe(1);
    const group = app.get<PoolGroup<unknown>>(getPoolToken('tenants'));
    let most = 0;
    const live = () => [...connectors.values()].reduce((n, c) => n + c.live.size, 0);
    await Promise.all(
      ['a', 'b', 'c', 'd'].flatMap((tenant) =>
        Array.from({ length: 3 }, () =>
          group.use(tenant, async () => {
            most = Math.max(most, live());
            await new Promise((r) => setTimeout(r, 20));
          }),
        ),
      ),
    );
    expect(most).toBeLessThanOrEqual(3); // the fleet's budget, not the group's 10
    await app.close();
    expect(budget.pools).toBe(0);
    expect(live()).toBe(0);
    expect(await places('nest-group')).toBe(0);
    await until(async () => (await clients()) === before, 2_000);
  });

  it('stays open while a pool made outside the app still uses it', async () => {
    const budget = budgetOf('shared-outside');
    const connector = new FakeConnector();
    const outside = new ConnectionPool(connector, { name: 'outside', maxSize: 2, budget, logger: quiet });
    try {
      const app = await boot({
        imports: [PoolModule.forRoot({ pools: [{ name: 'orders', connector, options: { maxSize: 2, budget } }] })],
      });
      expect(budget.pools).toBe(2);
      await app.close();
      expect(budget.pools).toBe(1);
      // The budget still grants places: the outside pool opens and serves.
      await expect(outside.use(async () => 'served')).resolves.toBe('served');
      expect(await places('shared-outside')).toBeGreaterThanOrEqual(1);
    } finally {
      await outside.close();
      await budget.close();
    }
    expect(await places('shared-outside')).toBe(0);
  });
});

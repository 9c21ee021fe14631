import { describe, expect, it } from '@jest/globals';
import { TerminusModule } from '@nestjs/terminus';
import { PoolHealthIndicator, PoolModule, getPoolToken, type ConnectionPool } from '../../lib/index.js';
import { FakeConnector } from '../support/fake-connector.js';
import { boot } from '../support/nest.js';

describe('PoolHealthIndicator', () => {
  async function setup() {
    const failing = new FakeConnector();
    for (let i = 0; i < 20; i++)
      failing.createSteps.push({ kind: 'fail', error: new Error('connect ECONNREFUSED 10.0.0.9:5432') });
    const moduleRef = await boot({
      imports: [
        TerminusModule,
        PoolModule.forRoot({
          pools: [
            { name: 'db', connector: new FakeConnector(), options: { maxSize: 1, clientLimit: 4 } },
            { name: 'pg', connector: failing, options: { maxSize: 1, clientLimit: 1, acquireTimeoutMs: 20 } },
          ],
        }),
      ],
    });
    return { indicator: moduleRef.get(PoolHealthIndicator), moduleRef };
  }

  it('reports only the pools named, and a name no pool has as missing and down', async () => {
    const { indicator } = await setup();
    expect(indicator.isHealthy('db-only', { pools: ['db'] })).toEqual({
      'db-only': {
        status: 'up',
        db: {
          health: 'healthy',
          size: 0,
          ready: 0,
          maxSize: 1,
          clients: 0,
          clientLimit: 4,
          utilization: 0,
          waiting: 0,
          lastError: null,
        },
      },
    });
    expect(indicator.isHealthy('typo', { pools: ['bd'] })).toEqual({
      typo: {
        status: 'down',
        bd: {
          health: 'missing',
          size: 0,
          ready: 0,
          maxSize: 0,
          clients: 0,
          clientLimit: 0,
          utilization: 0,
          waiting: 0,
          lastError: 'no pool named "bd" in this application',
        },
      },
    });
  });

  it('is down with the last error when a pool cannot connect, and the worst pool sets the status', async () => {
    const { indicator, moduleRef } = await setup();
    const pg = moduleRef.get<ConnectionPool<unknown>>(getPoolToken('pg'));
    // A transient error is retried within the deadline: the caller fails at it, with the connect error as cause.
    const failure = await pg.acquire().catch((err: unknown) => err as Error & { reason: string });
    expect(failure).toMatchObject({ code: 'CONNECTIONS_EXHAUSTED', reason: 'creates-failing' });
    expect(((failure as Error).cause as Error).message).toContain('connect ECONNREFUSED 10.0.0.9:5432');
    const result = indicator.isHealthy('pools');
    expect(result.pools.status).toBe('down');
    expect(result.pools.db).toMatchObject({ health: 'healthy' });
    expect(result.pools.pg).toMatchObject({
      health: 'failing',
      ready: 0,
      lastError: expect.stringContaining('ECONNREFUSED 10.0.0.9:5432'),
    });
  });

  it('needs nothing of Terminus, and lets the app choose which pool states are down', async () => {
    const moduleRef = await boot({
      imports: [
        PoolModule.forRoot({
          pools: [{ name: 'db', connector: new FakeConnector(), options: { maxSize: 1, clientLimit: 2 } }],
        }),
      ],
    });
    const indicator = moduleRef.get(PoolHealthIndicator);
    const db = moduleRef.get<ConnectionPool<unknown>>(getPoolToken('db'));
    const leases = [await db.acquire(), await db.acquire()];
    expect(db.health()).toBe('exhausted');
    // Readiness (the default): an exhausted pool takes the pod out of the load balancer.
    expect(indicator.isHealthy('ready')).toEqual({
      ready: { status: 'down', db: expect.objectContaining({ health: 'exhausted', clients: 2 }) },
    });
    // Liveness: only a pool that cannot connect is down; a busy one is degraded, so it is not restarted.
    expect(indicator.isHealthy('live', { downOn: ['failing'] }).live.status).toBe('degraded');
    expect(
      indicator.isHealthy('strict', { downOn: ['degraded', 'critical', 'exhausted', 'failing'] }).strict.status,
    ).toBe('down');
    expect(() => indicator.isHealthy('x', { downOn: ['healthy' as never] })).toThrow(
      'PoolHealthIndicator.isHealthy: option "downOn" must list pool states among degraded, critical, exhausted, failing; got "healthy"',
    );
    for (const lease of leases) lease.release();
    expect(indicator.isHealthy('live', { downOn: ['failing'] }).live.status).toBe('up');
  });

  it('reports priority classes and a pool queue under controlled waiting', async () => {
    const moduleRef = await boot({
      imports: [
        PoolModule.forRoot({
          limits: { global: 1, classes: [{ name: 'live', share: 0.5 }, { name: 'batch' }] },
          pools: [
            {
              name: 'llm',
              connector: new FakeConnector(),
              options: { clientLimit: 10, waiting: { mode: 'controlled' } },
            },
          ],
        }),
      ],
    });
    const indicator = moduleRef.get(PoolHealthIndicator);
    const llm = moduleRef.get<ConnectionPool<unknown>>(getPoolToken('llm'));
    const held = await llm.acquire({ class: 'live' });
    await expect(llm.acquire({ class: 'batch', timeoutMs: 20 })).rejects.toMatchObject({ code: 'CAPACITY_EXCEEDED' });
    expect(indicator.isHealthy('pools').pools.llm).toMatchObject({
      standing: { standing: false, shed: 0 },
      admission: {
        classes: [
          { name: 'live', used: 1, waiting: 0, refused: 0 },
          { name: 'batch', used: 0, waiting: 0, refused: 1 },
        ],
      },
    });
    held.release();
  });

  it('reports an adaptive limit: its algorithm, whether it is shared, the pause asked for and its last change', async () => {
    const moduleRef = await boot({
      imports: [
        PoolModule.forRoot({
          limits: { adaptive: { algorithm: 'aimd', initial: 8, backoff: 0.5 } },
          pools: [{ name: 'llm', connector: new FakeConnector(), options: { clientLimit: 10 } }],
        }),
      ],
    });
    const indicator = moduleRef.get(PoolHealthIndicator);
    const llm = moduleRef.get<ConnectionPool<unknown>>(getPoolToken('llm'));
    expect(indicator.isHealthy('pools').pools.llm).toMatchObject({
      admission: {
        mode: 'local',
        used: 0,
        limit: 8,
        adaptive: { algorithm: 'aimd', shared: false, pausedMs: 0, lastChange: null },
        // An adaptive limit waits under controlled waiting: its queue's state, not standing yet.
        standing: { standing: false, targetMs: null, shed: 0 },
      },
    });
    await llm.use(async () => ({ status: 429, headers: { 'retry-after': '3' } }));
    const { admission } = indicator.isHealthy('pools').pools.llm as {
      admission: { limit: number; adaptive: { pausedMs: number; lastChange: unknown } };
    };
    expect(admission.limit).toBe(4);
    expect(admission.adaptive.lastChange).toEqual({ from: 8, to: 4, reason: 'overload' });
    expect(admission.adaptive.pausedMs).toBeGreaterThan(2_900);
    expect(admission.adaptive.pausedMs).toBeLessThanOrEqual(3_000);
  });
});

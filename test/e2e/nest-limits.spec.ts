import { afterEach, describe, expect, it } from '@jest/globals';
import { Controller, Get, Headers, Inject, Injectable, Module, type INestApplication } from '@nestjs/common';
import { TerminusModule, HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import { getPoolToken, PoolHealthIndicator, PoolModule, UsePooled, type ConnectionPool } from '../../lib/index.js';
import { FakeConnector } from '../support/fake-connector.js';
import { RecordingNestLogger } from '../support/nest.js';
import { namespace, REDIS_URL } from '../support/redis.js';

// Two instances of one app share a Redis limiter: 6 leases at once in all, 2 per user.
// Both run in this process, so one set of counters sees the work of both.
const running = { total: 0, maxTotal: 0, perUser: new Map<string, number>(), maxPerUser: 0 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

@Injectable()
class Work {
  @UsePooled('api', { key: (user: unknown) => String(user) })
  async run(user: string): Promise<string> {
    running.total++;
    running.perUser.set(user, (running.perUser.get(user) ?? 0) + 1);
    running.maxTotal = Math.max(running.maxTotal, running.total);
    running.maxPerUser = Math.max(running.maxPerUser, running.perUser.get(user)!);
    await sleep(40);
    running.total--;
    running.perUser.set(user, running.perUser.get(user)! - 1);
    return 'done';
  }
}

@Controller()
class WorkController {
  constructor(
    private readonly work: Work,
    @Inject(getPoolToken('api')) private readonly pool: ConnectionPool<unknown>,
    private readonly health: HealthCheckService,
    private readonly pools: PoolHealthIndicator,
  ) {}

  @Get('work')
  run(@Headers('x-user-id') user: string) {
    return this.work.run(user);
  }

  @Get('pools')
  stats() {
    const { admission, clients, health } = this.pool.stats();
    return { health, clients, admission };
  }

  @Get('health')
  @HealthCheck()
  check() {
    return this.health.check([() => this.pools.isHealthy('pools')]);
  }
}

function appModule(ns: string) {
  @Module({
    imports: [
      TerminusModule,
      PoolModule.forRoot({
        httpErrors: true,
        limits: {
          global: 6,
          perKey: 2,
          retryAfterMs: 2_000,
          // A TTL of 3 s: the second app's boot and the first health call fall within its quarantine on a busy machine too.
          redis: { url: REDIS_URL, namespace: ns, leaseTtlMs: 3_000 },
        },
        pools: [{ name: 'api', connector: new FakeConnector(), options: { clientLimit: 100 } }],
      }),
    ],
    providers: [Work],
    controllers: [WorkController],
  })
  class AppModule {}
  return AppModule;
}

const healthOf = async (url: string) => (await (await fetch(`${url}/health`)).json()) as { status: string };

describe('two app instances sharing limits on Redis', () => {
  const apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  async function boot(ns: string): Promise<string> {
    const moduleRef = await Test.createTestingModule({ imports: [appModule(ns)] })
      .setLogger(new RecordingNestLogger())
      .compile();
    const app = moduleRef.createNestApplication();
    apps.push(app);
    await app.listen(0, '127.0.0.1');
    return (await app.getUrl()).replace('[::1]', '127.0.0.1');
  }

  it('never run more than the limits together, answer 429/503 past them, and report the limiter', async () => {
    const ns = namespace();
    const [a, b] = [await boot(ns), await boot(ns)];
    // A namespace never used starts with one TTL of quarantine: health says so.
    const quarantined = (await (await fetch(`${a}/health`)).json()) as {
      status: string;
      info: { pools: { api: { admission: { mode: string } } } };
    };
    expect(quarantined.status).toBe('degraded');
    expect(quarantined.info.pools.api.admission.mode).toBe('quarantine');
    for (let waited = 0; waited < 6_000 && (await healthOf(a)).status !== 'ok'; waited += 100) await sleep(100);
    expect((await healthOf(b)).status).toBe('ok');

    // One user alone: the global limit has room, the per-key one bites.
    const alone = await Promise.all(
      Array.from({ length: 10 }, (_, i) => fetch(`${i % 2 === 0 ? a : b}/work`, { headers: { 'x-user-id': 'ann' } })),
    );
    // Many users at once: the global limit bites.
    const users = ['ann', 'bob', 'cy', 'dee'];
    const crowd = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        fetch(`${i % 2 === 0 ? a : b}/work`, { headers: { 'x-user-id': users[i % users.length] } }),
      ),
    );
    const responses = [...alone, ...crowd];
    const statuses = responses.map((r) => r.status);
    const tooMany = alone.find((r) => r.status === 429)!;
    const full = crowd.find((r) => r.status === 503)!;
    expect(running.maxTotal).toBeLessThanOrEqual(6);
    expect(running.maxPerUser).toBeLessThanOrEqual(2);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(6);
    expect(tooMany.headers.get('retry-after')).toBe('2');
    expect(await tooMany.json()).toMatchObject({ statusCode: 429, code: 'KEY_LIMIT', pool: 'api' });
    expect(full.headers.get('retry-after')).toBe('2');
    expect(await full.json()).toMatchObject({ statusCode: 503, code: 'CAPACITY_EXCEEDED', pool: 'api' });
    expect(new Set(statuses)).toEqual(new Set([200, 429, 503]));

    // The count of leases in Redis is as of the last call or heartbeat (every TTL / 3).
    const pools = async () => (await (await fetch(`${b}/pools`)).json()) as { admission: { used: number } };
    for (let waited = 0; waited < 3_000 && (await pools()).admission.used > 0; waited += 100) await sleep(100);
    expect(await pools()).toEqual({
      health: 'healthy',
      clients: 0,
      admission: expect.objectContaining({ mode: 'redis', used: 0, limit: 6, perKey: 2, held: 0, health: 'healthy' }),
    });
  });
});

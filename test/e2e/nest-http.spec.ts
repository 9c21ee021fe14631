import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Controller, Get, Inject, Injectable, Module, Param, type INestApplication } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import { request as httpRequest } from 'node:http';
import { interval, map, Observable, take } from 'rxjs';
import {
  getPoolToken,
  KeyLimitError,
  PoolHealthIndicator,
  PoolModule,
  UsePooled,
  type ConnectionPool,
  type Lease,
} from '../../lib/index.js';
import { FakeConnector, type FakeConnection } from '../support/fake-connector.js';
import { RecordingNestLogger } from '../support/nest.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

@Injectable()
class Items {
  constructor(@Inject(getPoolToken('db')) private readonly db: ConnectionPool<FakeConnection>) {}

  @UsePooled('db')
  async find(id: string, delayMs: number): Promise<{ id: string; connection: number }> {
    await sleep(delayMs);
    return { id, connection: this.db.current.id };
  }
}

@Controller()
class ItemsController {
  constructor(
    private readonly items: Items,
    private readonly health: HealthCheckService,
    private readonly pools: PoolHealthIndicator,
  ) {}

  @Get('items/:id')
  item(@Param('id') id: string) {
    return this.items.find(id, 2);
  }

  @Get('slow/:id')
  slow(@Param('id') id: string) {
    return this.items.find(id, 300);
  }

  @UsePooled('db')
  @Get('ticks')
  ticks(): Observable<number> {
    return interval(1).pipe(
      take(3),
      map((n) => n),
    );
  }

  @Get('limited')
  limited(): never {
    throw new KeyLimitError('db', 'user:ann', 5, 1_500);
  }

  // No declared return type: the stream is found at run time, and its lease held until it ends.
  @UsePooled('db')
  @Get('ticks-undeclared')
  ticksUndeclared() {
    return interval(1).pipe(take(3));
  }

  @Get('health')
  @HealthCheck()
  check() {
    return this.health.check([() => this.pools.isHealthy('pools')]);
  }

  @Get('health/live')
  @HealthCheck()
  live() {
    return this.health.check([() => this.pools.isHealthy('pools', { downOn: ['failing'] })]);
  }
}

@Module({
  imports: [
    TerminusModule,
    PoolModule.forRoot({
      httpErrors: true,
      pools: [
        { name: 'db', connector: new FakeConnector(), options: { maxSize: 2, clientLimit: 5, acquireTimeoutMs: 150 } },
      ],
    }),
  ],
  providers: [Items],
  controllers: [ItemsController],
})
class AppModule {}

/** A GET on a connection of its own (no keep-alive), so a closed server refuses it. */
function get(
  base: string,
  path: string,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${base}${path}`, { agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () =>
        resolve({ status: res.statusCode!, headers: res.headers, body: text === '' ? undefined : JSON.parse(text) }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

const healthy = {
  health: 'healthy',
  size: 1,
  ready: 1,
  maxSize: 2,
  clients: 0,
  clientLimit: 5,
  utilization: 0,
  waiting: 0,
  lastError: null,
};

describe.each([
  ['Express', () => new ExpressAdapter()],
  ['Fastify', () => new FastifyAdapter()],
])('a pooled Nest app on %s', (_platform, adapter) => {
  let app: INestApplication;
  let base: string;
  let pool: ConnectionPool<FakeConnection>;
  let closedByTest = false;
  const held: Lease<FakeConnection>[] = [];

  beforeEach(async () => {
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
      .setLogger(new RecordingNestLogger())
      .compile();
    app = moduleRef.createNestApplication(adapter());
    await app.listen(0, '127.0.0.1');
    base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    pool = app.get(getPoolToken('db'));
    closedByTest = false;
  });

  afterEach(async () => {
    for (const lease of held.splice(0)) lease.release();
    if (!closedByTest) await app.close();
  });

  const hold = async (n: number) => {
    for (let i = 0; i < n; i++) held.push(await pool.acquire());
  };

  it('serves 200 concurrent requests on shared connections and leaks no lease', async () => {
    const responses = await Promise.all(Array.from({ length: 200 }, (_, i) => fetch(`${base}/items/${i}`)));
    const bodies = (await Promise.all(responses.map((r) => r.json()))) as { id: string; connection: number }[];
    expect(responses.every((r) => r.status === 200)).toBe(true);
    expect(bodies.map((b) => b.id)).toEqual(Array.from({ length: 200 }, (_, i) => String(i)));
    expect(new Set(bodies.map((b) => b.connection)).size).toBeLessThanOrEqual(2);
    expect(pool.stats()).toMatchObject({ clients: 0, waiting: 0, counters: { acquired: 200, released: 200 } });
  });

  it('holds the lease of an Observable route until the stream completes', async () => {
    const response = await get(base, '/ticks');
    expect(response).toMatchObject({ status: 200, body: 2 });
    expect(pool.stats()).toMatchObject({ clients: 0, counters: { acquired: 1, released: 1 } });
  });

  it('reports /health up, degraded and down, in full', async () => {
    await get(base, '/items/warm');
    const up = { pools: { status: 'up', db: healthy } };
    expect(await get(base, '/health')).toMatchObject({ status: 200 });
    expect((await get(base, '/health')).body).toEqual({ status: 'ok', info: up, error: {}, details: up });

    await hold(7);
    const degraded = {
      pools: {
        status: 'degraded',
        db: { ...healthy, health: 'degraded', size: 2, ready: 2, clients: 7, utilization: 0.7 },
      },
    };
    const partly = await get(base, '/health');
    expect(partly.status).toBe(200);
    expect(partly.body).toEqual({ status: 'degraded', info: degraded, error: {}, details: degraded });

    await hold(3);
    const down = {
      pools: {
        status: 'down',
        db: { ...healthy, health: 'exhausted', size: 2, ready: 2, clients: 10, utilization: 1 },
      },
    };
    const response = await get(base, '/health');
    expect(response.status).toBe(503);
    expect(response.body).toEqual({ status: 'error', info: {}, error: down, details: down });
    // The liveness check counts only a pool that cannot connect as down: a busy pod stays alive.
    const live = await get(base, '/health/live');
    expect(live.status).toBe(200);
    expect(live.body).toMatchObject({
      status: 'degraded',
      info: { pools: { status: 'degraded', db: { health: 'exhausted' } } },
    });
  });

  it('holds the lease of a route that returns an Observable without declaring it until the stream ends', async () => {
    const response = await get(base, '/ticks-undeclared');
    expect(response).toMatchObject({ status: 200, body: 2 });
    expect(pool.stats()).toMatchObject({ clients: 0, counters: { acquired: 1, released: 1 } });
  });

  it('answers 503 with Retry-After and a JSON body naming the pool when no connection is free', async () => {
    await hold(10);
    const response = await get(base, '/items/1');
    expect(response.status).toBe(503);
    expect(response.headers['retry-after']).toBe('1');
    expect(response.body).toEqual({
      statusCode: 503,
      error: 'Service Unavailable',
      code: 'CONNECTIONS_EXHAUSTED',
      pool: 'db',
      message:
        'pool "db": no connection within 150 ms: every connection was busy; raise maxSize or clientLimit, or hold leases for less time',
    });
  });

  it('answers 429 with Retry-After for a per-key limit', async () => {
    const response = await get(base, '/limited');
    expect(response.status).toBe(429);
    expect(response.headers['retry-after']).toBe('2');
    expect(response.body).toEqual({
      statusCode: 429,
      error: 'Too Many Requests',
      code: 'KEY_LIMIT',
      pool: 'db',
      message: 'pool "db": key "user:ann" already holds its limit of 5 concurrent leases; retry later',
    });
  });

  it('shuts down gracefully: requests in flight finish, new ones are refused, the pool closes', async () => {
    const inFlight = Array.from({ length: 8 }, (_, i) => get(base, `/slow/${i}`));
    while (pool.stats().clients < 8) await sleep(5);
    closedByTest = true;
    const closing = app.close();
    await sleep(50);
    await expect(get(base, '/items/late')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    const done = await Promise.all(inFlight);
    expect(done.map((r) => r.status)).toEqual(Array(8).fill(200));
    await closing;
    expect(pool.closed).toBe(true);
    expect(pool.stats()).toMatchObject({ clients: 0, size: 0 });
  });
});

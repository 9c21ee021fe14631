// Admission keys taken from the request (`requestKey`, as @nestjs/throttler's getTracker), a
// method's own key() winning over it, and `key: false` opting a method out, over real HTTP on
// Express and Fastify.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import {
  CanActivate,
  Controller,
  ExecutionContext,
  Get,
  Injectable,
  Module,
  Param,
  UseGuards,
  type INestApplication,
} from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import {
  currentRequestKey,
  getPoolToken,
  PoolModule,
  UsePooled,
  type ConnectionPool,
  type RequestKeyFn,
} from '../../lib/index.js';
import { FakeConnector } from '../support/fake-connector.js';
import { RecordingNestLogger } from '../support/nest.js';
import { Gate } from '../support/gate.js';
import { until } from '../support/wait.js';

const gate = new Gate();

type Request = { headers: Record<string, string | undefined>; user?: { id: string } };

/** An authentication guard, as an app has one: it puts the user on the request. Guards run before interceptors. */
@Injectable()
class UserGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<Request>();
    const id = request.headers['x-user'];
    if (id !== undefined) request.user = { id };
    return true;
  }
}

@Injectable()
class Reports {
  /** Takes the request's key: the user's. */
  @UsePooled('api')
  async mine(): Promise<string | undefined> {
    await gate.promise;
    return currentRequestKey();
  }

  /** The method's own key (the tenant) wins over the request's. */
  @UsePooled('api', { key: (tenant: unknown) => `tenant:${String(tenant)}` })
  async forTenant(tenant: string): Promise<string> {
    await gate.promise;
    return tenant;
  }

  /** Never keyed: the global limit only, even though the limiter refuses keyless calls. */
  @UsePooled('api', { key: false })
  async public(): Promise<string> {
    await gate.promise;
    return 'public';
  }
}

@Controller()
@UseGuards(UserGuard)
class ReportsController {
  constructor(private readonly reports: Reports) {}

  @Get('mine')
  mine() {
    return this.reports.mine().then((key) => ({ key }));
  }

  @Get('tenants/:tenant')
  tenant(@Param('tenant') tenant: string) {
    return this.reports.forTenant(tenant).then((t) => ({ tenant: t }));
  }

  @Get('public')
  public() {
    return this.reports.public().then((p) => ({ p }));
  }
}

const byUser: RequestKeyFn = (context) => context.switchToHttp().getRequest<Request>().user?.id;

function appModule(requestKey: RequestKeyFn) {
  @Module({
    imports: [
      PoolModule.forRoot({
        httpErrors: true,
        requestKey,
        limits: { global: 10, perKey: 1, keyless: 'refuse' },
        pools: [{ name: 'api', connector: new FakeConnector(), options: { clientLimit: 100 } }],
      }),
    ],
    providers: [Reports],
    controllers: [ReportsController],
  })
  class AppModule {}
  return AppModule;
}

describe.each([
  ['Express', () => new ExpressAdapter()],
  ['Fastify', () => new FastifyAdapter()],
])('admission keys from the request on %s', (_platform, adapter) => {
  let app: INestApplication;
  let base: string;
  let pool: ConnectionPool<unknown>;

  async function start(requestKey: RequestKeyFn = byUser): Promise<void> {
    const moduleRef = await Test.createTestingModule({ imports: [appModule(requestKey)] })
      .setLogger(new RecordingNestLogger())
      .compile();
    app = moduleRef.createNestApplication(adapter());
    await app.listen(0, '127.0.0.1');
    base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    pool = app.get(getPoolToken('api'));
  }

  const get = async (path: string, user?: string) => {
    const res = await fetch(`${base}${path}`, { headers: user === undefined ? {} : { 'x-user': user } });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  /** Starts a request and waits until its call holds a lease; `answer` is its response. */
  const holding = async (path: string, user?: string) => {
    const before = pool.stats().counters.acquired;
    const answer = get(path, user);
    await until(() => pool.stats().counters.acquired > before);
    return { answer };
  };

  beforeEach(() => {
    gate.open();
  });
  afterEach(async () => {
    gate.open();
    await app.close();
  });

  it("limits each user through the request's key, with no key() on the method", async () => {
    await start();
    const first = await holding('/mine', 'ann');
    await expect(get('/mine', 'ann')).resolves.toMatchObject({
      status: 429,
      body: {
        code: 'KEY_LIMIT',
        message: 'pool "api": key "ann" already holds its limit of 1 concurrent lease; retry later',
      },
    });
    const other = await holding('/mine', 'bob');
    gate.open();
    await expect(first.answer).resolves.toEqual({ status: 200, body: { key: 'ann' } });
    await expect(other.answer).resolves.toEqual({ status: 200, body: { key: 'bob' } });
    expect(pool.stats().admission).toMatchObject({ used: 0, counters: { refusedKey: 1 } });
  });

  it("lets a method's own key() win over the request's", async () => {
    await start();
    // Both requests are ann's, but the method keys by tenant: two keys, two leases.
    const acme = await holding('/tenants/acme', 'ann');
    const initech = await holding('/tenants/initech', 'ann');
    await expect(get('/tenants/acme', 'bob')).resolves.toMatchObject({
      status: 429,
      body: { message: 'pool "api": key "tenant:acme" already holds its limit of 1 concurrent lease; retry later' },
    });
    gate.open();
    await expect(Promise.all([acme.answer, initech.answer])).resolves.toEqual([
      { status: 200, body: { tenant: 'acme' } },
      { status: 200, body: { tenant: 'initech' } },
    ]);
  });

  it('serves a method with key: false without any key, where the limiter refuses keyless calls', async () => {
    await start();
    const calls = [await holding('/public'), await holding('/public', 'ann'), await holding('/public', 'ann')];
    expect(pool.stats().admission).toMatchObject({ used: 3 });
    gate.open();
    for (const call of calls) await expect(call.answer).resolves.toEqual({ status: 200, body: { p: 'public' } });
    // A request without a user on a method that needs a key: refused as the limiter says, naming what to do.
    await expect(get('/mine')).resolves.toMatchObject({
      status: 500,
      body: { code: 'POOL_CONFIG', message: expect.stringContaining(`refuses calls without one (keyless: 'refuse')`) },
    });
  });

  it('refuses a requestKey that returns something other than a key, saying what to change', async () => {
    await start(() => 42 as never);
    await expect(get('/public', 'ann')).resolves.toMatchObject({
      status: 500,
      body: {
        code: 'POOL_CONFIG',
        message:
          'PoolModule.forRoot: option "requestKey" must return a non-empty string, or undefined for a request without a key; got 42',
      },
    });
    expect(pool.stats().counters.acquired).toBe(0);
  });

  it('names requestKey when it throws, and serves nothing on a key it could not read', async () => {
    await start(() => {
      throw new TypeError("Cannot read properties of undefined (reading 'id')");
    });
    await expect(get('/public', 'ann')).resolves.toMatchObject({
      status: 500,
      body: {
        code: 'POOL_CONFIG',
        message: `PoolModule.forRoot: option "requestKey" threw (Cannot read properties of undefined (reading 'id')); return undefined for a request without a key`,
      },
    });
    expect(pool.stats().counters.acquired).toBe(0);
  });

  it('has no request key outside a request', async () => {
    await start();
    const reports = app.get(Reports);
    await expect(reports.mine()).rejects.toMatchObject({ code: 'POOL_CONFIG' });
    const unkeyed = reports.public();
    await until(() => pool.stats().clients === 1);
    gate.open();
    await expect(unkeyed).resolves.toBe('public');
  });
});

describe('requestKey', () => {
  const pools = [{ name: 'api', connector: new FakeConnector() }];

  it('is checked at registration, and set once per application', async () => {
    expect(() => PoolModule.forRoot({ pools, requestKey: 'user' as never })).toThrow(
      'PoolModule.forRoot: option "requestKey" must be a function, got "user"',
    );
    expect(() =>
      PoolModule.forFeature([{ name: 'other', connector: new FakeConnector() }], { requestKey: byUser } as never),
    ).toThrow(
      'PoolModule.forFeature: option "requestKey" is set once per application, in PoolModule.forRoot or forRootAsync',
    );
    const twice = Test.createTestingModule({
      imports: [
        PoolModule.forRoot({ pools, requestKey: byUser }),
        PoolModule.forRoot({ pools: [{ name: 'b', connector: new FakeConnector() }], requestKey: byUser }),
      ],
    })
      .setLogger(new RecordingNestLogger())
      .compile();
    await expect(twice).rejects.toThrow(
      'PoolModule.forRoot: option "requestKey" is already set by PoolModule.forRoot; an application reads its requests once: set requestKey and requestClass in one registration',
    );
  });
});

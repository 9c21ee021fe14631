// Pool groups in a Nest app: registered like pools (forRoot, forRootAsync, forFeature), a
// decorated method's key picks the member, the request's key does when the method has none, the
// health indicator reports the group, and shutdown closes every member.
import { describe, expect, it } from '@jest/globals';
import { Controller, Get, Injectable, Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  InjectPool,
  PoolGroup,
  PoolHealthIndicator,
  PoolModule,
  PooledConnection,
  UsePooled,
  type PoolGroupStats,
} from '../../lib/index.js';
import { FakeConnector, type FakeConnection } from '../support/fake-connector.js';
import { configError } from '../support/harness.js';
import { boot, RecordingNestLogger } from '../support/nest.js';

/** One fake database per tenant: what each tenant's connections were made for. */
class Tenants {
  readonly connectors = new Map<string, FakeConnector>();
  connector = (tenant: string): FakeConnector => {
    const c = new FakeConnector();
    this.connectors.set(tenant, c);
    return c;
  };
  live(): number {
    return [...this.connectors.values()].reduce((n, c) => n + c.live.size, 0);
  }
}

@Injectable()
class Reports {
  constructor(@InjectPool('tenants') readonly group: PoolGroup<FakeConnection>) {}

  /** The tenant argument picks the member; the connection comes in the marked parameter. */
  @UsePooled('tenants', { key: (tenant) => tenant as string })
  async forTenant(tenant: string, @PooledConnection() conn?: FakeConnection): Promise<string> {
    return `${tenant}:${conn!.id}`;
  }

  /** No key of its own: the request's (the module's requestKey), if any. */
  @UsePooled('tenants')
  async forRequest(@PooledConnection() conn?: FakeConnection): Promise<number> {
    return conn!.id;
  }
}

@Controller()
class ReportsController {
  constructor(private readonly reports: Reports) {}
  @Get('report')
  report(): Promise<number> {
    return this.reports.forRequest();
  }
}

describe('pool groups in PoolModule', () => {
  function groupsModule(tenants: Tenants) {
    return PoolModule.forRoot({
      pools: [{ name: 'db', connector: new FakeConnector(), options: { maxSize: 1 } }],
      groups: [{ name: 'tenants', connector: tenants.connector, options: { maxTotal: 3, member: { clientLimit: 1 } } }],
    });
  }

  it('gives each call the member its key names, and injects the group', async () => {
    const tenants = new Tenants();
    const moduleRef = await boot({ imports: [groupsModule(tenants)], providers: [Reports] });
    const reports = moduleRef.get(Reports);
    expect(reports.group).toBeInstanceOf(PoolGroup);
    expect(await Promise.all(['acme', 'acme', 'globex'].map((t) => reports.forTenant(t)))).toEqual([
      'acme:1',
      'acme:2',
      'globex:1',
    ]);
    const stats: PoolGroupStats = reports.group.stats();
    expect(stats).toMatchObject({ name: 'tenants', maxTotal: 3, clientLimit: 1, total: 3 });
    expect(stats.members.map((m) => m.key).sort()).toEqual(['acme', 'globex']);
  });

  it('refuses a call without a key, saying how to give one', async () => {
    const moduleRef = await boot({ imports: [groupsModule(new Tenants())], providers: [Reports] });
    await expect(moduleRef.get(Reports).forRequest()).rejects.toThrow(
      `pool group "tenants": option "key" is needed by every call of a pool group: it names the member (a tenant, a database); give the call one: @UsePooled('tenants', { key: (tenant) => tenant }), or the module's requestKey`,
    );
  });

  it('reports the group in the health check, with its members and budget', async () => {
    const tenants = new Tenants();
    const moduleRef = await boot({ imports: [groupsModule(tenants)], providers: [Reports] });
    await moduleRef.get(Reports).forTenant('acme');
    const result = moduleRef.get(PoolHealthIndicator).isHealthy('pools', { pools: ['tenants'] });
    expect(result).toEqual({
      pools: {
        status: 'up',
        tenants: {
          health: 'healthy',
          size: 1,
          ready: 1,
          maxSize: 3,
          clients: 0,
          clientLimit: 1,
          utilization: 0,
          waiting: 0,
          lastError: null,
          members: 1,
        },
      },
    });
    expect(Object.keys(moduleRef.get(PoolHealthIndicator).isHealthy('all').all)).toEqual(['db', 'tenants', 'status']);
  });

  it('closes every member when the application shuts down', async () => {
    const tenants = new Tenants();
    const moduleRef = await Test.createTestingModule({ imports: [groupsModule(tenants)], providers: [Reports] })
      .setLogger(new RecordingNestLogger())
      .compile();
    await moduleRef.init();
    await Promise.all(['a', 'b', 'c'].map((t) => moduleRef.get(Reports).forTenant(t)));
    expect(tenants.live()).toBe(3);
    await moduleRef.close();
    expect(tenants.live()).toBe(0);
  });

  it('takes the member from the request when the module has requestKey', async () => {
    const tenants = new Tenants();
    @Module({
      imports: [
        PoolModule.forRoot({
          groups: [
            { name: 'tenants', connector: tenants.connector, options: { maxTotal: 2, member: { clientLimit: 1 } } },
          ],
          requestKey: (ctx) => ctx.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-tenant'],
        }),
      ],
      providers: [Reports],
      controllers: [ReportsController],
    })
    class App {}
    const moduleRef = await Test.createTestingModule({ imports: [App] })
      .setLogger(new RecordingNestLogger())
      .compile();
    const app: INestApplication = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    try {
      const url = `${await app.getUrl()}/report`.replace('[::1]', '127.0.0.1');
      const get = (tenant?: string) => fetch(url, { headers: tenant === undefined ? {} : { 'x-tenant': tenant } });
      expect(await Promise.all([get('acme'), get('globex')].map(async (r) => (await r).text()))).toEqual(['1', '1']);
      expect([...tenants.connectors.keys()].sort()).toEqual(['acme', 'globex']);
      const keyless = await get();
      expect(keyless.status).toBe(500); // no error mapping in this app: a configuration error, not a limit
    } finally {
      await app.close();
    }
  });

  it('takes group options from the async factory, and checks them before anything opens', async () => {
    const tenants = new Tenants();
    const moduleRef = await boot({
      imports: [
        PoolModule.forRootAsync({
          groups: [{ name: 'tenants', connector: { useFactory: () => tenants.connector } }],
          useFactory: () => ({ groups: { tenants: { maxTotal: 5, minHoldMs: 50 } } }),
        }),
      ],
      providers: [Reports],
    });
    expect(moduleRef.get(Reports).group.options).toMatchObject({ maxTotal: 5, minHoldMs: 50 });
    await expect(
      boot({
        imports: [
          PoolModule.forRootAsync({
            groups: [{ name: 'tenants', connector: tenants.connector }],
            useFactory: () => ({ groups: { tenants: {} as never } }),
          }),
        ],
      }),
    ).rejects.toThrow(
      'pool group "tenants": option "maxTotal" is required: the connections all members may have at once',
    );
  });

  it('refuses bad group registrations, saying what to change', () => {
    const connector = (tenant: string) => ({ create: async () => tenant });
    expect(
      configError(() => PoolModule.forRoot({ groups: [{ name: 'tenants', connector, options: {} as never }] })).message,
    ).toBe('pool group "tenants": option "maxTotal" is required: the connections all members may have at once');
    expect(
      configError(() =>
        PoolModule.forRoot({ groups: [{ name: 'tenants', connector: 'pg://x' as never, options: { maxTotal: 2 } }] }),
      ).message,
    ).toBe(
      `pool group "tenants": option "connector" must be a function of the member's key that returns its connector, or { useFactory, inject } returning one`,
    );
    expect(
      configError(() =>
        PoolModule.forRoot({
          pools: [{ name: 'x', connector: new FakeConnector() }],
          groups: [{ name: 'x', connector, options: { maxTotal: 2 } }],
        }),
      ).message,
    ).toBe(
      'pool "x": option "name" is listed twice in forRoot (pools and groups share one namespace); give each its own name',
    );
    expect(configError(() => PoolModule.forRoot({ groups: [] })).message).toContain('must list at least one pool');
    expect(
      configError(() =>
        PoolModule.forRootAsync({
          groups: [{ name: 'tenants', connector, options: { maxTotal: 2 } } as never],
          useFactory: () => ({}),
        }),
      ).message,
    ).toBe(
      'pool group "tenants": option "options" is not taken by forRootAsync: group options come from its factory ({ groups: { [name]: options } }); move them there, or register with forRoot',
    );
  });
});

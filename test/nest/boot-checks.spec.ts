// Mistakes a Nest developer makes in the first hour, caught when the application starts (or when
// the module is built), each with a message that says what to change.
import { describe, expect, it } from '@jest/globals';
import { Inject, Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  ConnectionPool,
  getPoolToken,
  LocalLimiter,
  PoolConfigError,
  PoolGroup,
  PoolModule,
  PoolNotFoundError,
  RedisLimiter,
  UsePooled,
  type ConnectionPool as Pool,
} from '../../lib/index.js';
import { FakeConnector, type FakeConnection } from '../support/fake-connector.js';
import { configError } from '../support/harness.js';
import { boot } from '../support/nest.js';

@Injectable()
class Misspelled {
  @UsePooled('shraed')
  async run(): Promise<number> {
    return 1;
  }
}

@Injectable()
class Reports {
  constructor(@Inject(getPoolToken('reports')) readonly pool: Pool<FakeConnection>) {}

  @UsePooled('reports')
  async run(): Promise<number> {
    return this.pool.current.id;
  }
}

/** Uses pool "reports" from a module that does not import the forFeature registration. */
@Injectable()
class Outsider {
  @UsePooled('reports')
  async run(): Promise<string> {
    return 'ran';
  }
}

const reportsPool = () => PoolModule.forFeature([{ name: 'reports', connector: new FakeConnector() }]);

/** Fails with what start-up threw. */
async function bootError(metadata: Parameters<typeof boot>[0]): Promise<Error> {
  const error = await boot(metadata).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof Error)) throw new Error('the application started');
  return error;
}

describe('a @UsePooled name is checked when the application starts', () => {
  it('a misspelled name fails start-up with the registered names and the near one', async () => {
    const error = await bootError({
      imports: [PoolModule.forRoot({ pools: [{ name: 'shared', connector: new FakeConnector() }] })],
      providers: [Misspelled],
    });
    expect(error).toBeInstanceOf(PoolNotFoundError);
    expect(error.message).toBe(
      'pool "shraed" used by Misspelled.run does not exist (registered: "shared"); did you mean "shared"?',
    );
  });

  it('a name nothing is near says how to register it', async () => {
    @Injectable()
    class Elsewhere {
      @UsePooled('analytics')
      async run(): Promise<void> {}
    }
    const error = await bootError({
      imports: [PoolModule.forRoot({ pools: [{ name: 'db', connector: new FakeConnector() }] })],
      providers: [Elsewhere],
    });
    expect(error.message).toBe(
      `pool "analytics" used by Elsewhere.run does not exist (registered: "db"); add { name: 'analytics', connector } to PoolModule.forRoot({ pools }) or fix the name`,
    );
  });

  it("a fixed class the pool's limiter does not have fails start-up, with the near one; one it has starts", async () => {
    const limits = { global: 2, classes: [{ name: 'live' }, { name: 'batch' }] };
    @Injectable()
    class Typo {
      @UsePooled('db', { class: 'lvie' })
      async run(): Promise<void> {}
    }
    const error = await bootError({
      imports: [PoolModule.forRoot({ limits, pools: [{ name: 'db', connector: new FakeConnector() }] })],
      providers: [Typo],
    });
    expect(error).toBeInstanceOf(PoolConfigError);
    expect(error.message).toBe(
      `@UsePooled('db') on Typo.run: class ("lvie") is not a class of the pool's limiter: one of 'live', 'batch' (did you mean 'live'?)`,
    );
    @Injectable()
    class Right {
      @UsePooled('db', { class: 'live' })
      async run(): Promise<string> {
        return 'ran';
      }
    }
    const app = await boot({
      imports: [PoolModule.forRoot({ limits, pools: [{ name: 'db', connector: new FakeConnector() }] })],
      providers: [Right],
    });
    await expect(app.get(Right).run()).resolves.toBe('ran');
  });

  it('a forFeature pool used from a module that does not import it fails start-up, naming the module and the fix', async () => {
    @Module({ imports: [reportsPool()], providers: [Reports] })
    class ReportsModule {}
    @Module({ providers: [Outsider] })
    class BillingModule {}
    const error = await bootError({ imports: [ReportsModule, BillingModule] });
    expect(error).toBeInstanceOf(PoolNotFoundError);
    expect(error.message).toBe(
      '@UsePooled(\'reports\') on Outsider.run cannot see pool "reports": PoolModule.forFeature registers it in a module that BillingModule does not import. Add that module (or the PoolModule.forFeature([...]) registration itself) to the imports of BillingModule, or register the pool with forRoot',
    );
  });

  it('a forFeature pool is seen where it is imported, and through a module that re-exports it', async () => {
    @Module({ imports: [reportsPool()], exports: [PoolModule] })
    class ReportsPoolModule {}
    @Module({ imports: [ReportsPoolModule], providers: [Outsider] })
    class BillingModule {}
    @Module({ imports: [reportsPool()], providers: [Reports] })
    class ReportsModule {}
    const direct = await boot({ imports: [ReportsModule] });
    await expect(direct.get(Reports).run()).resolves.toBe(1);
    const reExported = await boot({ imports: [BillingModule] });
    await expect(reExported.get(Outsider).run()).resolves.toBe('ran');
  });

  it('a forRoot pool serves decorated methods of every module, as before', async () => {
    @Module({ providers: [Outsider] })
    class BillingModule {}
    const app = await boot({
      imports: [PoolModule.forRoot({ pools: [{ name: 'reports', connector: new FakeConnector() }] }), BillingModule],
    });
    await expect(app.get(Outsider).run()).resolves.toBe('ran');
  });
});

describe('a unit test that provides a pool itself', () => {
  @Injectable()
  class Catalog {
    @UsePooled('db')
    async find(): Promise<string> {
      return 'found';
    }
  }

  it('works with PoolModule.forTesting() beside its getPoolToken provider, and leaves the pool open', async () => {
    const pool = new ConnectionPool(new FakeConnector(), { name: 'db' });
    const app = await boot({
      imports: [PoolModule.forTesting()],
      providers: [Catalog, { provide: getPoolToken('db'), useValue: pool }],
    });
    await expect(app.get(Catalog).find()).resolves.toBe('found');
    expect(pool.stats().counters.acquired).toBe(1);
    await app.close();
    expect(pool.closed).toBe(false);
    await pool.close();
  });

  it('without any PoolModule import, the first call names PoolModule.forTesting()', async () => {
    const pool = new ConnectionPool(new FakeConnector(), { name: 'db' });
    const app = await boot({ providers: [Catalog, { provide: getPoolToken('db'), useValue: pool }] });
    const error = await app
      .get(Catalog)
      .find()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PoolNotFoundError);
    expect((error as Error).message).toContain('needs imports: [PoolModule.forTesting()]');
    expect(pool.stats().counters.acquired).toBe(0);
    await pool.close();
  });
});

describe('unknown option keys are refused with the near one, in every layer', () => {
  const connector = new FakeConnector();

  it('a pool', () => {
    const error = configError(() => new ConnectionPool(connector, { name: 'db', maxsize: 4 } as never));
    expect(error.message).toMatch(
      /^pool "db": option "maxsize" is not one of a pool's options: did you mean "maxSize"\? they are name, maxSize, /,
    );
    expect(configError(() => new ConnectionPool(connector, { health: { degrade: 0.5 } } as never)).message).toContain(
      'option "health.degrade" is not one of the health thresholds: did you mean "health.degraded"?',
    );
  });

  it('one options object where the pool takes a connector and options', () => {
    const error = configError(() => new ConnectionPool({ name: 'db', connector } as never));
    expect(error.message).toBe(
      'pool "default": option "connector" must be the first argument, and the options the second: new ConnectionPool(connector, { name, maxSize }); the first argument given has a "connector" key, as if it were the options',
    );
  });

  it('a limiter, and its Redis options', () => {
    expect(configError(() => new LocalLimiter({ globl: 3 } as never)).message).toMatch(
      /^limiter "limits": option "limits.globl" is not one of a limiter's options: did you mean "limits.global"\?/,
    );
    const redis = configError(
      () => new RedisLimiter({ global: 3, redis: { url: 'redis://127.0.0.1:6379', namspace: 'x' } } as never),
    );
    expect(redis.message).toContain(
      'option "limits.redis.namspace" is not one of the Redis options: did you mean "limits.redis.namespace"?',
    );
  });

  it('a pool group, before its required options: a misspelled maxTotal is named as such', () => {
    const error = configError(() => new PoolGroup({ maxtotal: 3, connector: () => connector } as never));
    expect(error.message).toMatch(
      /^pool group "group": option "maxtotal" is not one of a pool group's options: did you mean "maxTotal"\?/,
    );
    const member = configError(
      () => new PoolGroup({ maxTotal: 3, connector: () => connector, member: { minSize: 1 } } as never),
    );
    expect(member.message).toBe(
      'pool group "group": option "member.minSize" is set by the group, not by its options: members keep no connections ahead of demand: they would take budget from other members',
    );
  });

  it('the module: its options, a pool entry, and what a factory returns', async () => {
    expect(configError(() => PoolModule.forRoot({ pool: [{ name: 'db', connector }] } as never)).message).toMatch(
      /^PoolModule.forRoot: option "pool" is not one of the options of PoolModule.forRoot: did you mean "pools"\?/,
    );
    expect(
      configError(() => PoolModule.forRoot({ pools: [{ name: 'db', connector, option: { maxSize: 2 } }] } as never))
        .message,
    ).toMatch(
      /^PoolModule.forRoot: option "pools\[0\].option" is not one of the keys of a pool entry: did you mean "pools\[0\].options"\?/,
    );
    expect(
      configError(() => PoolModule.forFeature([{ name: 'db', connector }], { failOnWarmup: true } as never)).message,
    ).toContain('did you mean "failOnWarmupError"?');
    expect(
      configError(() => PoolModule.forRoot({ pools: [{ name: 'db', connector, options: { name: 'other' } as never }] }))
        .message,
    ).toBe(`pool "db": option "name" comes from the pool's entry ({ name, connector, options })`);
    const fromFactory = async (settings: object) => {
      const moduleRef = Test.createTestingModule({
        imports: [PoolModule.forRootAsync({ pools: [{ name: 'db', connector }], useFactory: () => settings as never })],
      });
      return moduleRef.compile().then(
        () => undefined,
        (e: unknown) => e as PoolConfigError,
      );
    };
    expect((await fromFactory({ pools: { db: { maxSize: 2 } }, shutdownGrace: 5 }))?.message).toContain(
      'option "shutdownGrace" is not one of the settings a forRootAsync factory returns: did you mean "shutdownGraceMs"?',
    );
    expect((await fromFactory({ isGlobal: true }))?.message).toBe(
      'PoolModule.forRootAsync: option "isGlobal" shapes the module, so it cannot come from the factory: give it to forRootAsync itself, beside pools and useFactory',
    );
    expect((await fromFactory({ pools: [{ name: 'db', connector, options: { maxSize: 2 } }] }))?.message).toContain(
      'option "pools" is a list, as forRoot takes it; a factory returns options by pool name',
    );
  });

  it('forRootAsync with the pools inside the factory, the TypeORM way, says where pools go', () => {
    const error = configError(() =>
      PoolModule.forRootAsync({ useFactory: () => ({ pools: [{ name: 'db', connector }] }) as never }),
    );
    expect(error.message).toBe(
      "PoolModule.forRootAsync: option \"pools\" must list the pools here, by name and connector; only their options come from the factory: PoolModule.forRootAsync({ pools: [{ name: 'db', connector: PgConnector }], useFactory: (config: ConfigService) => ({ pools: { db: { maxSize: config.get('DB_POOL_SIZE') } } }), inject: [ConfigService] }) (groups alike: groups: [{ name, connector }])",
    );
  });

  it('the decorator and its retry options, when the class is declared', () => {
    const declare = (options: object) => () => {
      class Service {
        @UsePooled('db', options as never)
        async run(): Promise<void> {}
      }
      return Service;
    };
    expect(configError(declare({ timeout: 5 })).message).toMatch(
      /^@UsePooled\('db'\) on Service.run: timeout is not one of @UsePooled's options: did you mean "timeoutMs"\? they are timeoutMs, retry, key, class, onRefused, propagation$/,
    );
    expect(configError(declare({ retry: { attempt: 3 } })).message).toContain(
      'retry.attempt is not one of the retry options: did you mean "retry.attempts"?',
    );
  });
});

describe('extraProviders', () => {
  it('adds providers a connector factory injects', async () => {
    const URL_TOKEN = Symbol('url');
    const made: string[] = [];
    const app = await boot({
      imports: [
        PoolModule.forRoot({
          pools: [
            {
              name: 'db',
              connector: { useFactory: (url: string) => (made.push(url), new FakeConnector()), inject: [URL_TOKEN] },
            },
          ],
          extraProviders: [{ provide: URL_TOKEN, useValue: 'postgres://db' }],
        }),
      ],
    });
    expect(made).toEqual(['postgres://db']);
    await expect(app.get<Pool<FakeConnection>>(getPoolToken('db')).use((conn) => conn.id)).resolves.toBe(1);
  });
});

describe('PoolModule.forFeatureAsync', () => {
  const SIZE = Symbol('size');

  it("registers a feature module's pools with options from a factory, seen only where imported", async () => {
    const reports = () =>
      PoolModule.forFeatureAsync({
        pools: [{ name: 'reports', connector: new FakeConnector() }],
        extraProviders: [{ provide: SIZE, useValue: 3 }],
        useFactory: (size: number) => ({ pools: { reports: { maxSize: size } } }),
        inject: [SIZE],
      });
    @Module({ imports: [reports()], providers: [Reports] })
    class ReportsModule {}
    const app = await boot({ imports: [ReportsModule] });
    await expect(app.get(Reports).run()).resolves.toBe(1);
    expect(app.get(Reports).pool.options.maxSize).toBe(3);

    @Module({ imports: [reports()], providers: [Reports] })
    class OwnReports {}
    @Module({ providers: [Outsider] })
    class BillingModule {}
    const error = await bootError({ imports: [OwnReports, BillingModule] });
    expect(error.message).toContain(
      'cannot see pool "reports": PoolModule.forFeature registers it in a module that BillingModule does not import',
    );
  });

  it('refuses what only the root registration takes, and says where pools go', () => {
    const connector = new FakeConnector();
    expect(
      configError(() =>
        PoolModule.forFeatureAsync({
          pools: [{ name: 'x', connector }],
          useFactory: () => ({}),
          isGlobal: true,
        } as never),
      ).message,
    ).toContain('option "isGlobal" is not one of the options of PoolModule.forFeatureAsync');
    expect(
      configError(() =>
        PoolModule.forFeatureAsync({
          pools: [{ name: 'x', connector }],
          useFactory: () => ({}),
          requestKey: () => 'k',
        } as never),
      ).message,
    ).toContain('requestKey" is set once per application');
    expect(configError(() => PoolModule.forFeatureAsync({ useFactory: () => ({}) })).message).toContain(
      'PoolModule.forFeatureAsync({ pools: [{ name: ',
    );
  });
});

import { describe, expect, it } from '@jest/globals';
import { Inject, Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  ConnectionFailedError,
  ConnectionPool,
  getPoolToken,
  InjectPool,
  PoolConfigError,
  PoolModule,
  UsePooled,
  type Connector,
  type CreateContext,
  type PoolModuleSettings,
  type PoolSettingsFactory,
} from '../../lib/index.js';
import { FakeConnector, type FakeConnection } from '../support/fake-connector.js';
import { boot, RecordingNestLogger } from '../support/nest.js';

@Injectable()
class Settings {
  readonly dbMaxSize = 7;
  readonly prefix = 'conf';
}

@Module({ providers: [Settings], exports: [Settings] })
class SettingsModule {}

/** A connector class with a dependency of its own, made by Nest. */
@Injectable()
class LabelledConnector implements Connector<string> {
  #n = 0;
  constructor(private readonly settings: Settings) {}
  async create(_ctx: CreateContext): Promise<string> {
    return `${this.settings.prefix}-${++this.#n}`;
  }
}

@Injectable()
class Repo {
  constructor(
    @InjectPool('db') readonly db: ConnectionPool<FakeConnection>,
    @InjectPool('cache') readonly cache: ConnectionPool<FakeConnection>,
  ) {}
}

@Injectable()
class SettingsFactory implements PoolSettingsFactory {
  createPoolSettings(): PoolModuleSettings {
    return { pools: { db: { maxSize: 3 } } };
  }
}

describe('PoolModule.forRoot', () => {
  it('gives each pool its own provider, injectable by token and by @InjectPool, with its options', async () => {
    const moduleRef = await boot({
      imports: [
        PoolModule.forRoot({
          pools: [
            { name: 'db', connector: new FakeConnector(), options: { maxSize: 4, clientLimit: 1 } },
            { name: 'cache', connector: new FakeConnector() },
          ],
        }),
      ],
      providers: [Repo],
    });
    const repo = moduleRef.get(Repo);
    const db = moduleRef.get<ConnectionPool<FakeConnection>>(getPoolToken('db'));
    expect(repo.db).toBe(db);
    expect(db).toBeInstanceOf(ConnectionPool);
    expect(db.options).toMatchObject({ name: 'db', maxSize: 4, clientLimit: 1 });
    expect(repo.cache.name).toBe('cache');
    expect(repo.cache).not.toBe(db);
    expect(repo.cache.options.maxSize).toBe(10);
  });

  it('makes a connector class through DI, so it can inject providers of the modules it imports', async () => {
    const moduleRef = await boot({
      imports: [
        PoolModule.forRoot({ imports: [SettingsModule], pools: [{ name: 'labels', connector: LabelledConnector }] }),
      ],
    });
    const pool = moduleRef.get<ConnectionPool<string>>(getPoolToken('labels'));
    await expect(pool.use((label) => label)).resolves.toBe('conf-1');
  });

  it('takes a connector factory with injected dependencies', async () => {
    const moduleRef = await boot({
      imports: [
        PoolModule.forRoot({
          imports: [SettingsModule],
          pools: [
            {
              name: 'made',
              connector: {
                inject: [Settings],
                useFactory: async (settings: Settings) => ({ create: async () => `${settings.prefix}:made` }),
              },
            },
          ],
        }),
      ],
    });
    await expect(moduleRef.get<ConnectionPool<string>>(getPoolToken('made')).use((c) => c)).resolves.toBe('conf:made');
  });

  it.each([
    ['forRoot', () => PoolModule.forRoot({ pools: [{ name: 'db', connector: new FakeConnector() }] })],
    [
      'forRootAsync',
      () =>
        PoolModule.forRootAsync({
          pools: [{ name: 'db', connector: new FakeConnector() }],
          useFactory: () => ({ pools: { db: { maxSize: 2 } } }),
        }),
    ],
  ])('%s is global by default: a feature module that does not import it injects its pools', async (_method, root) => {
    @Injectable()
    class Feature {
      constructor(@InjectPool('db') readonly db: ConnectionPool<FakeConnection>) {}
    }
    @Module({ providers: [Feature], exports: [Feature] })
    class FeatureModule {}
    const moduleRef = await boot({ imports: [root(), FeatureModule] });
    expect(moduleRef.get(Feature).db.name).toBe('db');
    expect(await moduleRef.get(Feature).db.use((c) => typeof c)).toBe('object');
  });

  it('with isGlobal: false, a feature module that does not import it cannot inject its pools; one that imports it can', async () => {
    @Injectable()
    class Feature {
      constructor(@InjectPool('db') readonly db: ConnectionPool<FakeConnection>) {}
    }
    @Module({ providers: [Feature] })
    class FeatureModule {}
    const compiling = Test.createTestingModule({
      imports: [
        PoolModule.forRoot({ isGlobal: false, pools: [{ name: 'db', connector: new FakeConnector() }] }),
        FeatureModule,
      ],
    })
      .setLogger(new RecordingNestLogger())
      .compile();
    await expect(compiling).rejects.toThrow(/nestjs-shared-pool:db/);

    const registration = PoolModule.forRoot({
      isGlobal: false,
      pools: [{ name: 'db', connector: new FakeConnector() }],
    });
    @Module({ imports: [registration], providers: [Feature], exports: [Feature] })
    class ImportingModule {}
    const moduleRef = await boot({ imports: [ImportingModule] });
    expect(moduleRef.get(Feature).db.name).toBe('db');
  });

  it("a feature module's own pools stay its own: forFeature is never global", async () => {
    @Injectable()
    class Outside {
      constructor(@InjectPool('reports') readonly reports: ConnectionPool<FakeConnection>) {}
    }
    @Module({ imports: [PoolModule.forFeature([{ name: 'reports', connector: new FakeConnector() }])] })
    class ReportsModule {}
    @Module({ providers: [Outside] })
    class OtherModule {}
    const compiling = Test.createTestingModule({
      imports: [
        PoolModule.forRoot({ pools: [{ name: 'db', connector: new FakeConnector() }] }),
        ReportsModule,
        OtherModule,
      ],
    })
      .setLogger(new RecordingNestLogger())
      .compile();
    await expect(compiling).rejects.toThrow(/nestjs-shared-pool:reports/);
  });

  it('says which pool is missing when a provider injects one that is not registered', async () => {
    @Injectable()
    class Lost {
      constructor(@InjectPool('nope') readonly pool: ConnectionPool<unknown>) {}
    }
    const compiling = Test.createTestingModule({
      imports: [PoolModule.forRoot({ pools: [{ name: 'db', connector: new FakeConnector() }] })],
      providers: [Lost],
    })
      .setLogger(new RecordingNestLogger())
      .compile();
    await expect(compiling).rejects.toThrow(/nestjs-shared-pool:nope/);
  });

  it('rejects two pools of one name in one registration, naming the pool', () => {
    const connector = new FakeConnector();
    const register = () =>
      PoolModule.forRoot({
        pools: [
          { name: 'db', connector },
          { name: 'db', connector },
        ],
      });
    expect(register).toThrow(PoolConfigError);
    expect(register).toThrow(
      'pool "db": option "name" is listed twice in forRoot (pools and groups share one namespace); give each its own name',
    );
  });

  it('rejects two registrations of one pool name in one application', async () => {
    const compiling = Test.createTestingModule({
      imports: [
        PoolModule.forRoot({ pools: [{ name: 'db', connector: new FakeConnector() }] }),
        PoolModule.forRoot({ pools: [{ name: 'db', connector: new FakeConnector() }] }),
      ],
    })
      .setLogger(new RecordingNestLogger())
      .compile();
    await expect(compiling).rejects.toThrow('pool "db": option "name" is used by two pools of this application');
  });

  it('names the right subject in a bad option: the module, a pool, or the limiter the pool would get', () => {
    const connector = new FakeConnector();
    const thrown = (register: () => unknown) => {
      try {
        register();
      } catch (err) {
        return err as PoolConfigError;
      }
      throw new Error('no error');
    };
    const moduleError = thrown(() => PoolModule.forRoot({ pools: [] }));
    expect(moduleError).toMatchObject({ subject: 'module', pool: 'PoolModule.forRoot', field: 'pools' });
    const poolError = thrown(() =>
      PoolModule.forRoot({ pools: [{ name: 'orders', connector, options: { maxSize: 0 } }] }),
    );
    expect(poolError).toMatchObject({ subject: 'pool', pool: 'orders', field: 'maxSize' });
    const ownLimits = thrown(() =>
      PoolModule.forRoot({ pools: [{ name: 'orders', connector, options: { limits: { global: -1 } } }] }),
    );
    expect(ownLimits).toMatchObject({ subject: 'limiter', pool: 'orders:limits', field: 'limits.global' });
    expect(ownLimits.message).toBe(
      'limiter "orders:limits": option "limits.global" must be a whole number of 1 or more, got -1',
    );
    const shared = thrown(() =>
      PoolModule.forRoot({ pools: [{ name: 'orders', connector }], limits: { global: 2, perKey: 3 } }),
    );
    expect(shared.message).toMatch(
      /^limiter "limits": option "limits.perKey" \(3\) must not exceed limits.global \(2\)/,
    );
  });

  it('rejects bad registrations at once, saying what to change', () => {
    const connector = new FakeConnector();
    const cases: [() => unknown, string][] = [
      [() => PoolModule.forRoot({ pools: [] }), 'PoolModule.forRoot: option "pools" must list at least one pool'],
      [
        () => PoolModule.forRoot(undefined as never),
        'PoolModule.forRoot: option "options" must be an object: { pools: [{ name, connector }] }',
      ],
      [
        () => PoolModule.forRoot({ pools: [{ name: '', connector }] }),
        'PoolModule.forRoot: option "pools[0].name" must be a non-empty string',
      ],
      [
        () => PoolModule.forRoot({ pools: [{ name: 'status', connector }] }),
        'option "name" is reserved by health checks',
      ],
      [
        () => PoolModule.forRoot({ pools: [{ name: 'db', connector: {} as never }] }),
        'pool "db": option "connector" must be a connector class',
      ],
      [
        () => PoolModule.forRoot({ pools: [{ name: 'db', connector: { useFactory: 3 } as never }] }),
        'option "connector.useFactory" must be a function',
      ],
      [
        () => PoolModule.forRoot({ pools: [{ name: 'db', connector, options: { maxSize: 0 } }] }),
        'pool "db": option "maxSize" must be a whole number from 1 to 100,000 (a pool of more connections than one process can open is no bound), got 0',
      ],
      [
        () => PoolModule.forRoot({ pools: [{ name: 'db', connector }], shutdownGraceMs: -1 }),
        'PoolModule.forRoot: option "shutdownGraceMs" must be a number of 0 or more',
      ],
      [
        () => PoolModule.forRoot({ pools: [{ name: 'db', connector }], isGlobal: 'yes' as never }),
        'PoolModule.forRoot: option "isGlobal" must be true or false',
      ],
      [
        () => PoolModule.forRootAsync({ pools: [{ name: 'db', connector }] }),
        'PoolModule.forRootAsync: option "options" takes exactly one of useFactory, useClass or useExisting; got none',
      ],
      [
        () =>
          PoolModule.forRootAsync({
            pools: [{ name: 'db', connector }],
            useFactory: () => ({}),
            useClass: SettingsFactory,
          }),
        'got useFactory and useClass',
      ],
    ];
    for (const [register, message] of cases) {
      expect(register).toThrow(PoolConfigError);
      expect(register).toThrow(message);
    }
  });
});

describe('PoolModule.forRootAsync', () => {
  it('takes pool options from a factory with injected dependencies', async () => {
    const moduleRef = await boot({
      imports: [
        PoolModule.forRootAsync({
          imports: [SettingsModule],
          inject: [Settings],
          pools: [{ name: 'db', connector: new FakeConnector() }],
          useFactory: async (settings: Settings) => ({ pools: { db: { maxSize: settings.dbMaxSize } } }),
        }),
      ],
    });
    expect(moduleRef.get<ConnectionPool<unknown>>(getPoolToken('db')).options.maxSize).toBe(7);
  });

  it('takes them from a class (useClass) or an existing provider (useExisting)', async () => {
    const byClass = await boot({
      imports: [
        PoolModule.forRootAsync({ pools: [{ name: 'db', connector: new FakeConnector() }], useClass: SettingsFactory }),
      ],
    });
    expect(byClass.get<ConnectionPool<unknown>>(getPoolToken('db')).options.maxSize).toBe(3);
    await byClass.close();

    @Module({ providers: [SettingsFactory], exports: [SettingsFactory] })
    class FactoryModule {}
    const byExisting = await boot({
      imports: [
        PoolModule.forRootAsync({
          imports: [FactoryModule],
          pools: [{ name: 'db', connector: new FakeConnector() }],
          useExisting: SettingsFactory,
        }),
      ],
    });
    expect(byExisting.get<ConnectionPool<unknown>>(getPoolToken('db')).options.maxSize).toBe(3);
  });

  it('fails start-up with a clear error when the factory gives bad options', async () => {
    const start = (settings: unknown) =>
      Test.createTestingModule({
        imports: [
          PoolModule.forRootAsync({
            pools: [{ name: 'db', connector: new FakeConnector() }],
            useFactory: () => settings as PoolModuleSettings,
          }),
        ],
      })
        .setLogger(new RecordingNestLogger())
        .compile();
    await expect(start({ pools: { db: { clientLimit: 1.5 } } })).rejects.toThrow(
      'pool "db": option "clientLimit" must be a whole number from 1 to 1,000,000 (callers one connection serves at once; a slot is kept for each count), got 1.5',
    );
    await expect(start({ pools: { dbb: {} } })).rejects.toThrow(
      'pool "dbb": option "pools" has options but is not declared in forRootAsync({ pools }); declared: db',
    );
    await expect(start(null)).rejects.toThrow('PoolModule.forRootAsync: option "settings" must be an object, got null');
    await expect(start({ failOnWarmupError: 1 })).rejects.toThrow('option "failOnWarmupError" must be true or false');
  });
});

describe('PoolModule life cycle', () => {
  it('opens minSize connections before the application starts', async () => {
    const connector = new FakeConnector();
    const moduleRef = await boot({
      imports: [PoolModule.forRoot({ pools: [{ name: 'db', connector, options: { minSize: 3 } }] })],
    });
    expect(connector.created).toBe(3);
    expect(moduleRef.get<ConnectionPool<unknown>>(getPoolToken('db')).stats().ready).toBe(3);
  });

  it('with failOnWarmupError, stops start-up when warm-up fails, and closes what it opened', async () => {
    const connector = new FakeConnector();
    const refused = { kind: 'fail', error: new Error('connect ECONNREFUSED 127.0.0.1:9') } as const;
    connector.createSteps.push({ kind: 'ok' }, refused, refused, refused);
    const moduleRef = await Test.createTestingModule({
      imports: [
        PoolModule.forRoot({
          failOnWarmupError: true,
          pools: [{ name: 'db', connector, options: { minSize: 2, maxConcurrentCreates: 1 } }],
        }),
      ],
    })
      .setLogger(new RecordingNestLogger())
      .compile();
    const error = await moduleRef.init().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConnectionFailedError);
    expect((error as Error).message).toContain('ECONNREFUSED');
    const pool = moduleRef.get<ConnectionPool<unknown>>(getPoolToken('db'));
    expect(pool.closed).toBe(true);
    expect(connector.live.size).toBe(0);
  });

  it('without failOnWarmupError, starts anyway and logs a warning naming the pool', async () => {
    const connector = new FakeConnector();
    connector.createSteps.push({ kind: 'fail', error: new Error('connect ECONNREFUSED') });
    const logger = new RecordingNestLogger();
    const moduleRef = await boot(
      { imports: [PoolModule.forRoot({ pools: [{ name: 'db', connector, options: { minSize: 1 } }] })] },
      logger,
    );
    expect(moduleRef.get<ConnectionPool<unknown>>(getPoolToken('db')).closed).toBe(false);
    expect(logger.lines).toContainEqual({
      level: 'warn',
      context: 'PoolModule',
      message: expect.stringContaining('pool "db" could not open its minSize connections') as unknown as string,
    });
  });

  it('closes every pool on application shutdown, letting leases finish', async () => {
    const connector = new FakeConnector();
    const moduleRef = await boot({
      imports: [
        PoolModule.forRoot({ shutdownGraceMs: 5_000, pools: [{ name: 'db', connector, options: { minSize: 1 } }] }),
      ],
    });
    const pool = moduleRef.get<ConnectionPool<FakeConnection>>(getPoolToken('db'));
    const lease = await pool.acquire();
    const closing = moduleRef.close();
    await new Promise((r) => setTimeout(r, 20));
    expect(pool.closed).toBe(true);
    expect(connector.live.size).toBe(1);
    lease.release();
    await closing;
    expect(connector.live.size).toBe(0);
  });

  it('logs through Nest with the pool name as context, lifecycle transitions at debug level', async () => {
    const logger = new RecordingNestLogger();
    const moduleRef = await boot(
      {
        imports: [
          PoolModule.forRoot({ pools: [{ name: 'db', connector: new FakeConnector(), options: { minSize: 1 } }] }),
        ],
      },
      logger,
    );
    await moduleRef.close();
    const lines = logger.lines.filter((l) => l.context === 'pool:db');
    expect(lines.map((l) => [l.level, l.message])).toEqual([
      ['debug', 'pool "db": opening connection 1'],
      ['debug', 'pool "db": connection 1 ready'],
      ['debug', 'pool "db": closing: 0 clients get up to 10000 ms'],
      ['debug', 'pool "db": connection 1 retired: pool closed'],
      ['debug', 'pool "db": connection 1 closed'],
      ['debug', 'pool "db": closed'],
    ]);
  });

  it('serves @UsePooled methods called while the application starts (onModuleInit)', async () => {
    @Injectable()
    class Loader {
      loadedWith: number | undefined;
      constructor(@Inject(getPoolToken('db')) private readonly db: ConnectionPool<FakeConnection>) {}
      async onModuleInit(): Promise<void> {
        this.loadedWith = await this.load();
      }
      @UsePooled('db')
      async load(): Promise<number> {
        return this.db.current.id;
      }
    }
    const moduleRef = await boot({
      imports: [PoolModule.forRoot({ pools: [{ name: 'db', connector: new FakeConnector() }] })],
      providers: [Loader],
    });
    expect(moduleRef.get(Loader).loadedWith).toBe(1);
  });
});

describe('PoolModule limits', () => {
  it('shares the registration limits among its pools, unless a pool has its own', async () => {
    const moduleRef = await boot({
      imports: [
        PoolModule.forRoot({
          limits: { global: 2 },
          pools: [
            { name: 'a', connector: new FakeConnector() },
            { name: 'b', connector: new FakeConnector() },
            { name: 'c', connector: new FakeConnector(), options: { limits: { perKey: 1 } } },
          ],
        }),
      ],
    });
    const [a, b, c] = ['a', 'b', 'c'].map((n) => moduleRef.get<ConnectionPool<FakeConnection>>(getPoolToken(n)));
    const held = [await a.acquire(), await b.acquire()];
    await expect(a.acquire()).rejects.toMatchObject({ code: 'CAPACITY_EXCEEDED', limit: 2 });
    held.push(await c.acquire({ key: 'ann' }));
    await expect(c.acquire({ key: 'ann' })).rejects.toMatchObject({ code: 'KEY_LIMIT' });
    expect(a.stats().admission).toMatchObject({ mode: 'local', used: 2, limit: 2 });
    expect(c.stats().admission).toMatchObject({ mode: 'local', used: 1, perKey: 1 });
    for (const lease of held) lease.release();
    expect(a.stats().admission).toMatchObject({ used: 0 });
  });

  it('rejects bad limits at registration', () => {
    const connector = new FakeConnector();
    expect(() => PoolModule.forRoot({ limits: { global: 0 }, pools: [{ name: 'db', connector }] })).toThrow(
      'option "limits.global" must be a whole number of 1 or more, got 0',
    );
    expect(() =>
      PoolModule.forRoot({ limits: { redis: { url: 'nope' } }, pools: [{ name: 'db', connector }] }),
    ).toThrow('option "limits.redis.url" must be a redis:// or rediss:// URL');
    expect(() => PoolModule.forRoot({ pools: [{ name: 'db', connector, options: { limits: 5 as never } }] })).toThrow(
      'option "pools.db.limits" must be { global?, perKey?, wait?, redis?, adaptive? } or a limiter',
    );
    expect(() =>
      PoolModule.forRoot({ limits: { adaptive: true, global: 5 }, pools: [{ name: 'db', connector }] }),
    ).toThrow('"limits.global" is what the adaptive limit sets');
    expect(() =>
      PoolModule.forRoot({ limits: { classify: () => 'success' }, pools: [{ name: 'db', connector }] }),
    ).toThrow(
      'option "limits.classify" is for an adaptive limit: set limits.adaptive (true, or the algorithm and its bounds) too',
    );
    expect(() =>
      PoolModule.forRoot({
        limits: { adaptive: { algorithm: 'vegas', max: 2 }, perKey: 3 },
        pools: [{ name: 'db', connector }],
      }),
    ).toThrow('must not exceed limits.adaptive.max (2)');
    expect(() =>
      PoolModule.forRoot({ limits: { global: 5, maxPauseMs: 1_000 }, pools: [{ name: 'db', connector }] }),
    ).toThrow('option "limits.maxPauseMs" is for an adaptive limit');
    expect(() =>
      PoolModule.forRoot({ limits: { adaptive: true, maxPauseMs: Infinity }, pools: [{ name: 'db', connector }] }),
    ).toThrow('option "limits.maxPauseMs" must be a finite number of 0 or more');
  });

  it('passes an adaptive limit its pause settings: one Retry-After pauses for maxPauseMs at most', async () => {
    const moduleRef = await boot({
      imports: [
        PoolModule.forRoot({
          limits: { adaptive: true, maxPauseMs: 2_000, pauseProbeMs: Infinity },
          pools: [{ name: 'a', connector: new FakeConnector() }],
        }),
      ],
    });
    const a = moduleRef.get<ConnectionPool<FakeConnection>>(getPoolToken('a'));
    await a.use(async () => ({ status: 503, headers: { 'retry-after': '3600' } }));
    expect(a.stats().admission!.adaptive!.pausedMs).toBeLessThanOrEqual(2_000);
    expect(a.stats().admission!.adaptive!.pausedMs).toBeGreaterThan(1_500);
  });

  it('makes an adaptive limit from { adaptive }: the default algorithm for true, learning from use()', async () => {
    const moduleRef = await boot({
      imports: [
        PoolModule.forRoot({
          limits: { adaptive: true, perKey: 2 },
          pools: [
            { name: 'a', connector: new FakeConnector() },
            {
              name: 'b',
              connector: new FakeConnector(),
              options: { limits: { adaptive: { algorithm: 'aimd', initial: 6, backoff: 0.5 } } },
            },
          ],
        }),
      ],
    });
    const [a, b] = ['a', 'b'].map((n) => moduleRef.get<ConnectionPool<FakeConnection>>(getPoolToken(n)));
    expect(a.stats().admission).toMatchObject({
      mode: 'local',
      limit: 10,
      perKey: 2,
      adaptive: { algorithm: 'vegas', shared: false, limit: 10 },
    });
    await b.use(async () => ({ status: 429 }));
    expect(b.stats().admission).toMatchObject({
      limit: 3,
      adaptive: { algorithm: 'aimd', overloads: 1, changes: [{ from: 6, to: 3, reason: 'overload' }] },
    });
  });
});

describe('several applications in one process', () => {
  it('run decorated methods on the pool of the application that made the instance', async () => {
    @Injectable()
    class Which {
      constructor(@Inject(getPoolToken('db')) private readonly db: ConnectionPool<string>) {}
      @UsePooled('db')
      async label(): Promise<string> {
        return this.db.current;
      }
    }
    const app = (label: string) =>
      boot({
        imports: [PoolModule.forRoot({ pools: [{ name: 'db', connector: { create: async () => label } }] })],
        providers: [Which],
      });
    const first = await app('first');
    const second = await app('second');
    await expect(first.get(Which).label()).resolves.toBe('first');
    await expect(second.get(Which).label()).resolves.toBe('second');
  });
});

import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { Test } from '@nestjs/testing';
import { Controller, Get, Inject, Injectable, Scope, SetMetadata } from '@nestjs/common';
import { ContextIdFactory, Reflector, REQUEST } from '@nestjs/core';
import { PATH_METADATA } from '@nestjs/common/constants.js';
import { defer, firstValueFrom, interval, lastValueFrom, map, Observable, take, throwError, toArray } from 'rxjs';
import {
  ConnectionPool,
  ConnectionsExhaustedError,
  getPoolToken,
  PoolHealthIndicator,
  PoolModule,
  PoolContextError,
  PoolNotFoundError,
  PooledConnection,
  UsePooled,
  type UsePooledOptions,
} from '../../lib/index.js';
import { FakeConnector, type FakeConnection } from '../support/fake-connector.js';
import { boot } from '../support/nest.js';

const ROLE = 'role';
const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));

class Broken extends Error {}

@Injectable()
class Service {
  readonly calls: string[] = [];
  constructor(@Inject(getPoolToken('db')) readonly db: ConnectionPool<FakeConnection>) {}

  @UsePooled('db')
  async connectionId(): Promise<number> {
    return this.db.current.id;
  }

  @UsePooled('db')
  async whileHeld<R>(body: () => Promise<R>): Promise<R> {
    return body();
  }

  @UsePooled('db')
  async echo(...args: unknown[]): Promise<[unknown, unknown[], number]> {
    return [this, args, this.db.current.id];
  }

  @UsePooled('db')
  async fourth(a: unknown, b?: unknown, c?: unknown, @PooledConnection() conn?: FakeConnection): Promise<unknown[]> {
    return [this, a, b, c, conn === this.db.current];
  }

  @UsePooled('db')
  async fails(error: Error): Promise<never> {
    throw error;
  }

  @UsePooled('db')
  async outer(): Promise<[number, number, number]> {
    return [this.db.current.id, await this.connectionId(), this.db.stats().clients];
  }

  @UsePooled('db')
  async outerWithFresh(): Promise<[number, number]> {
    return [this.db.current.id, await this.fresh()];
  }

  @UsePooled('db', { propagation: 'new' })
  async fresh(): Promise<number> {
    return this.db.current.id;
  }

  @UsePooled('db', { timeoutMs: 30 })
  async quick(): Promise<string> {
    this.calls.push('quick');
    return 'ran';
  }

  @UsePooled('db', { retry: { attempts: 2, baseDelayMs: 1 } })
  async flaky(): Promise<number> {
    const id = this.db.current.id;
    if (this.calls.push('flaky') === 1) throw new Broken('socket hang up');
    return id;
  }

  @UsePooled('db', { key: (userId: unknown) => `user:${String(userId)}` })
  async forUser(userId: string): Promise<string> {
    return `${userId} on ${this.db.current.id}`;
  }

  @UsePooled('db', { key: () => 42 as unknown as string })
  async badKey(): Promise<string> {
    this.calls.push('badKey');
    return 'ran';
  }

  @UsePooled('db', {
    key: () => {
      throw new Error('no user in the arguments');
    },
  })
  async throwingKey(): Promise<string> {
    this.calls.push('throwingKey');
    return 'ran';
  }

  @UsePooled('db')
  ticks(count: number): Observable<number> {
    return interval(5).pipe(
      take(count),
      map(() => this.db.stats().clients),
    );
  }

  @UsePooled('db')
  connectionOf(): Observable<number> {
    const id = this.db.current.id;
    return defer(async () => id);
  }

  @UsePooled('db')
  forever(): Observable<number> {
    return interval(5);
  }

  @UsePooled('db')
  streamFails(error: Error): Observable<never> {
    return throwError(() => error);
  }

  // No declared return type: design metadata says Object, so the result decides at run time.
  @UsePooled('db')
  undeclaredTicks(count: number) {
    return interval(5).pipe(
      take(count),
      map(() => this.db.stats().clients),
    );
  }

  @UsePooled('db')
  undeclaredFails(error: Error) {
    return throwError(() => error);
  }

  @UsePooled('db')
  undeclaredForever() {
    return interval(5);
  }

  @UsePooled('db')
  undeclaredValue() {
    return this.db.current.id;
  }

  @UsePooled('db', { retry: { attempts: 2 } })
  undeclaredRetried() {
    return interval(5);
  }

  @UsePooled('db')
  async *rows(count: number): AsyncGenerator<[number, number]> {
    try {
      for (let i = 0; i < count; i++) {
        await tick();
        yield [this.db.current.id, this.db.stats().clients];
      }
    } finally {
      this.calls.push('rows: finally');
    }
  }

  @UsePooled('db')
  async *rowsThenFail(error: Error): AsyncGenerator<number> {
    yield 1;
    throw error;
  }

  @UsePooled('db', { propagation: 'none' })
  async bare(label: string, @PooledConnection() conn?: FakeConnection): Promise<string> {
    expect(() => this.db.current).toThrow(PoolContextError);
    return `${label} on ${conn!.id}`;
  }

  @UsePooled('db', { propagation: 'none' })
  bareStream(@PooledConnection() conn?: FakeConnection): Observable<number> {
    return interval(2).pipe(
      take(2),
      map(() => conn!.id),
    );
  }

  @UsePooled('db', { propagation: 'none' })
  async *bareRows(@PooledConnection() conn?: FakeConnection): AsyncGenerator<number> {
    yield conn!.id;
    yield this.db.stats().clients;
  }

  @UsePooled('db')
  async scopedToo(@PooledConnection() conn?: FakeConnection): Promise<boolean> {
    return conn === this.db.current;
  }

  @UsePooled('db')
  liesAboutPromise(): Promise<number> {
    return interval(1) as never;
  }

  @UsePooled('db')
  liesAboutObservable(): Observable<number> {
    return 7 as never;
  }

  @SetMetadata(ROLE, 'above')
  @UsePooled('db')
  async above(): Promise<void> {}

  @UsePooled('db')
  @SetMetadata(ROLE, 'below')
  async below(): Promise<void> {}
}

@Controller('cats')
class CatsController {
  @UsePooled('db')
  @Get('count')
  async count(): Promise<number> {
    return 1;
  }
}

@Injectable({ scope: Scope.REQUEST })
class PerRequest {
  constructor(
    @Inject(REQUEST) private readonly request: { user: string },
    @Inject(getPoolToken('db')) private readonly db: ConnectionPool<FakeConnection>,
  ) {}

  @UsePooled('db')
  async whoAndWhere(): Promise<string> {
    return `${this.request.user} on ${this.db.current.id}`;
  }
}

async function setup(options = {}) {
  const connector = new FakeConnector();
  connector.fatal = (err) => err instanceof Broken;
  const moduleRef = await boot({
    imports: [
      PoolModule.forRoot({ pools: [{ name: 'db', connector, options: { clientLimit: 1, maxSize: 2, ...options } }] }),
    ],
    providers: [Service, PerRequest],
    controllers: [CatsController],
  });
  const service = moduleRef.get(Service);
  return { moduleRef, service, pool: service.db, connector };
}

describe('@UsePooled on async methods', () => {
  it('checks a connection out for the body, readable as pool.current, and in afterwards', async () => {
    const { service, pool } = await setup();
    await expect(service.connectionId()).resolves.toBe(1);
    let during = -1;
    await service.whileHeld(async () => {
      during = pool.stats().clients;
    });
    expect(during).toBe(1);
    expect(pool.stats()).toMatchObject({ clients: 0, counters: { acquired: 2, released: 2 } });
  });

  it('checks it in when the body throws, and retires it when the error is fatal', async () => {
    const { service, pool } = await setup();
    await expect(service.fails(new Error('no such row'))).rejects.toThrow('no such row');
    expect(pool.stats()).toMatchObject({ clients: 0, counters: { retired: 0 } });
    await expect(service.fails(new Broken('socket hang up'))).rejects.toThrow('socket hang up');
    expect(pool.stats()).toMatchObject({ clients: 0, counters: { retired: 1 } });
  });

  it('reuses the lease in nested calls on the same pool, unless propagation is new', async () => {
    const { service } = await setup();
    await expect(service.outer()).resolves.toEqual([1, 1, 1]);
    await expect(service.outerWithFresh()).resolves.toEqual([1, 2]);
  });

  it('gives up after timeoutMs when every connection is busy, without running the body', async () => {
    const { service, pool } = await setup({ maxSize: 1 });
    const lease = await pool.acquire();
    await expect(service.quick()).rejects.toBeInstanceOf(ConnectionsExhaustedError);
    expect(service.calls).toEqual([]);
    lease.release();
    await expect(service.quick()).resolves.toBe('ran');
  });

  it('retries on a fatal error with another connection', async () => {
    const { service, pool } = await setup();
    await expect(service.flaky()).resolves.toBe(2);
    expect(pool.stats().counters.retired).toBe(1);
  });

  it('passes the admission key from the arguments, and rejects a key that is not a string', async () => {
    const { service, pool } = await setup();
    await expect(service.forUser('ann')).resolves.toBe('ann on 1');
    await expect(service.badKey()).rejects.toThrow(
      "@UsePooled('db') on Service.badKey: key() must return a non-empty string, or undefined for no key; got 42",
    );
    await expect(service.throwingKey()).rejects.toThrow('no user in the arguments');
    expect(service.calls).toEqual([]);
    expect(pool.stats().clients).toBe(0);
  });

  it('keeps `this`, the name and every other decorator metadata', async () => {
    const { service, moduleRef } = await setup();
    const reflector = moduleRef.get(Reflector);
    expect(reflector.get(ROLE, Service.prototype.above)).toBe('above');
    expect(reflector.get(ROLE, Service.prototype.below)).toBe('below');
    expect(Service.prototype.below.name).toBe('below');
    expect(Reflect.getMetadata(PATH_METADATA, CatsController.prototype.count)).toBe('count');
    await expect(service.connectionId.call(service)).resolves.toBe(1);
  });

  it('passes `this` and every argument as given, whatever their number', async () => {
    const { service, pool } = await setup();
    // None to three arguments are passed by a plain call, more through apply(): each count once.
    for (const args of [[], [undefined], ['a', 2], [null, { b: 2 }, [3]], [1, 2, 3, 4], [1, 2, 3, 4, 5, 6, 7]]) {
      const [self, got, id] = await service.echo(...args);
      expect(self).toBe(service);
      expect(got).toEqual(args);
      expect(got).toHaveLength(args.length);
      expect(id).toBe(1);
    }
    // A @PooledConnection() after three arguments, with fewer, as many and more passed.
    await expect(service.fourth('a')).resolves.toStrictEqual([service, 'a', undefined, undefined, true]);
    await expect(service.fourth('a', 'b', 'c')).resolves.toStrictEqual([service, 'a', 'b', 'c', true]);
    await expect(
      (service.fourth as (...args: unknown[]) => Promise<unknown[]>)('a', 'b', 'c', 'not a connection', 'e'),
    ).resolves.toStrictEqual([service, 'a', 'b', 'c', true]);
    expect(pool.stats()).toMatchObject({ clients: 0, counters: { acquired: 9, released: 9 } });
  });

  it('works in request-scoped providers', async () => {
    const { moduleRef } = await setup();
    const contextId = ContextIdFactory.create();
    moduleRef.registerRequestByContextId({ user: 'ann' }, contextId);
    const perRequest = await moduleRef.resolve(PerRequest, contextId);
    await expect(perRequest.whoAndWhere()).resolves.toBe('ann on 1');
  });
});

describe('@UsePooled on Observable methods', () => {
  it('holds the lease until the stream completes', async () => {
    const { service, pool } = await setup();
    await expect(lastValueFrom(service.ticks(3).pipe(toArray()))).resolves.toEqual([1, 1, 1]);
    expect(pool.stats().clients).toBe(0);
  });

  it('runs the method inside the scope, so it can read pool.current', async () => {
    const { service } = await setup();
    await expect(firstValueFrom(service.connectionOf())).resolves.toBe(1);
  });

  it('checks the lease in when the subscriber unsubscribes', async () => {
    const { service, pool } = await setup();
    await expect(firstValueFrom(service.forever())).resolves.toBe(0);
    expect(pool.stats().clients).toBe(0);
    const sub = service.forever().subscribe();
    await tick(20);
    expect(pool.stats().clients).toBe(1);
    sub.unsubscribe();
    await tick();
    expect(pool.stats()).toMatchObject({ clients: 0, counters: { acquired: 2, released: 2 } });
  });

  it('gives up the wait when unsubscribed before a connection is free', async () => {
    const { service, pool } = await setup({ maxSize: 1 });
    const lease = await pool.acquire();
    const sub = service.forever().subscribe();
    await tick();
    expect(pool.stats().waiting).toBe(1);
    sub.unsubscribe();
    await tick();
    expect(pool.stats()).toMatchObject({ waiting: 0, clients: 1 });
    lease.release();
    expect(pool.stats().clients).toBe(0);
  });

  it('checks the lease in on error, retiring the connection when the error is fatal', async () => {
    const { service, pool } = await setup();
    await expect(lastValueFrom(service.streamFails(new Broken('reset')))).rejects.toThrow('reset');
    expect(pool.stats()).toMatchObject({ clients: 0, counters: { retired: 1 } });
  });
});

describe('@UsePooled on methods that declare no return type', () => {
  it('holds the lease of an Observable from the call until the stream completes', async () => {
    const { service, pool } = await setup();
    const stream = await service.undeclaredTicks(3);
    expect(pool.stats().clients).toBe(1);
    await expect(lastValueFrom(stream.pipe(toArray()))).resolves.toEqual([1, 1, 1]);
    await tick();
    expect(pool.stats()).toMatchObject({ clients: 0, counters: { acquired: 1, released: 1 } });
  });

  it('checks it in on unsubscribe, and gives a second subscription a lease of its own', async () => {
    const { service, pool } = await setup();
    const stream = await service.undeclaredForever();
    const first = stream.subscribe();
    await tick(12);
    first.unsubscribe();
    await tick();
    expect(pool.stats()).toMatchObject({ clients: 0, counters: { acquired: 1, released: 1 } });
    await expect(firstValueFrom(stream)).resolves.toBe(0);
    await tick();
    expect(pool.stats()).toMatchObject({ clients: 0, counters: { acquired: 2, released: 2 } });
  });

  it('checks it in on error, retiring the connection when the error is fatal', async () => {
    const { service, pool } = await setup();
    await expect(lastValueFrom(await service.undeclaredFails(new Broken('reset')))).rejects.toThrow('reset');
    await tick();
    expect(pool.stats()).toMatchObject({ clients: 0, counters: { retired: 1 } });
  });

  it('holds a plain value or promise like a declared async method', async () => {
    const { service, pool } = await setup();
    await expect(service.undeclaredValue()).resolves.toBe(1);
    expect(pool.stats()).toMatchObject({ clients: 0, counters: { acquired: 1, released: 1 } });
  });

  it('refuses retry once the method turns out to return an Observable, and checks the lease in', async () => {
    const { service, pool } = await setup();
    await expect(service.undeclaredRetried()).rejects.toThrow(
      "@UsePooled('db'): retry cannot apply to Service.undeclaredRetried: it returned an Observable, which cannot be re-run once it has emitted",
    );
    expect(pool.stats().clients).toBe(0);
  });

  it('needs no design metadata at all (esbuild, vitest): the result decides', async () => {
    class Plain {
      constructor(readonly db: ConnectionPool<FakeConnection>) {}
      stream() {
        return interval(5).pipe(
          take(2),
          map(() => this.db.current.id),
        );
      }
      fetch() {
        return Promise.resolve(this.db.current.id);
      }
    }
    for (const method of ['stream', 'fetch'] as const) {
      const descriptor = Object.getOwnPropertyDescriptor(Plain.prototype, method)!;
      expect(Reflect.getMetadata('design:returntype', Plain.prototype, method)).toBeUndefined();
      Object.defineProperty(
        Plain.prototype,
        method,
        UsePooled('db')(Plain.prototype, method, descriptor) ?? descriptor,
      );
    }
    const moduleRef = await boot({
      imports: [
        PoolModule.forRoot({ pools: [{ name: 'db', connector: new FakeConnector(), options: { clientLimit: 1 } }] }),
      ],
      providers: [
        {
          provide: Plain,
          useFactory: (db: ConnectionPool<FakeConnection>) => new Plain(db),
          inject: [getPoolToken('db')],
        },
      ],
    });
    const plain = moduleRef.get(Plain);
    await expect(plain.fetch()).resolves.toBe(1);
    const stream = (await plain.stream()) as unknown as Observable<number>;
    await expect(lastValueFrom(stream.pipe(toArray()))).resolves.toEqual([1, 1]);
    await tick();
    expect(plain.db.stats()).toMatchObject({ clients: 0, counters: { acquired: 2, released: 2 } });
  });
});

describe('@UsePooled on async generator methods', () => {
  it('holds the lease for the whole iteration, with pool.current in the body', async () => {
    const { service, pool } = await setup();
    const rows: [number, number][] = [];
    for await (const row of service.rows(3)) rows.push(row);
    expect(rows).toEqual([
      [1, 1],
      [1, 1],
      [1, 1],
    ]);
    expect(pool.stats().clients).toBe(0);
    expect(service.calls).toEqual(['rows: finally']);
  });

  it('checks the lease in when the iteration is abandoned, after the method cleaned up', async () => {
    const { service, pool } = await setup();
    for await (const row of service.rows(100)) {
      expect(row).toEqual([1, 1]);
      break;
    }
    expect(service.calls).toEqual(['rows: finally']);
    expect(pool.stats().clients).toBe(0);

    const rows = service.rows(100);
    await rows.next();
    await rows.return(undefined);
    expect(pool.stats()).toMatchObject({ clients: 0, counters: { acquired: 2, released: 2 } });
  });

  it('checks the lease in when the method throws mid-iteration', async () => {
    const { service, pool } = await setup();
    const seen: number[] = [];
    const consume = async () => {
      for await (const n of service.rowsThenFail(new Broken('gone'))) seen.push(n);
    };
    await expect(consume()).rejects.toThrow('gone');
    expect(seen).toEqual([1]);
    expect(pool.stats()).toMatchObject({ clients: 0, counters: { retired: 1 } });
  });
});

describe('@UsePooled with a @PooledConnection() parameter', () => {
  it("gives propagation 'none' its connection as an argument, with no scope, whatever the caller passed", async () => {
    const { service, pool } = await setup();
    await expect(service.bare('find', { id: 7 } as FakeConnection)).resolves.toBe('find on 1');
    const [a, b] = await Promise.all([service.bare('a'), service.bare('b')]);
    expect([a, b]).toEqual(['a on 1', 'b on 2']);
    expect(pool.stats()).toMatchObject({ clients: 0, counters: { acquired: 3, released: 3 } });
  });

  it('works on Observable and async generator methods, and alongside pool.current', async () => {
    const { service, pool } = await setup();
    await expect(lastValueFrom(service.bareStream().pipe(toArray()))).resolves.toEqual([1, 1]);
    const rows: number[] = [];
    for await (const row of service.bareRows()) rows.push(row);
    expect(rows).toEqual([1, 1]);
    await expect(service.scopedToo()).resolves.toBe(true);
    expect(pool.stats()).toMatchObject({ clients: 0 });
  });

  it('refuses a constructor parameter', () => {
    expect(() => {
      class Wrong {
        constructor(@PooledConnection() readonly conn: unknown) {}
      }
      return Wrong;
    }).toThrow(
      '@PooledConnection(): on parameter 0 of the constructor of Wrong marks a parameter of a @UsePooled method, not of a constructor',
    );
  });
});

describe('@UsePooled options', () => {
  /** Decorates `Catalog.find` with `@UsePooled('db', options)`. */
  const decorateFind = (options: UsePooledOptions) => {
    class Catalog {
      async find(): Promise<void> {}
    }
    const descriptor = Object.getOwnPropertyDescriptor(Catalog.prototype, 'find')!;
    return () => UsePooled('db', options)(Catalog.prototype, 'find', descriptor);
  };

  it('are checked where the decorator is written, naming the method and the option as written', () => {
    expect(() => UsePooled('')).toThrow('@UsePooled(""): the name must be a non-empty string naming a pool');
    expect(() => UsePooled('db', 5 as never)).toThrow("@UsePooled('db'): options must be an object, got 5");
    const wrong: [UsePooledOptions, string][] = [
      [{ timeoutMs: -5 }, "@UsePooled('db') on Catalog.find: timeoutMs must be a number above 0, got -5"],
      [
        { propagation: 'sometimes' as never },
        "@UsePooled('db') on Catalog.find: propagation must be 'reuse' or 'new' or 'none', got \"sometimes\"",
      ],
      [
        { retry: { attempts: 0 } },
        "@UsePooled('db') on Catalog.find: retry.attempts must be a whole number of 1 or more, got 0",
      ],
      [{ retry: 3 as never }, "@UsePooled('db') on Catalog.find: retry must be an object, got 3"],
      [
        { key: 'user' as never },
        "@UsePooled('db') on Catalog.find: key must be a function of the method's arguments, or false for calls without a key, got \"user\"",
      ],
      [
        { key: true as never },
        "@UsePooled('db') on Catalog.find: key must be a function of the method's arguments, or false for calls without a key, got boolean",
      ],
      [
        { propagation: 'none' },
        "@UsePooled('db') on Catalog.find: propagation 'none' leaves the method no pool.current; mark the parameter that takes the connection with @PooledConnection()",
      ],
    ];
    for (const [options, message] of wrong) {
      expect(decorateFind(options)).toThrow(message);
      // No "pool" subject and no engine field names (acquire.timeoutMs) for a decorator's options.
      expect(decorateFind(options)).not.toThrow(/pool "db"|acquire\./);
    }
    expect(decorateFind({ timeoutMs: 5, key: false, propagation: 'new' })).not.toThrow();
  });

  it('name the method when it returns what it did not declare', async () => {
    const { service } = await setup();
    await expect(service.liesAboutPromise()).rejects.toThrow(
      "@UsePooled('db') on Service.liesAboutPromise: the method declares a Promise but returned an Observable",
    );
    await expect(firstValueFrom(service.liesAboutObservable())).rejects.toThrow(
      "@UsePooled('db') on Service.liesAboutObservable: the method declares an Observable but returned 7",
    );
    expect(service.db.stats()).toMatchObject({ clients: 0 });
  });

  it('refuse retry on a stream method', () => {
    const decorate = UsePooled('db', { retry: { attempts: 2 } });
    class Streams {
      async *rows(): AsyncGenerator<number> {}
    }
    const descriptor = Object.getOwnPropertyDescriptor(Streams.prototype, 'rows')!;
    expect(() => decorate(Streams.prototype, 'rows', descriptor)).toThrow(
      'cannot apply to Streams.rows: it returns a stream, which cannot be re-run once it has emitted',
    );
  });

  it('refuse anything but a method', () => {
    const descriptor = { get: () => 1 } as PropertyDescriptor;
    expect(() => UsePooled('db')(class Thing {}.prototype, 'size', descriptor)).toThrow(
      "@UsePooled('db'): Thing.size is not a method; @UsePooled decorates methods only",
    );
  });
});

describe('@UsePooled and dependency injection', () => {
  /** A stand-in pool, as a test would write one: it counts uses and lends a fixed connection. */
  class StandInPool {
    uses = 0;
    readonly current = { id: 99 };
    async use<R>(fn: (conn: { id: number }) => R | Promise<R>): Promise<R> {
      this.uses++;
      return fn(this.current);
    }
  }

  async function bootWith(pool: unknown, connector = new FakeConnector()) {
    const moduleRef = await Test.createTestingModule({
      imports: [PoolModule.forRoot({ pools: [{ name: 'db', connector, options: { minSize: 1 } }] })],
      providers: [Service, PerRequest],
    })
      .overrideProvider(getPoolToken('db'))
      .useValue(pool)
      .compile();
    await moduleRef.init();
    return moduleRef;
  }

  it('uses the pool overrideProvider gives, and never makes the real one', async () => {
    const standIn = new StandInPool();
    const connector = new FakeConnector();
    const moduleRef = await bootWith(standIn, connector);
    try {
      const service = moduleRef.get(Service);
      await expect(service.connectionId()).resolves.toBe(99);
      await expect(service.forUser('ann')).resolves.toBe('ann on 99');
      expect(standIn.uses).toBe(2);
      expect(connector.created).toBe(0);
      expect(moduleRef.get(PoolHealthIndicator).isHealthy('pools').pools.db).toMatchObject({
        health: 'missing',
        lastError: 'the provider of pool "db" has no stats() (a stand-in from a test?)',
      });
    } finally {
      await moduleRef.close();
    }
  });

  it('uses a real pool given with useValue, in singletons and request-scoped providers, and leaves it open at shutdown', async () => {
    const pool = new ConnectionPool(new FakeConnector(), { name: 'test-db', clientLimit: 1 });
    const moduleRef = await bootWith(pool);
    try {
      await expect(moduleRef.get(Service).connectionId()).resolves.toBe(1);
      const contextId = ContextIdFactory.create();
      moduleRef.registerRequestByContextId({ user: 'bob' }, contextId);
      await expect((await moduleRef.resolve(PerRequest, contextId)).whoAndWhere()).resolves.toBe('bob on 1');
      expect(pool.stats().counters).toMatchObject({ acquired: 2, released: 2 });
      expect(moduleRef.get(PoolHealthIndicator).isHealthy('pools').pools).toMatchObject({
        status: 'up',
        db: { health: 'healthy', maxSize: pool.options.maxSize },
      });
    } finally {
      await moduleRef.close();
    }
    expect(pool.closed).toBe(false);
    await pool.close();
  });

  it('refuses a call on an instance no Nest application made, saying what to do', async () => {
    const pool = new ConnectionPool(new FakeConnector(), { name: 'db' });
    const error = await new Service(pool as ConnectionPool<FakeConnection>).connectionId().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PoolNotFoundError);
    expect((error as Error).message).toBe(
      "@UsePooled('db') on Service.connectionId was called on an instance no Nest application bound to a pool: Nest did not make it, its application has not started (app.init(), or moduleRef.init() in a test), or the application does not import PoolModule. A testing module that provides getPoolToken('db') itself needs imports: [PoolModule.forTesting()] too; outside Nest, call pool.use() yourself",
    );
    expect(pool.stats().counters.acquired).toBe(0);
    await pool.close();
  });

  it('finds pools through the public DiscoveryService, not the modules container', () => {
    const source = readFileSync(new URL('../../lib/nest/pooled-method-binder.ts', import.meta.url), 'utf8');
    expect(source).toContain('DiscoveryService');
    expect(readFileSync(new URL('../../lib/nest/pool.module.ts', import.meta.url), 'utf8')).not.toContain(
      'ModulesContainer',
    );
  });
});

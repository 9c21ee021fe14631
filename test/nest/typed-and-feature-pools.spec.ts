// definePool: one name with one connection type, for registration and injection; forFeature:
// a feature module's own pools. The type checks below are part of `npm run typecheck` (CI runs it):
// each @ts-expect-error fails the build if its line ever compiles.
import { describe, expect, it } from '@jest/globals';
import { Inject, Injectable, Module } from '@nestjs/common';
import {
  definePool,
  getPoolToken,
  InjectPool,
  PoolHealthIndicator,
  PoolModule,
  UsePooled,
  type ConnectionPool,
  type Connector,
  type PoolOf,
} from '../../lib/index.js';
import { boot } from '../support/nest.js';

interface Word {
  text: string;
}
const Words = definePool<Word>('words');
const words: Connector<Word> = { create: async () => ({ text: 'hello' }) };

@Injectable()
class Greeter {
  constructor(@InjectPool(Words) readonly pool: PoolOf<typeof Words>) {}

  @UsePooled(Words)
  async greet(name: string): Promise<string> {
    return `${this.pool.current.text}, ${name}`;
  }
}

describe('definePool', () => {
  it('names the pool for forRoot, @InjectPool, @UsePooled, getPoolToken and get()', async () => {
    const moduleRef = await boot({
      imports: [PoolModule.forRoot({ pools: [Words.define(words, { clientLimit: 2 })] })],
      providers: [Greeter],
    });
    const pool: ConnectionPool<Word> = Words.get(moduleRef);
    expect(pool).toBe(moduleRef.get(getPoolToken(Words)));
    expect(pool).toBe(moduleRef.get(Greeter).pool);
    expect(Words).toMatchObject({ name: 'words', token: getPoolToken('words') });
    await expect(moduleRef.get(Greeter).greet('ann')).resolves.toBe('hello, ann');
    expect(pool.options.clientLimit).toBe(2);
    expect(pool.stats().counters).toMatchObject({ acquired: 1, released: 1 });
  });

  it('checks the connector and the pool against the type, at compile time', () => {
    const numbers: Connector<number> = { create: async () => 42 };
    // @ts-expect-error a connector of numbers does not make Words
    expect(Words.define(numbers).name).toBe('words');
    const asPool = (from: { get(token: string): unknown }) => {
      // @ts-expect-error the pool of Words lends Word, not number
      const wrong: ConnectionPool<number> = Words.get(from);
      return wrong;
    };
    expect(typeof asPool).toBe('function');
  });

  it('refuses an empty name, saying what to change', () => {
    expect(() => definePool('')).toThrow('definePool(""): the name must be a non-empty string naming a pool');
  });
});

describe('PoolModule.forFeature', () => {
  it("gives a feature module its own pools; the health indicator sees the application's every pool", async () => {
    @Injectable()
    class Reports {
      constructor(@Inject(getPoolToken('reports')) readonly pool: ConnectionPool<string>) {}
      @UsePooled('reports')
      async run(): Promise<string> {
        return this.pool.current;
      }
    }
    @Module({
      imports: [
        PoolModule.forFeature([
          { name: 'reports', connector: { create: async () => 'report-conn' }, options: { maxSize: 3 } },
        ]),
      ],
      providers: [Reports],
      exports: [Reports],
    })
    class ReportsModule {}

    const moduleRef = await boot({
      imports: [PoolModule.forRoot({ pools: [Words.define(words)] }), ReportsModule],
      providers: [Greeter],
    });
    await expect(moduleRef.get(Reports).run()).resolves.toBe('report-conn');
    expect(moduleRef.get(Reports).pool.options.maxSize).toBe(3);
    const health = moduleRef.get(PoolHealthIndicator).isHealthy('pools');
    expect(Object.keys(health.pools).sort()).toEqual(['reports', 'status', 'words']);
    expect(health.pools.status).toBe('up');
  });

  it('keeps names unique in the application, and checks its settings', async () => {
    @Module({ imports: [PoolModule.forFeature([Words.define(words)])] })
    class Twice {}
    await expect(boot({ imports: [PoolModule.forRoot({ pools: [Words.define(words)] }), Twice] })).rejects.toThrow(
      'pool "words": option "name" is used by two pools of this application; give every pool its own name',
    );
    expect(() => PoolModule.forFeature([])).toThrow(
      'PoolModule.forFeature: option "pools" must list at least one pool',
    );
    expect(() => PoolModule.forFeature([Words.define(words)], { shutdownGraceMs: -1 })).toThrow(
      'PoolModule.forFeature: option "shutdownGraceMs" must be',
    );
  });
});

describe('PoolModule.forRootAsync', () => {
  it('refuses options on a pool entry, which it would ignore', () => {
    expect(() =>
      PoolModule.forRootAsync({ pools: [Words.define(words, { maxSize: 5 })], useFactory: () => ({}) }),
    ).toThrow(
      'pool "words": option "options" is not taken by forRootAsync: pool options come from its factory ({ pools: { [name]: options } }); move them there, or register with forRoot',
    );
  });
});

/**
 * `@UsePooled` against `pool.use()`, each in a process of its own: the honest case the issue asks
 * for. In one process, the pool's call sites have seen both callers before either is measured, so
 * the JIT's feedback is shared (and the in-process rows of the main bench can favour either);
 * here each variant warms and runs alone. Same pool options, same async body, default
 * propagation, 1 or 100 callers.
 *
 * Run by `npm run bench`; `node dist-bench/bench/decorator-cost.js <variant> <callers>` prints the
 * best of five rounds as JSON.
 */
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ConnectionPool, getPoolToken, InjectPool, PoolModule, UsePooled } from '../lib/index.js';
import { alternating, callRound, serveWhenRun, type Rounds } from './fresh-process.js';

/** `use again`: `use` measured a second time, the same code in processes of its own: the noise between two identical variants. */
export type DecoratorVariant = 'use' | 'use again' | 'decorated';

interface Conn {
  readonly id: number;
}

@Injectable()
class Service {
  constructor(@InjectPool('bench') private readonly pool: ConnectionPool<Conn>) {}

  @UsePooled('bench')
  async id(): Promise<number> {
    return this.pool.current.id;
  }
}

let ids = 0;
@Module({
  imports: [
    PoolModule.forRoot({
      pools: [
        {
          name: 'bench',
          connector: { create: async () => ({ id: ids++ }) },
          options: { clientLimit: 1, maxSize: 10, minSize: 10, metrics: false },
        },
      ],
    }),
  ],
  providers: [Service],
})
class BenchModule {}

/** `variant` with `callers` concurrent callers, set up: a round is `calls` calls (calls per second); 300,000 calls warm it. */
async function setUp(variant: DecoratorVariant, callers: number, calls: number): Promise<Rounds> {
  const app = await NestFactory.createApplicationContext(BenchModule, { logger: false });
  const pool = app.get<ConnectionPool<Conn>>(getPoolToken('bench'));
  const service = app.get(Service);
  // The same body on both sides: an async function that reads the scope's connection
  // (`pool.current`, an AsyncLocalStorage read), as the decorated method does.
  const call = variant === 'decorated' ? () => service.id() : () => pool.use(async () => pool.current.id);
  const round = callRound(callers, call);
  return { round: () => round(calls), close: () => app.close(), warmRounds: Math.ceil(300_000 / calls) };
}

/** `sets` sets of live processes, one per variant, each running `rounds` rounds of `calls` calls, the variants in turn (see {@link alternating}). */
export function alternatingDecoratorCases(
  variants: readonly DecoratorVariant[],
  callers: number,
  sets: number,
  rounds: number,
  calls: number,
): Promise<Record<DecoratorVariant, number>[][]> {
  return alternating(import.meta.url, variants, (variant) => [variant, String(callers), String(calls)], sets, rounds);
}

serveWhenRun(import.meta.url, ([variant, callers, calls]) =>
  setUp(variant as DecoratorVariant, Number(callers), Number(calls ?? 300_000)),
);

/**
 * `@UsePooled` against `pool.use()`, each in a process of its own: the honest case the issue asks
 * for. In one process, the pool's call sites have seen both callers before either is measured, so
 * the JIT's feedback is shared (and the in-process rows of the main bench can favour either);
 * here each variant warms and runs alone. Same pool options, same async body, default
 * propagation, 1 or 100 callers.
 *
 * Run by `npm run bench`; `node dist-bench/bench/decorator-cost.js <variant> <callers>` prints one
 * measurement as JSON.
 */
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ConnectionPool, getPoolToken, InjectPool, PoolModule, UsePooled } from '../lib/index.js';
import { answerWhenRun, inFreshProcess } from './fresh-process.js';

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
  imports: [PoolModule.forRoot({ pools: [{ name: 'bench', connector: { create: async () => ({ id: ids++ }) }, options: { clientLimit: 1, maxSize: 10, minSize: 10, metrics: false } }] })],
  providers: [Service],
})
class BenchModule {}

/** Calls per second of `variant` with `callers` concurrent callers: the best of five rounds after a warm-up. */
async function run(variant: DecoratorVariant, callers: number): Promise<number> {
  const app = await NestFactory.createApplicationContext(BenchModule, { logger: false });
  const pool = app.get<ConnectionPool<Conn>>(getPoolToken('bench'));
  const service = app.get(Service);
  // The same body on both sides: an async function that reads the scope's connection
  // (`pool.current`, an AsyncLocalStorage read), as the decorated method does.
  const call = variant === 'decorated' ? () => service.id() : () => pool.use(async () => pool.current.id);
  const round = async (total: number) => {
    let left = total;
    const worker = async () => {
      while (left-- > 0) await call();
    };
    const started = process.hrtime.bigint();
    await Promise.all(Array.from({ length: callers }, worker));
    return total / (Number(process.hrtime.bigint() - started) / 1e9);
  };
  await round(200_000);
  let best = 0;
  for (let i = 0; i < 5; i++) best = Math.max(best, await round(300_000));
  await app.close();
  return best;
}

/** One measurement in a fresh process. */
export function measureDecoratorCase(variant: DecoratorVariant, callers: number): Promise<number> {
  return inFreshProcess(import.meta.url, [variant, String(callers)]);
}

answerWhenRun(import.meta.url, ([variant, callers]) => run(variant as DecoratorVariant, Number(callers)));

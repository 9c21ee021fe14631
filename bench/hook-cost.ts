/**
 * What AsyncLocalStorage's promise hook costs a Nest route on Fastify that never touches a pool.
 * On Node 20 the hook turns on for the whole process at the first `AsyncLocalStorage.run()`,
 * which a scoped `pool.use()` (or `@UsePooled`) does; `propagation: 'none'` never does. Once on,
 * the hook stays on, so each case runs in a process of its own:
 *
 * - `untouched`: the pool is never used;
 * - `none`: the pool was used with `propagation: 'none'`;
 * - `scoped`: the pool was used once with the default propagation.
 *
 * The route is served through Fastify's `inject()` (no sockets), so the figure is the framework's
 * own work per request. Run by `npm run bench`; `node dist-bench/bench/hook-cost.js <case>` prints
 * one case as JSON.
 */
import { executionAsyncId } from 'node:async_hooks';
import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { ConnectionPool, getPoolToken, PoolModule } from '../lib/index.js';
import { answerWhenRun, inFreshProcess } from './fresh-process.js';

export type HookCase = 'untouched' | 'none' | 'scoped';
export interface HookCaseResult {
  /** Requests per second through inject(). */
  rate: number;
  /** Whether the promise hook was on while measuring. */
  hookOn: boolean;
  /** pool.use() cycles per second in this case's propagation (none for `untouched`). */
  useRate?: number;
}

@Controller()
class PlainController {
  /** A route that awaits a little, as a handler does, and touches no pool. */
  @Get('plain')
  async plain(): Promise<{ ok: boolean; n: number }> {
    let n = 0;
    for (let i = 0; i < 4; i++) n += await Promise.resolve(i);
    return { ok: true, n };
  }
}

@Module({
  imports: [
    PoolModule.forRoot({
      pools: [
        {
          name: 'db',
          connector: { create: async () => ({ id: 1 }) },
          options: { clientLimit: 1, maxSize: 10, minSize: 10 },
        },
      ],
    }),
  ],
  controllers: [PlainController],
})
class HookModule {}

/** Whether a promise continuation runs with an async id: only when the promise hook is on. */
const hookOn = () => Promise.resolve().then(() => executionAsyncId() !== 0);

async function runCase(which: HookCase): Promise<HookCaseResult> {
  const app = await NestFactory.create<NestFastifyApplication>(HookModule, new FastifyAdapter(), { logger: false });
  await app.init();
  const fastify = app.getHttpAdapter().getInstance();
  await fastify.ready();
  const pool = app.get<ConnectionPool<{ id: number }>>(getPoolToken('db'));
  let useRate: number | undefined;
  const cycles = 200_000;
  if (which === 'untouched') {
    // The same number of awaited async calls, without the pool, so every case warms the same.
    const call = async (c: { id: number }) => c.id;
    for (let i = 0; i < cycles; i++) await call({ id: i });
  } else {
    const options = which === 'none' ? ({ propagation: 'none' } as const) : undefined;
    const started = process.hrtime.bigint();
    for (let i = 0; i < cycles; i++) await pool.use(async (c) => c.id, options);
    useRate = cycles / (Number(process.hrtime.bigint() - started) / 1e9);
  }
  const on = await hookOn();
  const batch = async (n: number) => {
    for (let i = 0; i < n; i += 10)
      await Promise.all(Array.from({ length: 10 }, () => fastify.inject({ method: 'GET', url: '/plain' })));
  };
  await batch(20_000); // warm up the JIT
  let best = 0;
  for (let round = 0; round < 5; round++) {
    const n = 20_000;
    const started = process.hrtime.bigint();
    await batch(n);
    best = Math.max(best, n / (Number(process.hrtime.bigint() - started) / 1e9));
  }
  await app.close();
  return { rate: best, hookOn: on, useRate };
}

/** One case in a fresh process (the hook never turns off once on). */
export function measureHookCase(which: HookCase): Promise<HookCaseResult> {
  return inFreshProcess(import.meta.url, [which]);
}

answerWhenRun(import.meta.url, ([which]) => runCase(which as HookCase));

import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ConnectionPool, getPoolToken, InjectPool, PoolModule, UsePooled } from '../../lib/index.js';
import { measureHookCase, type HookCase, type HookCaseResult } from '../hook-cost.js';
import { alternatingDecoratorCases } from '../decorator-cost.js';
import { bestOf, describe, pairedRatio } from '../paired.js';

import { Resource, ACQUIRE_TIMEOUT_MS, instant, compare } from '../contenders.js';

/** A service with one decorated method, to weigh `@UsePooled` against a direct `pool.use()`. */
@Injectable()
class Decorated {
  constructor(@InjectPool('bench') private readonly pool: ConnectionPool<Resource>) {}

  @UsePooled('bench')
  async id(): Promise<number> {
    return this.pool.current.id;
  }

  @UsePooled('bench', { key: (user: unknown) => String(user) })
  async idFor(_user: string): Promise<number> {
    return this.pool.current.id;
  }
}

@Module({
  imports: [
    PoolModule.forRoot({
      pools: [
        {
          name: 'bench',
          connector: instant,
          options: { clientLimit: 1, maxSize: 10, minSize: 10, acquireTimeoutMs: ACQUIRE_TIMEOUT_MS },
        },
      ],
    }),
  ],
  providers: [Decorated],
})
class DecoratedModule {}

/** `@UsePooled` against `pool.use()` on the same pool of a Nest app, 1 and 100 callers. */
export async function decoratorBench(
  results: Record<string, unknown>,
  rows: string[][],
  fmt: (n: number) => string,
): Promise<void> {
  const app = await NestFactory.createApplicationContext(DecoratedModule, { logger: false });
  const pool = app.get<ConnectionPool<Resource>>(getPoolToken('bench'));
  const service = app.get(Decorated);
  const same = () => ({ warm: async () => {}, close: async () => {} });
  const decorator: Record<string, unknown> = {};
  for (const concurrency of [1, 100]) {
    const best = await compare(
      {
        // The same async body as the decorated method's (it reads the scope's connection), so both make the same promises.
        'pool.use()': () => ({ ...same(), cycle: async () => void (await pool.use(async () => pool.current.id)) }),
        '@UsePooled': () => ({ ...same(), cycle: async () => void (await service.id()) }),
        '@UsePooled with a key': () => ({ ...same(), cycle: async () => void (await service.idFor('ann')) }),
      },
      concurrency,
      500_000,
    );
    const cost = best['pool.use()']! / best['@UsePooled']!;
    decorator[`c${concurrency}`] = { ...best, costVsUse: cost };
    const shape = `@UsePooled vs pool.use(), ${concurrency} caller(s)`;
    for (const [name, r] of Object.entries(best))
      rows.push([shape, name, fmt(r), `${(1e6 / r!).toFixed(2)} µs per call`]);
    rows.push([
      shape,
      'time per call, @UsePooled / pool.use(), in one process',
      `${cost.toFixed(2)}×`,
      'see the fresh-process row',
    ]);
  }
  // The honest case: each variant in a process of its own (no shared JIT feedback), the variants
  // taking rounds in turn. The ratio is taken round by round (see paired.ts), and so is the control's.
  for (const callers of [1, 100] as const) {
    const { sets, rounds: perSet } = DECORATOR[callers];
    const rounds = await alternatingDecoratorCases(
      ['use', 'decorated', 'use again'],
      callers,
      sets,
      perSet,
      DECORATOR_CALLS,
    );
    const best = bestOf(rounds);
    const cost = pairedRatio(rounds, (r) => r.use / r.decorated);
    // Two identical variants differ by this much: a smaller cost cannot be told from none.
    const noise = pairedRatio(rounds, (r) => r.use / r['use again']);
    decorator[`fresh${callers}`] = { ...best, cost, noise, rounds };
    const shape = `@UsePooled vs pool.use(), ${callers} caller(s), fresh processes`;
    rows.push([
      shape,
      'pool.use() / @UsePooled (best of each)',
      `${fmt(best.use)} / ${fmt(best.decorated)}`,
      `${(1e6 / best.use).toFixed(2)} / ${(1e6 / best.decorated).toFixed(2)} µs per call`,
    ]);
    rows.push([
      shape,
      'time per call, @UsePooled / pool.use(), round by round',
      describe(cost, 1.05, 'at most'),
      'target ≤ 1.05×',
    ]);
    rows.push([
      shape,
      'control: pool.use() / pool.use() again, round by round',
      describe(noise),
      'the noise of this measurement',
    ]);
  }
  results.decorator = decorator;
  await app.close();
}

/**
 * The cost of AsyncLocalStorage's promise hook to a Fastify route that touches no pool, once a
 * scoped use() turned it on, against `propagation: 'none'` (which never does). Fresh processes,
 * the cases taken in turn three times; the best rate of each.
 */
export async function hookBench(
  results: Record<string, unknown>,
  rows: string[][],
  fmt: (n: number) => string,
): Promise<void> {
  const cases: HookCase[] = ['untouched', 'none', 'scoped'];
  const best: Partial<Record<HookCase, HookCaseResult>> = {};
  for (let round = 0; round < 3; round++) {
    for (const which of cases) {
      const r = await measureHookCase(which);
      if (r.rate > (best[which]?.rate ?? 0))
        best[which] = { ...r, useRate: Math.max(r.useRate ?? 0, best[which]?.useRate ?? 0) || undefined };
    }
  }
  const shape = 'a Fastify route that uses no pool (inject)';
  const base = best.untouched!.rate;
  for (const which of cases) {
    const r = best[which]!;
    const after = {
      untouched: 'no pool used',
      none: "after pool.use(fn, { propagation: 'none' })",
      scoped: 'after one scoped pool.use()',
    }[which];
    rows.push([
      shape,
      after,
      fmt(r.rate),
      `${((r.rate / base) * 100).toFixed(0)} % of untouched; promise hook ${r.hookOn ? 'on' : 'off'}`,
    ]);
  }
  const none = best.none!.useRate!;
  const scoped = best.scoped!.useRate!;
  rows.push([
    "pool.use(), 1 caller, 'none' vs scoped",
    'cycles per second',
    `${fmt(none)} / ${fmt(scoped)}`,
    `${(none / scoped).toFixed(2)}×`,
  ]);
  results.promiseHook = {
    ...best,
    routeLossWhenScoped: 1 - best.scoped!.rate / base,
    routeLossWithNone: 1 - best.none!.rate / base,
    useNoneVsScoped: none / scoped,
  };
}

export const DECORATOR = {
  1: { sets: 64, rounds: 24 },
  100: { sets: 40, rounds: 16 },
} as const;
/** Calls in a round of the `@UsePooled` rows: 30-45 ms here. */
export const DECORATOR_CALLS = 40_000;

import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { ConnectionPool } from '../core/index.js';
import type { PoolModuleSettings } from './pool-module-options.js';
import type { ModuleLimiters } from './module-limiters.js';
import { PoolRegistry } from './pool-registry.js';
import { MODULE_LIMITERS, MODULE_POOLS, POOL_MODULE_SETTINGS } from './tokens.js';

/** The pools one `PoolModule` import declares, and those of them its providers made (not overridden ones). */
export class ModulePools {
  readonly pools: ConnectionPool<unknown>[] = [];
  constructor(readonly names: readonly string[]) {}
}

/**
 * Declares the pool names of one `PoolModule` import to the application, warms up the pools it
 * made when the module starts, and closes them (then their limiters) on shutdown. A pool whose
 * provider a test overrode is the test's: it is neither warmed up nor closed here.
 */
@Injectable()
export class PoolLifecycle implements OnModuleInit, OnApplicationShutdown {
  readonly #logger = new Logger('PoolModule');

  constructor(
    @Inject(MODULE_POOLS) private readonly made: ModulePools,
    @Inject(POOL_MODULE_SETTINGS) private readonly settings: PoolModuleSettings,
    @Inject(MODULE_LIMITERS) private readonly limiters: ModuleLimiters,
    registry: PoolRegistry,
  ) {
    for (const name of made.names) registry.declare(name, made);
  }

  private get pools(): ConnectionPool<unknown>[] {
    return this.made.pools;
  }

  async onModuleInit(): Promise<void> {
    const results = await Promise.allSettled(this.pools.map((pool) => pool.warmup()));
    const failures = results.flatMap((r, i) => (r.status === 'rejected' ? [{ pool: this.pools[i], error: r.reason as unknown }] : []));
    if (failures.length === 0) return;
    if (this.settings.failOnWarmupError === true) {
      await this.#closeAll(0);
      throw failures[0].error;
    }
    for (const { pool, error } of failures) {
      this.#logger.warn(
        `pool "${pool.name}" could not open its minSize connections (${error instanceof Error ? error.message : String(error)}); ` +
          'it keeps trying in the background. Set failOnWarmupError to stop start-up instead.',
      );
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.#closeAll(this.settings.shutdownGraceMs ?? 10_000);
  }

  async #closeAll(graceMs: number): Promise<void> {
    await Promise.all(this.pools.map((pool) => pool.close({ graceMs })));
    await this.limiters.close();
  }
}

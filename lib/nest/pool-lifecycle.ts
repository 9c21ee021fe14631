import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { type ConnectionPool, messageOf, type SharedBudget } from '../core/index.js';
import type { PoolGroup } from '../groups/index.js';
import type { PoolModuleSettings } from './pool-module-options.js';
import type { ModuleLimiters } from './module-limiters.js';
import type { PoolRegistry } from './pool-registry.js';
import { MODULE_LIMITERS, MODULE_POOLS, POOL_MODULE_SETTINGS } from './tokens.js';

/** The pools and groups one `PoolModule` import made: those of its names whose provider no test overrode. */
export class ModulePools {
  readonly pools: ConnectionPool<unknown>[] = [];
  readonly groups: PoolGroup<unknown>[] = [];

  /** Declares the import's names to the application (a name another import has is refused). */
  static declare(names: readonly string[], registry: PoolRegistry, feature: boolean): ModulePools {
    const made = new ModulePools();
    for (const name of names) registry.declare(name, made, feature);
    return made;
  }
}

/**
 * Warms up the pools one `PoolModule` import made when the module starts, after starting the
 * budgets they share (`FleetBudget`), and closes them on shutdown, then their limiters, and each
 * of their budgets on which no pool is left open (another import's, or one made outside Nest,
 * keeps it open). A pool whose provider a test overrode is the test's: it is neither warmed up nor
 * closed here.
 */
@Injectable()
export class PoolLifecycle implements OnModuleInit, OnApplicationShutdown {
  readonly #logger = new Logger('PoolModule');

  constructor(
    @Inject(MODULE_POOLS) private readonly made: ModulePools,
    @Inject(POOL_MODULE_SETTINGS) private readonly settings: PoolModuleSettings,
    @Inject(MODULE_LIMITERS) private readonly limiters: ModuleLimiters,
  ) {}

  async onModuleInit(): Promise<void> {
    // Before any pool opens a connection: a fleet budget's first places wait one lease TTL, which now runs during boot.
    await Promise.all(this.#budgets().map((budget) => budget.start()));
    const results = await Promise.allSettled(this.made.pools.map((pool) => pool.warmup()));
    const failures = results.flatMap((r, i) =>
      r.status === 'rejected' ? [{ pool: this.made.pools[i], error: r.reason as unknown }] : [],
    );
    if (failures.length === 0) return;
    if (this.settings.failOnWarmupError === true) {
      await this.#closeAll(0);
      throw failures[0].error;
    }
    for (const { pool, error } of failures) {
      this.#logger.warn(
        `pool "${pool.name}" could not open its minSize connections (${messageOf(error)}); ` +
          'it keeps trying in the background. Set failOnWarmupError to stop start-up instead.',
      );
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.#closeAll(this.settings.shutdownGraceMs ?? 10_000);
  }

  async #closeAll(graceMs: number): Promise<void> {
    await Promise.all([...this.made.pools, ...this.made.groups].map((pool) => pool.close({ graceMs })));
    await this.limiters.close();
    await Promise.all(this.#budgets().map((budget) => (budget.pools === 0 ? budget.close() : undefined)));
  }

  /** The budgets this import's pools and groups share, each once. */
  #budgets(): SharedBudget[] {
    return [...new Set([...this.made.pools, ...this.made.groups].flatMap((pool) => pool.options.budget ?? []))];
  }
}

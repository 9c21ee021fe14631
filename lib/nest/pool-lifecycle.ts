import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import type { ConnectionPool } from '../core/index.js';
import { poolDirectory } from './pool-directory.js';
import type { PoolModuleSettings } from './pool-module-options.js';
import type { ModuleLimiters } from './module-limiters.js';
import { MODULE_LIMITERS, MODULE_POOLS, POOL_MODULE_SETTINGS } from './tokens.js';

/** Warms up the pools of one `PoolModule` import when the module starts, and closes them (then their limiters) on shutdown. */
@Injectable()
export class PoolLifecycle implements OnModuleInit, OnApplicationShutdown {
  readonly #logger = new Logger('PoolModule');

  constructor(
    @Inject(MODULE_POOLS) private readonly pools: ConnectionPool<unknown>[],
    @Inject(POOL_MODULE_SETTINGS) private readonly settings: PoolModuleSettings,
    @Inject(MODULE_LIMITERS) private readonly limiters: ModuleLimiters,
    private readonly app: ModulesContainer,
  ) {}

  async onModuleInit(): Promise<void> {
    this.#claimInstances();
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

  /** Tells the directory which application made each instance, for `@UsePooled` lookups. */
  #claimInstances(): void {
    for (const module of this.app.values()) {
      for (const wrapper of [...module.providers.values(), ...module.controllers.values()]) {
        const instance: unknown = wrapper.instance;
        if (typeof instance === 'object' && instance !== null) poolDirectory.claim(instance, this.app);
      }
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.#closeAll(this.settings.shutdownGraceMs ?? 10_000);
  }

  async #closeAll(graceMs: number): Promise<void> {
    await Promise.all(this.pools.map((pool) => pool.close({ graceMs })));
    for (const pool of this.pools) poolDirectory.remove(pool);
    await this.limiters.close();
  }
}

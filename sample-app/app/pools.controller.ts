import { Controller, Get, Inject } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { getPoolToken, type ConnectionPool } from 'nestjs-shared-pool';

/** The names of the sample's pools. */
export const POOL_NAMES = Symbol('POOL_NAMES');

/** Stats of every pool and its limiter: what a dashboard would scrape. */
@Controller('pools')
export class PoolsController {
  constructor(
    private readonly modules: ModuleRef,
    @Inject(POOL_NAMES) private readonly names: string[],
  ) {}

  @Get()
  stats() {
    return Object.fromEntries(
      this.names.map((name) => {
        const {
          health,
          utilization,
          size,
          ready,
          clients,
          waiting,
          clientLimit,
          maxSize,
          counters,
          admission,
          lastError,
        } = this.modules.get<ConnectionPool<unknown>>(getPoolToken(name), { strict: false }).stats();
        return [
          name,
          {
            health,
            utilization,
            size,
            ready,
            clients,
            waiting,
            clientLimit,
            maxSize,
            lastError: lastError ?? null,
            counters,
            admission: admission ?? null,
          },
        ];
      }),
    );
  }
}

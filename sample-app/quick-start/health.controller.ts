import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { PoolHealthIndicator } from 'nestjs-shared-pool';

@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly pools: PoolHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.pools.isHealthy('pools')]);
  }

  @Get('live')
  @HealthCheck()
  live() {
    return this.health.check([() => this.pools.isHealthy('pools', { downOn: ['failing'] })]);
  }
}

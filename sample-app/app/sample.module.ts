import { Module, type DynamicModule } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { Http2SessionConnector, PoolModule, type GroupDefinition, type PoolDefinition } from 'nestjs-shared-pool';
import { FleetBudget } from 'nestjs-shared-pool/groups';
import { PoolDashboardModule } from 'nestjs-shared-pool/dashboard';
import { redisConnector } from 'nestjs-shared-pool/connectors/ioredis';
import { pgConnector } from 'nestjs-shared-pool/connectors/pg';
import type { SampleConfig } from './config.js';
import { blobContainerConnector } from './connectors.js';
import { CountersController, JOBS_KEY, JobsController } from './counters.controller.js';
import { DashboardGuard } from './dashboard.js';
import { FilesController } from './files.controller.js';
import { HealthController } from '../quick-start/health.controller.js';
import { NotesController } from './notes.controller.js';
import { POOL_NAMES, PoolsController } from './pools.controller.js';
import { SharedRedis } from './redis.js';
import { TenantsController } from './tenants.controller.js';
import { UpstreamController } from './upstream.controller.js';
import { MetricsController, Telemetry } from './telemetry.js';

/** The sample app: one pool per service, the Redis and PostgreSQL ones only when configured. */
@Module({})
export class SampleModule {
  static register(config: SampleConfig): DynamicModule {
    // The pools record into the app's MeterProvider, which GET /metrics exports for Prometheus.
    const telemetry = new Telemetry();
    const metrics = telemetry.meter;
    const pools: PoolDefinition[] = [
      {
        name: 'blob',
        connector: blobContainerConnector(config.blobConnectionString, 'sample-files'),
        options: { maxSize: 4, minSize: 1, metrics }, // shared: the connector says clientLimit 100
      },
      {
        name: 'upstream',
        connector: new Http2SessionConnector(config.upstreamUrl),
        options: {
          maxSize: 8,
          clientLimit: 100, // lowered to the peer's max concurrent streams
          minSize: 1,
          maxIdleMs: 20_000, // below the upstream's idle timeout
          metrics, // the app's OpenTelemetry meter (see Metrics)
          // One limit for every instance of the app (shared through Redis when there is one), found
          // by itself from how the upstream's answers come back; at most perKey per user.
          limits: {
            adaptive: { algorithm: 'vegas', min: 4, max: 400, initial: 20 },
            perKey: config.perUserLimit,
            ...(config.redisUrl === undefined
              ? {}
              : { redis: { url: config.redisUrl, namespace: 'sample-upstream', leaseTtlMs: 3_000 } }),
          },
        },
      },
    ];
    // One member per tenant, each with its own HTTP/2 sessions, all within one budget of 6.
    const groups: GroupDefinition[] = [
      {
        name: 'tenants',
        connector: () => new Http2SessionConnector(config.upstreamUrl),
        options: { maxTotal: 6, maxMembers: 50, member: { clientLimit: 20, maxSize: 3, maxIdleMs: 20_000 } }, // no metrics per member: a series per tenant
      },
    ];
    const controllers: DynamicModule['controllers'] = [
      FilesController,
      UpstreamController,
      TenantsController,
      PoolsController,
      HealthController,
      MetricsController,
    ];
    const providers: NonNullable<DynamicModule['providers']> = [];
    if (config.redisUrl !== undefined) {
      // Exclusive connections for blocking commands and transactions; plain commands use SharedRedis (see redis.ts).
      pools.push({ name: 'redis', connector: redisConnector(config.redisUrl), options: { maxSize: 4, metrics } }); // exclusive, reset on return: the connector says so
      const url = config.redisUrl;
      providers.push(
        { provide: SharedRedis, useFactory: () => new SharedRedis(url) },
        { provide: JOBS_KEY, useValue: config.jobsKey },
      );
      controllers.push(CountersController, JobsController);
    }
    if (config.databaseUrl !== undefined) {
      // With DB_BUDGET, every instance's pg connections together stay within it: each holds a
      // place in Redis, and places move to the instances whose callers wait. The module starts
      // the budget at boot and closes it after the pool.
      const budget =
        config.dbBudget === undefined || config.redisUrl === undefined
          ? undefined
          : new FleetBudget({ name: 'sample-db', maxTotal: config.dbBudget, redis: { url: config.redisUrl } });
      pools.push({
        name: 'pg',
        connector: pgConnector(config.databaseUrl),
        // A pool on a budget opens as its callers need (minSize 0): a place each, none held ahead.
        options: budget === undefined ? { maxSize: 5, minSize: 1, metrics } : { maxSize: 5, budget, metrics },
      }); // exclusive, reset on return: the connector says so
      controllers.push(NotesController);
    }
    return {
      module: SampleModule,
      imports: [
        TerminusModule,
        PoolModule.forRoot({ pools, groups, httpErrors: true, shutdownGraceMs: 5_000 }),
        // The live dashboard at /pools/ui: open on a developer's machine, behind a password in production.
        PoolDashboardModule.forRoot({ guards: [new DashboardGuard(config.production, config.dashboardPassword)] }),
      ],
      controllers,
      providers: [
        ...providers,
        { provide: Telemetry, useValue: telemetry },
        { provide: POOL_NAMES, useValue: pools.map((p) => p.name) },
      ],
    };
  }
}

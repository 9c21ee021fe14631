// Code the README shows in short excerpts; test/e2e/readme-snippets.spec.ts runs all of it.
import { Injectable, Module, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import type { ClientHttp2Session } from 'node:http2';
import type pg from 'pg';
import {
  ConnectionPool,
  FleetBudget,
  Http2SessionConnector,
  http2Request,
  InjectPool,
  PooledConnection,
  PoolGroup,
  PoolModule,
  UsePooled,
  type MetricsMeter,
  poolMetricProducer,
} from 'nestjs-shared-pool';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { asPgPool, pgConnector } from 'nestjs-shared-pool/connectors/pg';
import { Kysely, PostgresDialect } from 'kysely';
import { drizzle } from 'drizzle-orm/node-postgres';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { POOL_CHANNELS, type RetireMessage } from 'nestjs-shared-pool/core';
import { AdaptiveLimiter } from 'nestjs-shared-pool/limits';
import { PoolDashboardModule } from 'nestjs-shared-pool/dashboard';

export async function leaseByHand(pool: ConnectionPool<ClientHttp2Session>, signal: AbortSignal) {
  const lease = await pool.acquire({ timeoutMs: 2_000, signal });
  try {
    return await http2Request(lease.connection, { ':path': '/status' });
  } finally {
    lease.release(); // idempotent; lease.fail(err) retires a broken connection
  }
  // or: await using lease = await pool.acquire();
}

@Injectable()
export class AppConfig {
  readonly upstreamUrl = process.env.UPSTREAM_URL ?? 'http://127.0.0.1:8443';
  readonly upstreamPoolSize = Number(process.env.UPSTREAM_POOL_SIZE ?? 4);
}

@Module({ providers: [AppConfig], exports: [AppConfig] })
export class AppConfigModule {}

export const asyncRegistration = PoolModule.forRootAsync({
  imports: [AppConfigModule],
  inject: [AppConfig],
  pools: [
    {
      name: 'upstream',
      connector: {
        inject: [AppConfig],
        useFactory: (config: AppConfig) => new Http2SessionConnector(config.upstreamUrl),
      },
    },
  ],
  useFactory: (config: AppConfig) => ({ pools: { upstream: { maxSize: config.upstreamPoolSize } } }),
});

/**
 * forRootAsync fed by @nestjs/config: `ConfigModule.forRoot({ isGlobal: true })` in the app module
 * reads the environment (and a .env file); the connector and the size come from `ConfigService`.
 */
export const configRegistration = PoolModule.forRootAsync({
  inject: [ConfigService],
  pools: [
    {
      name: 'db',
      connector: {
        inject: [ConfigService],
        useFactory: (config: ConfigService) => pgConnector(config.getOrThrow<string>('DATABASE_URL')),
      },
    },
  ],
  useFactory: (config: ConfigService) => ({
    // The environment holds strings; the pool's options take numbers.
    pools: { db: { maxSize: Number(config.get('DB_POOL_SIZE') ?? 10) } },
  }),
});

@Module({ imports: [ConfigModule.forRoot({ isGlobal: true }), configRegistration] })
export class ConfiguredAppModule {}

export function limitedRegistration(llmUrl: string) {
  return PoolModule.forRoot({
    httpErrors: true, // past the per-key limit: 429; past the global one: 503; both with Retry-After
    limits: { global: 1000, perKey: 5, redis: { url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' } },
    pools: [{ name: 'llm', connector: new Http2SessionConnector(llmUrl) }],
  });
}

/** Tiers: premium users hold up to 20 calls at once, the others 5; the key is the user's id. */
export function tieredRegistration(llmUrl: string, premium: ReadonlySet<string>) {
  return PoolModule.forRoot({
    httpErrors: true,
    limits: { global: 1000, perKey: (user) => (premium.has(user) ? 20 : 5) },
    pools: [{ name: 'llm', connector: new Http2SessionConnector(llmUrl) }],
  });
}

/** A partitioned limit: 90 % guaranteed to live traffic, 10 % to batch work, the class from the user's plan. */
export function classedRegistration(llmUrl: string) {
  return PoolModule.forRoot({
    httpErrors: true,
    limits: {
      global: 100,
      classes: [
        { name: 'live', share: 0.9 },
        { name: 'batch', share: 0.1 },
      ],
    },
    // The class of every decorated call a request makes; a method's own `class` wins.
    requestClass: (ctx) =>
      ctx.switchToHttp().getRequest<{ user?: { plan?: string } }>().user?.plan === 'pro' ? 'live' : 'batch',
    pools: [{ name: 'llm', connector: new Http2SessionConnector(llmUrl) }],
  });
}

/** An upstream that rate-limits: the global limit finds itself, cut on 429s and paused for their Retry-After. */
export function adaptiveRegistration(llmUrl: string) {
  return PoolModule.forRoot({
    httpErrors: true,
    limits: new AdaptiveLimiter({ perKey: 5, adaptive: { algorithm: 'aimd', min: 1, max: 200, initial: 20 } }),
    pools: [{ name: 'llm', connector: new Http2SessionConnector(llmUrl) }],
  });
}

@Injectable()
export class PoliteCompletions {
  constructor(@InjectPool('llm') private readonly llm: ConnectionPool<ClientHttp2Session>) {}

  @UsePooled('llm', { key: (userId: unknown) => String(userId) })
  async complete(userId: string, prompt: string): Promise<string> {
    const res = await http2Request(
      this.llm.current,
      { ':method': 'POST', ':path': `/complete?user=${userId}` },
      prompt,
    );
    // A 429 or 503 thrown with its status and headers: the adaptive limit cuts, and pauses for Retry-After.
    if (res.status === 429 || res.status === 503)
      throw Object.assign(new Error(`the upstream answered ${res.status}`), {
        status: res.status,
        headers: res.headers,
      });
    return res.body.toString();
  }
}

@Injectable()
export class Completions {
  constructor(@InjectPool('llm') private readonly llm: ConnectionPool<ClientHttp2Session>) {}

  @UsePooled('llm', { key: (userId: unknown) => String(userId) }) // the admission key, from the arguments
  async complete(userId: string, prompt: string): Promise<string> {
    const res = await http2Request(
      this.llm.current,
      { ':method': 'POST', ':path': `/complete?user=${userId}` },
      prompt,
    );
    return res.body.toString();
  }
}

@Injectable()
export class ServerTime {
  // No pool.current and no AsyncLocalStorage: the connection comes as the marked parameter.
  @UsePooled('db', { propagation: 'none' })
  async serverTime(zone: string, @PooledConnection() db?: pg.Client): Promise<string> {
    const { rows } = await db!.query<{ at: string }>(`SELECT to_char(now() AT TIME ZONE $1, 'HH24:MI') AS at`, [zone]);
    return rows[0].at;
  }
}

export function databaseRegistration(databaseUrl: string) {
  return PoolModule.forRoot({
    pools: [{ name: 'db', connector: pgConnector(databaseUrl), options: { maxSize: 10 } }],
  });
}

@Injectable()
export class TenantOrders {
  constructor(@InjectPool('db') readonly db: ConnectionPool<pg.Client>) {}

  @UsePooled('db')
  async ordersOf(tenant: string) {
    const db = this.db.current;
    await db.query('BEGIN');
    await db.query("SELECT set_config('app.tenant', $1, true)", [tenant]); // SET LOCAL: this transaction only
    const { rows } = await db.query('SELECT * FROM orders'); // the policy reads current_setting('app.tenant')
    await db.query('COMMIT');
    return rows;
  }
}

/** Kysely on the pool: its own API, the pool's deadlines, limits, health, metrics and reset on return. */
export function kyselyOn(db: ConnectionPool<pg.Client>) {
  return new Kysely<Record<string, never>>({ dialect: new PostgresDialect({ pool: asPgPool(db) }) });
}

/** Drizzle on the pool, the same way. */
export function drizzleOn(db: ConnectionPool<pg.Client>) {
  return drizzle({ client: asPgPool(db) });
}

// One database per tenant, one budget of connections for all of them (the server's cap, or PgBouncer's).
export async function tenantDatabase(serverUrl: string, tenant: string): Promise<string> {
  const group = new PoolGroup<pg.Client>({
    maxTotal: 20,
    connector: (key) => pgConnector(`${serverUrl}/${key}`), // a member per key, made on its first call
    member: { clientLimit: 1, acquireTimeoutMs: 5_000 }, // the options of every member pool
  });
  const db = await group.use(
    tenant,
    async (client) => (await client.query<{ db: string }>('SELECT current_database() AS db')).rows[0].db,
  );
  await group.close();
  return db;
}

export function tenantRegistration(serverUrl: string) {
  return PoolModule.forRoot({
    groups: [
      {
        name: 'tenants',
        connector: (tenant) => pgConnector(`${serverUrl}/${tenant}`),
        options: { maxTotal: 20, member: { clientLimit: 1 } },
      },
    ],
  });
}

@Injectable()
export class TenantReports {
  constructor(@InjectPool('tenants') readonly tenants: PoolGroup<pg.Client>) {}

  @UsePooled('tenants', { key: (tenant: unknown) => String(tenant) }) // the key picks the member: the tenant's database
  async database(tenant: string, @PooledConnection() db?: pg.Client): Promise<string> {
    const { rows } = await db!.query<{ db: string }>('SELECT current_database() AS db');
    return rows[0].db;
  }
}

export function warnOnFailedConnections(warn: (line: string) => void): () => void {
  const onRetire = (message: unknown) => {
    const { pool, connectionId, reason, detail } = message as RetireMessage;
    if (reason === 'failed') warn(`${pool}: connection ${connectionId} failed: ${detail}`);
  };
  subscribe(POOL_CHANNELS.retire, onRetire);
  return () => unsubscribe(POOL_CHANNELS.retire, onRetire); // stop listening
}

/** Lets in only the app's operators (your own rule: a session, a role, a network). */
@Injectable()
export class OpsGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return (
      context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers['x-role'] === 'ops'
    );
  }
}

@Module({
  imports: [
    PoolModule.forRoot({
      pools: [
        { name: 'upstream', connector: new Http2SessionConnector(process.env.UPSTREAM_URL ?? 'http://127.0.0.1:8443') },
      ],
    }),
    PoolDashboardModule.forRoot({ guards: [OpsGuard] }), // the live page at /pools/ui, for ops only
  ],
})
export class DashboardAppModule {}

// docs/observability.md: where the pools cannot see a Meter's readers (here a Meter wrapped to add
// an attribute), the reader takes the pools' producer, and the pools hand it their timings.
export function wrappedMetrics(service: string) {
  const exporter = new PrometheusExporter({ preventServerStart: true, metricProducers: [poolMetricProducer()] });
  const provider = new MeterProvider({ readers: [exporter] });
  const inner = provider.getMeter('app');
  const meter: MetricsMeter = {
    createHistogram: (name, options) => {
      const histogram = inner.createHistogram(name, options);
      return { record: (value, attributes) => histogram.record(value, { ...attributes, service }) };
    },
    createObservableGauge: (name, options) => inner.createObservableGauge(name, options),
    createObservableCounter: (name, options) => inner.createObservableCounter(name, options),
    createObservableUpDownCounter: (name, options) => inner.createObservableUpDownCounter(name, options),
    addBatchObservableCallback: (callback, observables) =>
      inner.addBatchObservableCallback(callback, observables as never),
    removeBatchObservableCallback: (callback, observables) =>
      inner.removeBatchObservableCallback(callback, observables as never),
  };
  return { exporter, provider, meter };
}

// docs/groups.md: one connection budget for every instance of a service, kept in Redis.
export function fleetPool(databaseUrl: string, redisUrl: string, name = 'orders-db') {
  const budget = new FleetBudget({ name, maxTotal: 100, redis: { url: redisUrl } });
  const pool = new ConnectionPool(pgConnector(databaseUrl), { name: 'orders', maxSize: 50, budget });
  // On shutdown, after the pool: await budget.close();
  return { pool, budget };
}

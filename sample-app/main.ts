// The sample app: `npm start`. With no environment it starts Azurite and a cloud-like HTTP/2
// upstream in process and serves on PORT (3000). AZURE_STORAGE_CONNECTION_STRING, UPSTREAM_URL,
// REDIS_URL and DATABASE_URL switch pools to real services (and add the Redis and PostgreSQL ones).
import { NestFactory } from '@nestjs/core';
import type { INestApplication, LogLevel } from '@nestjs/common';
import { startAzurite } from './azurite.js';
import { startCloudUpstream, type CloudUpstreamOptions } from './cloud-upstream.js';
import { azuriteConnectionString, type SampleConfig } from './app/config.js';
import { SampleModule } from './app/sample.module.js';

export interface RunningSample {
  readonly url: string;
  readonly app: INestApplication;
  readonly config: SampleConfig;
  /** Closes the app (requests in flight finish, pools close), then the embedded services. */
  close(): Promise<void>;
}

export interface SampleOptions {
  port?: number;
  env?: NodeJS.ProcessEnv;
  logger?: false | LogLevel[];
  /** Settings of the embedded upstream (when UPSTREAM_URL is not set). */
  upstream?: CloudUpstreamOptions;
}

export async function startSample(options: SampleOptions = {}): Promise<RunningSample> {
  const env = options.env ?? process.env;
  const stops: (() => Promise<void>)[] = [];
  try {
    let blobConnectionString = env.AZURE_STORAGE_CONNECTION_STRING;
    if (blobConnectionString === undefined) {
      const azurite = await startAzurite();
      stops.push(() => azurite.stop());
      blobConnectionString = azuriteConnectionString(azurite.blobEndpoint);
    }
    let upstreamUrl = env.UPSTREAM_URL;
    if (upstreamUrl === undefined) {
      // A cloud API that slows past 8 requests at once: the adaptive limit of the upstream pool finds that.
      const upstream = await startCloudUpstream({
        handshakeDelayMs: 150,
        maxConcurrentStreams: 50,
        idleTimeoutMs: 30_000,
        responseDelayMs: 10,
        capacity: 8,
        ...options.upstream,
      });
      stops.push(() => upstream.close());
      upstreamUrl = upstream.url;
    }
    const config: SampleConfig = {
      blobConnectionString,
      upstreamUrl,
      redisUrl: env.REDIS_URL,
      databaseUrl: env.DATABASE_URL,
      dbBudget: env.DB_BUDGET === undefined ? undefined : Number(env.DB_BUDGET),
      perUserLimit: Number(env.PER_USER_LIMIT ?? 5),
      jobsKey: env.JOBS_KEY ?? 'sample:jobs',
      production: env.NODE_ENV === 'production',
      dashboardPassword: env.DASHBOARD_PASSWORD,
    };
    if (config.dbBudget !== undefined && (config.redisUrl === undefined || config.databaseUrl === undefined))
      throw new Error("DB_BUDGET shares the pg pool's connections through Redis: set REDIS_URL and DATABASE_URL too");
    const app = await NestFactory.create(SampleModule.register(config), {
      logger: options.logger ?? ['log', 'warn', 'error'],
    });
    await app.listen(options.port ?? Number(env.PORT ?? 3000), '127.0.0.1');
    const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    let closing: Promise<void> | undefined;
    return {
      url,
      app,
      config,
      close: () =>
        (closing ??= (async () => {
          await app.close();
          for (const stop of stops.reverse()) await stop();
        })()),
    };
  } catch (err) {
    for (const stop of stops.reverse()) await stop();
    throw err;
  }
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) {
  const sample = await startSample();
  const pools = [
    'blob',
    'upstream',
    ...(sample.config.redisUrl ? ['redis'] : []),
    ...(sample.config.databaseUrl ? ['pg'] : []),
  ];
  console.log(`\nnestjs-shared-pool sample app on ${sample.url} (pools: ${pools.join(', ')})`);
  console.log(`  curl ${sample.url}/upstream/42 -H 'x-user-id: ann'`);
  console.log(`  curl -X PUT ${sample.url}/files/hello.txt -H 'content-type: application/json' -d '{"content":"hi"}'`);
  console.log(`  curl ${sample.url}/tenants/acme/items/7`);
  console.log(`  curl ${sample.url}/health    curl ${sample.url}/pools`);
  console.log(
    `  dashboard: ${sample.url}/pools/ui${sample.config.production ? '   (production: user ops, password DASHBOARD_PASSWORD)' : ''}`,
  );
  console.log(`  npm run load   (in another terminal)\n`);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.log(`${signal}: finishing requests in flight, closing pools`);
      void sample.close().then(() => process.exit(0));
    });
  }
}

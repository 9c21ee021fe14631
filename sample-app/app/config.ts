// What the sample app connects to. Every service has an embedded default; an environment
// variable switches it to a real one.

export interface SampleConfig {
  /** Azure Storage connection string (Azurite's when embedded). */
  blobConnectionString: string;
  /** The HTTP/2 API the `upstream` pool talks to. */
  upstreamUrl: string;
  /** Redis for the `redis` pool and the shared limits; none: no `redis` pool, limits in process. */
  redisUrl: string | undefined;
  /** PostgreSQL for the `pg` pool; none: no `pg` pool. */
  databaseUrl: string | undefined;
  /**
   * With Redis and PostgreSQL: the `pg` pool's connections, across every instance of the app
   * sharing the Redis, within one `FleetBudget` of this many (`DB_BUDGET`); none: each instance
   * opens up to its own `maxSize`.
   */
  dbBudget: number | undefined;
  /** Concurrent upstream calls per user (`x-user-id`). */
  perUserLimit: number;
  /** The Redis list of the job queue (`JOBS_KEY`): one per app, so apps sharing a Redis do not take each other's jobs. Default `sample:jobs`. */
  jobsKey: string;
  /** NODE_ENV is 'production': the dashboard asks for DASHBOARD_PASSWORD. */
  production: boolean;
  /** The dashboard's password in production (user `ops`); none: the dashboard refuses everyone there. */
  dashboardPassword: string | undefined;
}

/** Azurite's well-known development account. */
export function azuriteConnectionString(blobEndpoint: string): string {
  return (
    'DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;' +
    'AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;' +
    `BlobEndpoint=${blobEndpoint}/devstoreaccount1;`
  );
}

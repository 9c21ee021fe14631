import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import type { ClientHttp2Session } from 'node:http2';
import { posix } from 'node:path';
import { NestFactory } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import {
  ConnectionPool,
  FleetBudget,
  getPoolToken,
  Http2SessionConnector,
  LocalLimiter,
  PoolModule,
} from '../../lib/index.js';
import { startCloudUpstream, type CloudUpstream } from '../../sample-app/cloud-upstream.js';
import { CatalogService } from '../../sample-app/quick-start/catalog.js';
import {
  adaptiveRegistration,
  asyncRegistration,
  ConfiguredAppModule,
  Completions,
  databaseRegistration,
  drizzleOn,
  fleetPool,
  kyselyOn,
  TenantOrders,
  DashboardAppModule,
  PoliteCompletions,
  leaseByHand,
  limitedRegistration,
  tieredRegistration,
  classedRegistration,
  ServerTime,
  tenantDatabase,
  TenantReports,
  tenantRegistration,
  warnOnFailedConnections,
  wrappedMetrics,
} from '../../sample-app/readme-snippets.js';
import pg from 'pg';
import { sql } from 'kysely';
import { sql as dsql } from 'drizzle-orm';
import { pgConnector } from '../../lib/connectors/pg/index.js';
import { RecordingNestLogger } from '../support/nest.js';
import { docPages, readmeBlocks, root, source } from '../support/readme.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `fn` with `vars` in the environment, then puts back what was there. */
async function withEnv(vars: Record<string, string>, fn: () => Promise<void>): Promise<void> {
  const had = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  try {
    await fn();
  } finally {
    for (const [k, v] of Object.entries(had)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

describe('the code of the README and of docs/', () => {
  it('comes from files that tests run: each block names its file and matches it', () => {
    const blocks = readmeBlocks();
    expect(blocks.length).toBeGreaterThan(20);
    for (const { file, excerpt, code, header } of blocks) {
      expect({ header, named: file !== '' }).toEqual({ header, named: true });
      const text = source(file);
      if (excerpt) expect(text).toContain(code);
      else expect(code).toBe(text);
    }
  });
});

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replace(/ /g, '-');

describe('the links of the README and of docs/', () => {
  it('lead to files that exist, and to headings that exist', () => {
    const broken: string[] = [];
    for (const page of docPages()) {
      const text = source(page).replace(/```[\s\S]*?```/g, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^(https?:|mailto:)/.test(target!)) continue;
        const [path, anchor] = target!.split('#') as [string, string | undefined];
        const file = path === '' ? page : posix.normalize(posix.join(posix.dirname(page), path));
        if (!existsSync(new URL(file, root))) {
          broken.push(`${page}: ${target} (no ${file})`);
          continue;
        }
        if (anchor === undefined) continue;
        const headings = [...source(file).matchAll(/^#+ (.+)$/gm)].map((m) => anchorOf(m[1]!));
        if (!headings.includes(anchor)) broken.push(`${page}: ${target} (no heading #${anchor} in ${file})`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('keep the README a front page: a few screens, the guides beside it', () => {
    expect(source('README.md').split('\n').length).toBeLessThan(200);
    for (const page of docPages().slice(1)) expect(source('README.md')).toContain(`](${page})`);
  });
});

describe('the stats() tables of docs/observability.md', () => {
  const page = source('docs/observability.md');
  const section = page.slice(page.indexOf('`stats()` returns `name`'), page.indexOf('## Metrics'));
  const ticked = (text: string) => [...text.matchAll(/`([a-zA-Z]+)`/g)].map((m) => m[1]).sort();

  it('name every field and counter stats() has, and no other', async () => {
    const pool = new ConnectionPool(
      { create: async () => ({}) },
      // A budget that is never started: the pool names it in stats() without asking it for anything.
      {
        name: 'db',
        limiter: new LocalLimiter({ global: 2 }),
        budget: new FleetBudget({ name: 'db', maxTotal: 2, redis: { url: 'redis://127.0.0.1:6379' } }),
      },
    );
    const stats = pool.stats();
    const fields = section.slice(0, section.indexOf('| counter |'));
    expect(ticked(fields.slice(0, fields.indexOf('and these running')))).toEqual(
      Object.keys(stats)
        .filter((k) => k !== 'counters')
        .sort(),
    );
    const counterRows = section.slice(section.indexOf('| counter |'), section.indexOf('`admission.counters`'));
    const firstColumn = counterRows
      .split('\n')
      .filter((l) => l.startsWith('| `'))
      .map((l) => l.split('|')[1]);
    expect(ticked(firstColumn.join(' '))).toEqual(Object.keys(stats.counters).sort());
    const limiterLine = section.slice(section.indexOf('`admission.counters`'));
    expect(
      ticked(limiterLine.slice(0, limiterLine.indexOf('A test compares'))).filter((k) => k !== 'counters'),
    ).toEqual(Object.keys(stats.admission!.counters).sort());
    await pool.close();
  });
});

describe('the README excerpts, run', () => {
  let upstream: CloudUpstream;
  beforeAll(async () => {
    upstream = await startCloudUpstream({ handshakeDelayMs: 10 });
  });
  afterAll(async () => {
    await upstream.close();
  });

  it('a lease by hand', async () => {
    const pool = new ConnectionPool(new Http2SessionConnector(upstream.url), { name: 'upstream' });
    const res = await leaseByHand(pool, new AbortController().signal);
    expect(res.status).toBe(200);
    expect(pool.stats().clients).toBe(0);
    await pool.close();
  });

  it('async registration from a config provider', async () => {
    await withEnv({ UPSTREAM_URL: upstream.url, UPSTREAM_POOL_SIZE: '3' }, async () => {
      const moduleRef = await Test.createTestingModule({ imports: [asyncRegistration] })
        .setLogger(new RecordingNestLogger())
        .compile();
      await moduleRef.init();
      const pool = moduleRef.get<ConnectionPool<ClientHttp2Session>>(getPoolToken('upstream'));
      expect(pool.options.maxSize).toBe(3);
      await expect(leaseByHand(pool, new AbortController().signal)).resolves.toMatchObject({ status: 200 });
      await moduleRef.close();
    });
  });

  it('feeds forRootAsync from @nestjs/config: the connector and the size from ConfigService, on a real PostgreSQL', async () => {
    const url = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';
    await withEnv({ DATABASE_URL: url, DB_POOL_SIZE: '3' }, async () => {
      const moduleRef = await Test.createTestingModule({ imports: [ConfiguredAppModule] })
        .setLogger(new RecordingNestLogger())
        .compile();
      await moduleRef.init();
      const pool = moduleRef.get<ConnectionPool<pg.Client>>(getPoolToken('db'));
      expect(pool.options.maxSize).toBe(3);
      const { rows } = await pool.use((client) => client.query<{ db: string }>('SELECT current_database() AS db'));
      expect(rows).toEqual([{ db: new URL(url).pathname.slice(1) }]);
      await moduleRef.close();
      expect(pool.stats().closed).toBe(true);
    });
  });

  it('limits on Redis with the key from the arguments', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [limitedRegistration(upstream.url)],
      providers: [Completions],
    })
      .setLogger(new RecordingNestLogger())
      .compile();
    await moduleRef.init();
    const pool = moduleRef.get<ConnectionPool<ClientHttp2Session>>(getPoolToken('llm'));
    for (let i = 0; i < 120 && pool.stats().admission?.mode !== 'redis'; i++) await sleep(50); // first use of a namespace: one TTL
    await expect(moduleRef.get(Completions).complete('ann', 'hello')).resolves.toContain('/complete?user=ann');
    expect(pool.stats().admission).toMatchObject({ mode: 'redis', limit: 1000, perKey: 5, held: 0 });
    await moduleRef.close();
  }, 15_000);

  it('tiers: a premium user holds 20 calls at once where the others hold 5', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [tieredRegistration(upstream.url, new Set(['gold']))],
      providers: [Completions],
    })
      .setLogger(new RecordingNestLogger())
      .compile();
    await moduleRef.init();
    const pool = moduleRef.get<ConnectionPool<ClientHttp2Session>>(getPoolToken('llm'));
    const completions = moduleRef.get(Completions);
    const calls = (user: string, n: number) =>
      Promise.allSettled(Array.from({ length: n }, () => completions.complete(user, 'hello')));
    const [gold, ann] = await Promise.all([calls('gold', 25), calls('ann', 8)]);
    const served = (all: PromiseSettledResult<string>[]) => all.filter((r) => r.status === 'fulfilled').length;
    expect(served(gold)).toBe(20);
    expect(served(ann)).toBe(5);
    const refused = ann.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(refused.reason).toMatchObject({ code: 'KEY_LIMIT', key: 'ann', limit: 5 }); // answered 429 by httpErrors
    expect(pool.stats().admission).toMatchObject({ perKey: NaN, held: 0 });
    await moduleRef.close();
  });

  it('a partitioned limit: the classes and their shares, a call in the default class', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [classedRegistration(upstream.url)],
      providers: [Completions],
    })
      .setLogger(new RecordingNestLogger())
      .compile();
    await moduleRef.init();
    const pool = moduleRef.get<ConnectionPool<ClientHttp2Session>>(getPoolToken('llm'));
    await expect(moduleRef.get(Completions).complete('ann', 'hello')).resolves.toContain('/complete?user=ann');
    expect(pool.stats().admission).toMatchObject({
      limit: 100,
      classes: [
        { name: 'live', share: 0.9, used: 0, waiting: 0 },
        { name: 'batch', share: 0.1, used: 0, waiting: 0 },
      ],
    });
    await moduleRef.close();
  });

  it('an adaptive limit in front of a rate-limited upstream', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [adaptiveRegistration(upstream.url)],
      providers: [PoliteCompletions],
    })
      .setLogger(new RecordingNestLogger())
      .compile();
    await moduleRef.init();
    for (let i = 0; i < 5; i++)
      await expect(moduleRef.get(PoliteCompletions).complete('ann', 'hello')).resolves.toContain('/complete?user=ann');
    const pool = moduleRef.get<ConnectionPool<ClientHttp2Session>>(getPoolToken('llm'));
    expect(pool.stats().admission).toMatchObject({
      mode: 'local',
      limit: 20,
      perKey: 5,
      adaptive: { algorithm: 'aimd', successes: 5, overloads: 0 },
    });
    await moduleRef.close();
  });

  it('Kysely and Drizzle on the pool through its pg.Pool face', async () => {
    const url = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';
    const kysely = kyselyOn(new ConnectionPool(pgConnector(url), { name: 'kysely' }));
    expect((await sql<{ n: number }>`SELECT 40 + 2 AS n`.execute(kysely)).rows[0]!.n).toBe(42);
    await kysely.destroy();
    const orm = drizzleOn(new ConnectionPool(pgConnector(url), { name: 'drizzle' }));
    expect((await orm.execute<{ n: number }>(dsql`SELECT 40 + 2 AS n`)).rows[0]!.n).toBe(42);
    await orm.$client.end();
  });

  it('per-tenant settings with SET LOCAL under row-level security: each tenant sees its own orders, none after', async () => {
    const url = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';
    const schema = `nsp_rls_${process.pid}`;
    const admin = new pg.Client(url);
    await admin.connect();
    try {
      // Row-level security binds no superuser: the app logs in as a role of its own.
      await admin.query('DO $$ BEGIN CREATE ROLE nsp_rls_app LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$');
      await admin.query(`CREATE SCHEMA ${schema}`);
      await admin.query(`CREATE TABLE ${schema}.orders (tenant text NOT NULL, item text NOT NULL)`);
      await admin.query(
        `INSERT INTO ${schema}.orders SELECT 'tenant-' || t, 'item-' || t || '-' || i FROM generate_series(0, 19) t, generate_series(1, 2) i`,
      );
      await admin.query(`ALTER TABLE ${schema}.orders ENABLE ROW LEVEL SECURITY`);
      await admin.query(
        `CREATE POLICY by_tenant ON ${schema}.orders USING (tenant = current_setting('app.tenant', true))`,
      );
      await admin.query(
        `GRANT USAGE ON SCHEMA ${schema} TO nsp_rls_app; GRANT SELECT ON ${schema}.orders TO nsp_rls_app`,
      );
      const appUrl = `postgresql://nsp_rls_app@127.0.0.1:5432/test?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
      const moduleRef = await Test.createTestingModule({
        imports: [databaseRegistration(appUrl)],
        providers: [TenantOrders],
      })
        .setLogger(new RecordingNestLogger())
        .compile();
      await moduleRef.init();
      const orders = moduleRef.get(TenantOrders);
      const seen = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          orders.ordersOf(`tenant-${(i * 7) % 20}`).then((rows) => ({ tenant: `tenant-${(i * 7) % 20}`, rows })),
        ),
      );
      for (const { tenant, rows } of seen)
        expect(rows.map((r: { tenant: string }) => r.tenant)).toEqual([tenant, tenant]);
      // Outside a transaction no tenant is set on any connection: the policy shows nothing.
      const db = moduleRef.get<ConnectionPool<pg.Client>>(getPoolToken('db'));
      const after = await Promise.all(
        Array.from({ length: 20 }, () =>
          db.use((client) => client.query('SELECT count(*)::int AS n FROM orders').then((r) => r.rows[0].n)),
        ),
      );
      expect(after).toEqual(Array(20).fill(0));
      await moduleRef.close();
    } finally {
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
    }
  });

  it('a method with propagation none, its connection as a parameter, on PostgreSQL', async () => {
    const url = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';
    const moduleRef = await Test.createTestingModule({
      imports: [PoolModule.forRoot({ pools: [{ name: 'db', connector: pgConnector(url) }] })],
      providers: [ServerTime],
    })
      .setLogger(new RecordingNestLogger())
      .compile();
    await moduleRef.init();
    await expect(moduleRef.get(ServerTime).serverTime('UTC')).resolves.toMatch(/^\d\d:\d\d$/);
    expect(moduleRef.get<ConnectionPool<unknown>>(getPoolToken('db')).stats()).toMatchObject({
      clients: 0,
      counters: { acquired: 1, released: 1 },
    });
    await moduleRef.close();
  });

  it('a pool group: one member per tenant database, by hand and in Nest', async () => {
    const server = 'postgresql://postgres@127.0.0.1:5432'; // the databases test and postgres stand for two tenants
    await expect(tenantDatabase(server, 'test')).resolves.toBe('test');
    const moduleRef = await Test.createTestingModule({
      imports: [tenantRegistration(server)],
      providers: [TenantReports],
    })
      .setLogger(new RecordingNestLogger())
      .compile();
    await moduleRef.init();
    const reports = moduleRef.get(TenantReports);
    await expect(Promise.all([reports.database('test'), reports.database('postgres')])).resolves.toEqual([
      'test',
      'postgres',
    ]);
    expect(reports.tenants.stats()).toMatchObject({
      maxTotal: 20,
      total: 2,
      members: [{ key: 'test' }, { key: 'postgres' }],
    });
    await moduleRef.close();
  });

  it('a subscriber to the retire channel', async () => {
    const lines: string[] = [];
    const stop = warnOnFailedConnections((line) => lines.push(line));
    const pool = new ConnectionPool({ create: async () => ({}) }, { name: 'db' });
    (await pool.acquire()).fail(new Error('socket hang up'));
    (await pool.acquire()).release();
    stop();
    (await pool.acquire()).fail(new Error('not heard'));
    await pool.close();
    expect(lines).toEqual(['db: connection 1 failed: socket hang up']);
  });

  it('a pool on a fleet budget: its connections take places in Redis, and give them back', async () => {
    const { pool, budget } = fleetPool(
      'postgres://postgres@127.0.0.1:5432/test',
      'redis://127.0.0.1:6379',
      `readme-${process.pid}-${Date.now()}`,
    );
    try {
      const { rows } = await pool.use((client) => client.query<{ one: number }>('SELECT 1 AS one'), {
        timeoutMs: 15_000, // a budget's first use waits one lease TTL (5 s): it looks like a Redis restart
      });
      expect(rows).toEqual([{ one: 1 }]);
      expect(budget.stats()).toMatchObject({ maxTotal: 100, held: 1, mode: 'redis' });
    } finally {
      await pool.close();
      await budget.close();
    }
    expect(budget.stats().held).toBe(0);
  }, 30_000);

  it('a Meter wrapped by the app: its reader takes the pools’ producer, and gets their timings', async () => {
    const { exporter, provider, meter } = wrappedMetrics('orders');
    const pool = new ConnectionPool({ create: async () => ({}) }, { name: 'wrapped', metrics: meter });
    await pool.use(() => new Promise((resolve) => setTimeout(resolve, 3)));
    const { resourceMetrics } = await exporter.collect();
    const use = resourceMetrics.scopeMetrics
      .flatMap((s) => s.metrics)
      .find((m) => m.descriptor.name === 'db.client.connection.use_time');
    const point = use?.dataPoints.find((p) => p.attributes['db.client.connection.pool.name'] === 'wrapped');
    expect(point?.value).toMatchObject({ count: 1 });
    expect((point!.value as { sum: number }).sum).toBeGreaterThanOrEqual(0.002);
    await pool.close();
    await provider.shutdown();
  });

  it('the dashboard, for ops only', async () => {
    process.env.UPSTREAM_URL = upstream.url;
    const app = await NestFactory.create(DashboardAppModule, { logger: false });
    try {
      await app.listen(0, '127.0.0.1');
      const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
      expect((await fetch(`${url}/pools/ui`)).status).toBe(403);
      const snapshot = await fetch(`${url}/pools/ui/snapshot`, { headers: { 'x-role': 'ops' } });
      expect(snapshot.status).toBe(200);
      expect(((await snapshot.json()) as { pools: { name: string }[] }).pools.map((p) => p.name)).toEqual(['upstream']);
    } finally {
      delete process.env.UPSTREAM_URL;
      await app.close();
    }
  });

  // The README's testing example, as a test.
  it('a service tested against a local server', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        PoolModule.forRoot({ pools: [{ name: 'upstream', connector: new Http2SessionConnector(upstream.url) }] }),
      ],
      providers: [CatalogService],
    }).compile();
    await moduleRef.init(); // warm-up runs here
    await expect(moduleRef.get(CatalogService).item('7')).resolves.toContain('/items/7');
    expect(moduleRef.get<ConnectionPool<unknown>>(getPoolToken('upstream')).stats().clients).toBe(0); // no lease leaked
    await moduleRef.close(); // closes every pool
  });

  // The README's overrideProvider example, as a test: no session is ever opened.
  it('a service tested with a stand-in pool', async () => {
    const fakePool = { use: async () => 'canned item' }; // answers every decorated call itself
    const moduleRef = await Test.createTestingModule({
      imports: [
        PoolModule.forRoot({
          pools: [{ name: 'upstream', connector: new Http2SessionConnector('http://127.0.0.1:1') }],
        }),
      ],
      providers: [CatalogService],
    })
      .overrideProvider(getPoolToken('upstream'))
      .useValue(fakePool) // @UsePooled methods and @InjectPool both get it
      .compile();
    await moduleRef.init();
    await expect(moduleRef.get(CatalogService).item('7')).resolves.toBe('canned item');
    await moduleRef.close();
  });
});

// The dashboard's server side: the page, its stream and its snapshot against what the pools'
// stats() say; one snapshot per tick for any number of viewers and none while nobody watches;
// slow, vanishing and refused clients; app.close() with pages open; pools that come and go.
import { afterEach, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { Module, type INestApplication, type ModuleMetadata } from '@nestjs/common';
import { LazyModuleLoader, NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { getPoolToken, PoolGroup, PoolModule, type ConnectionPool, type PoolConfigError } from '../../lib/index.js';
import {
  PoolDashboard,
  PoolDashboardModule,
  type DashboardSnapshot,
  type PoolDashboardOptions,
} from '../../lib/dashboard/index.js';
import { FakeConnector, type FakeConnection } from '../support/fake-connector.js';
import { liveHeap } from '../support/gc.js';
import { openSse, type SseClient } from '../support/sse.js';
import { sleep, until } from '../support/wait.js';
import { VirtualClock } from '../support/virtual-clock.js';

const SECRET = 'hunter2';
/** A connector whose connect error embeds a URL with a password, as drivers' errors do. */
const leakyConnector = {
  clientLimit: 1,
  create: async (): Promise<never> =>
    Promise.reject(new Error(`connect ECONNREFUSED postgres://app:${SECRET}@db.internal:5432/main?password=${SECRET}`)),
  close: async () => {},
};

let app: INestApplication | undefined;
const clients: SseClient[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await app?.close();
  app = undefined;
});

/** An app with pools `db` (limited per key), `broken` (failing creates) and a group `tenants`, and the dashboard. */
async function start(
  options: PoolDashboardOptions = {},
  more: { adapter?: 'express' | 'fastify'; imports?: ModuleMetadata['imports'] } = {},
) {
  @Module({
    imports: [
      PoolModule.forRoot({
        pools: [
          {
            name: 'db',
            connector: new FakeConnector(),
            options: { maxSize: 3, clientLimit: 2, limits: { global: 10, perKey: 1 } },
          },
          { name: 'broken', connector: leakyConnector, options: { maxSize: 1, acquireTimeoutMs: 50 } },
        ],
        groups: [
          {
            name: 'tenants',
            connector: () => new FakeConnector(),
            options: { maxTotal: 4, member: { clientLimit: 1 } },
          },
        ],
      }),
      PoolDashboardModule.forRoot({ intervalMs: 100, ...options }),
      ...(more.imports ?? []),
    ],
  })
  class App {}
  app = await NestFactory.create(App, more.adapter === 'fastify' ? new FastifyAdapter() : new ExpressAdapter(), {
    logger: false,
  });
  await app.listen(0, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  const dashboard = app.get(PoolDashboard);
  const db = app.get<ConnectionPool<FakeConnection>>(getPoolToken('db'));
  const broken = app.get<ConnectionPool<unknown>>(getPoolToken('broken'));
  const tenants = app.get<PoolGroup<FakeConnection>>(getPoolToken('tenants'));
  return { url, dashboard, db, broken, tenants };
}

/** A GET whose request line is `target` as given (an absolute URL, say): the whole answer as text. */
function rawGet(port: number, target: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () =>
      socket.end(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`),
    );
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
}

async function sse(url: string, headers?: Record<string, string>): Promise<SseClient> {
  const client = await openSse(url, headers);
  clients.push(client);
  return client;
}

const snapshotOf = (client: SseClient, i = client.events.length - 1) =>
  JSON.parse(client.events[i]!.data) as DashboardSnapshot;

async function get(url: string): Promise<{ status: number; type: string | null; body: string; headers: Headers }> {
  const res = await fetch(url);
  return { status: res.status, type: res.headers.get('content-type'), body: await res.text(), headers: res.headers };
}

describe('the dashboard', () => {
  it('serves its page and assets from the package, with the links under the path the page was asked at', async () => {
    const { url } = await start();
    const page = await get(`${url}/pools/ui`);
    expect(page).toMatchObject({ status: 200, type: 'text/html; charset=utf-8' });
    expect(page.body).toContain('<script src="/pools/ui/dashboard.js" defer></script>');
    expect(page.body).toContain('<link rel="stylesheet" href="/pools/ui/dashboard.css">');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.body).not.toMatch(/https?:\/\//); // nothing from a CDN
    const script = await get(`${url}/pools/ui/dashboard.js`);
    expect(script).toMatchObject({ status: 200, type: 'text/javascript; charset=utf-8' });
    expect(script.body).toContain("new EventSource(base + '/stream')");
    expect((await get(`${url}/pools/ui/dashboard.css`)).type).toBe('text/css; charset=utf-8');
  });

  it('streams snapshots that say what stats() says: pools, connections with their callers, the limiter, a group member and its share', async () => {
    const { url, db, broken, tenants } = await start();
    const leases = [
      await db.acquire({ key: 'ann' }),
      await db.acquire({ key: 'bob' }),
      await db.acquire({ key: 'cy' }),
    ];
    await expect(db.acquire({ key: 'ann', timeoutMs: 10 })).rejects.toMatchObject({ code: 'KEY_LIMIT' });
    await expect(broken.acquire()).rejects.toMatchObject({ code: 'CONNECTIONS_EXHAUSTED' });
    const member = await tenants.acquire('acme');
    const stream = await sse(`${url}/pools/ui/stream`);
    expect(stream.status).toBe(200);
    await stream.next(2);
    const shown = snapshotOf(stream);
    const stats = db.stats();

    expect(shown.pools.map((p) => p.name).sort()).toEqual(['broken', 'db']);
    const dbShown = shown.pools.find((p) => p.name === 'db')!;
    expect(dbShown).toMatchObject({
      health: stats.health,
      size: stats.size,
      ready: stats.ready,
      clients: 3,
      waiting: 0,
      clientLimit: 2,
      maxSize: 3,
    });
    expect(dbShown.connections.map((c) => [c.id, c.clients]).sort()).toEqual(
      stats.connections.map((c) => [c.id, c.clients]).sort(),
    );
    expect(dbShown.limiter).toMatchObject({
      mode: 'local',
      used: 3,
      limit: 10,
      perKey: 1,
      refused: { global: 0, key: 1 },
      held: 3,
    });
    expect(dbShown.waitMs).toMatchObject({ count: expect.any(Number) });

    const group = shown.groups.find((g) => g.name === 'tenants')!;
    const groupStats = tenants.stats();
    expect(group).toMatchObject({ maxTotal: 4, total: groupStats.total, memberCount: 1 });
    expect(group.members).toEqual([expect.objectContaining({ key: 'acme', clients: 1, connections: 1 })]);
    // Its share as planned within the last second: the page catches up with stats().
    await until(() => snapshotOf(stream).groups[0]!.members[0]!.quota === tenants.stats().members[0]!.quota);

    // The broken pool's error is shown without the password its URL carried.
    const brokenShown = shown.pools.find((p) => p.name === 'broken')!;
    expect(brokenShown.lastError).toContain('postgres://app:***@db.internal:5432/main');
    expect(stream.events.map((e) => e.data).join('')).not.toContain(SECRET);
    expect((await get(`${url}/pools/ui/snapshot`)).body).not.toContain(SECRET);
    // Sorted by trouble: the broken pool first.
    expect(shown.pools[0]!.name).toBe('broken');

    // The stream moves with the pools.
    for (const lease of leases) lease.release();
    member.release();
    await until(() => snapshotOf(stream).pools.find((p) => p.name === 'db')!.clients === 0);
    // Holds are timed from the first page on: the three leases taken before it are not.
    expect(snapshotOf(stream).pools.find((p) => p.name === 'db')!.holdMs!.count).toBe(0);
    await db.use(() => sleep(20));
    await until(() => snapshotOf(stream).pools.find((p) => p.name === 'db')!.holdMs!.count === 1);
    expect(snapshotOf(stream).pools.find((p) => p.name === 'db')!.holdMs!.p50).toBeGreaterThanOrEqual(15);
  });

  it('builds one snapshot per tick however many pages are open, and none while no page is open', async () => {
    const { url, dashboard } = await start({ intervalMs: 100 });
    const built = dashboard.feed.stats().built;
    const pages = await Promise.all(Array.from({ length: 10 }, () => sse(`${url}/pools/ui/stream`)));
    await Promise.all(pages.map((p) => p.next(1)));
    const from = dashboard.feed.stats().built;
    await sleep(1_000);
    const ticks = dashboard.feed.stats().built - from;
    expect(ticks).toBeGreaterThanOrEqual(4);
    expect(ticks).toBeLessThanOrEqual(12); // 10 a second at most, not 10 per viewer
    expect(dashboard.feed.stats().viewers).toBe(10);
    expect(built).toBe(0);
    for (const page of pages) page.close();
    await until(() => dashboard.feed.stats().viewers === 0);
    expect(dashboard.feed.stats().running).toBe(false);
    const idle = dashboard.feed.stats().built;
    await sleep(400);
    expect(dashboard.feed.stats().built).toBe(idle);
  });

  it('times the pools only while a page is open', async () => {
    const { url, db, dashboard } = await start();
    const page = await sse(`${url}/pools/ui/stream`);
    await page.next(1);
    await db.use(() => sleep(5));
    await until(() => snapshotOf(page).pools.find((p) => p.name === 'db')!.holdMs!.count === 1);
    page.close();
    await until(() => !dashboard.feed.stats().running);
    // A new page starts from nothing: what ran while nobody watched was not timed.
    await db.use(() => sleep(5));
    const again = await sse(`${url}/pools/ui/stream`);
    await again.next(1);
    expect(snapshotOf(again).pools.find((p) => p.name === 'db')!.holdMs!.count).toBe(0);
  });

  it('drops ticks for a page that does not read, holds at most one write for it, and cuts it off after slowViewerMs', async () => {
    const { url, dashboard, tenants } = await start({ intervalMs: 100, slowViewerMs: 1_500, maxMemberRows: 5_000 });
    // Big snapshots: 2,000 members.
    for (let i = 0; i < 2_000; i++)
      (
        await tenants
          .acquire(`tenant-${String(i).padStart(5, '0')}-with-a-long-name`, { timeoutMs: 0 })
          .catch(() => undefined)
      )?.release();
    const size = (await get(`${url}/pools/ui/snapshot`)).body.length;
    expect(size).toBeGreaterThan(100_000);
    const { port } = new URL(url);
    const socket = connect(Number(port), '127.0.0.1');
    socket.write('GET /pools/ui/stream HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n');
    socket.pause(); // never reads
    let maxBuffered = 0;
    const began = Date.now();
    while (dashboard.feed.stats().cutOff === 0 && Date.now() - began < 20_000) {
      maxBuffered = Math.max(maxBuffered, dashboard.feed.stats().buffered);
      await sleep(20);
    }
    expect(dashboard.feed.stats().cutOff).toBe(1);
    expect(dashboard.feed.stats().dropped).toBeGreaterThan(5);
    expect(maxBuffered).toBeLessThanOrEqual(2 * size); // one write beyond what the socket took
    expect(dashboard.feed.stats().viewers).toBe(0);
    socket.destroy();
  }, 30_000);

  it('takes 200 pages opening and closing in waves with nothing left behind', async () => {
    const { url, dashboard } = await start({ intervalMs: 100, maxViewers: 250 });
    const server = app!.getHttpServer() as import('node:http').Server;
    const heap: number[] = [];
    for (let wave = 0; wave < 5; wave++) {
      const pages = await Promise.all(Array.from({ length: 200 }, () => openSse(`${url}/pools/ui/stream`)));
      await Promise.all(pages.map((p) => p.next(1)));
      expect(dashboard.feed.stats().viewers).toBe(200);
      for (const p of pages) p.close();
      await until(() => dashboard.feed.stats().viewers === 0);
      heap.push(liveHeap());
    }
    expect(dashboard.feed.stats().running).toBe(false);
    await until(() => new Promise<boolean>((resolve) => server.getConnections((_err, n) => resolve(n === 0))));
    expect(server.listenerCount('request')).toBe(1);
    // No growth from wave to wave beyond noise (a leak of 200 viewers a wave would show as MBs).
    console.log('heap after each wave, MB:', heap.map((h) => (h / 2 ** 20).toFixed(1)).join(' '));
    expect(heap[4]! - heap[1]!).toBeLessThan(5 * 1024 * 1024);
  }, 60_000);

  it('refuses a page past maxViewers with 503, and says why', async () => {
    const { url } = await start({ maxViewers: 1 });
    const first = await sse(`${url}/pools/ui/stream`);
    await first.next(1);
    const second = await get(`${url}/pools/ui/stream`);
    expect(second.status).toBe(503);
    expect(second.body).toBe(
      'The pool dashboard takes no more viewers now: 1 pages are watching already (maxViewers).',
    );
  });

  it('closes open pages at once when the app closes', async () => {
    const { url } = await start();
    const pages = await Promise.all([sse(`${url}/pools/ui/stream`), sse(`${url}/pools/ui/stream`)]);
    await Promise.all(pages.map((p) => p.next(1)));
    const began = Date.now();
    await app!.close();
    app = undefined;
    await Promise.all(pages.map((p) => p.ended));
    expect(Date.now() - began).toBeLessThan(3_000); // not the keep-alive or a shutdown grace
  });

  it('shows a pool registered after start (a lazily loaded forFeature) and a pool that closed', async () => {
    const { url, broken } = await start();
    const page = await sse(`${url}/pools/ui/stream`);
    await page.next(1);
    @Module({
      imports: [PoolModule.forFeature([{ name: 'late', connector: new FakeConnector(), options: { maxSize: 1 } }])],
    })
    class LateModule {}
    await app!.get(LazyModuleLoader).load(() => LateModule);
    await until(() => snapshotOf(page).pools.some((p) => p.name === 'late'));
    await broken.close();
    await until(() => snapshotOf(page).pools.find((p) => p.name === 'broken')!.closed);
  });

  describe.each([['Express' as const], ['Fastify' as const]])('on %s', (platform) => {
    const adapter = platform === 'Express' ? 'express' : 'fastify';

    it('streams and serves the page', async () => {
      const { url } = await start({}, { adapter });
      expect((await get(`${url}/pools/ui`)).status).toBe(200);
      const page = await sse(`${url}/pools/ui/stream`);
      expect(page.status).toBe(200);
      await page.next(2);
      expect(snapshotOf(page).pools.length).toBe(2);
    });

    it('points the page at its own origin whatever the request line says (absolute form, doubled slashes)', async () => {
      const { url } = await start({}, { adapter });
      const { port } = new URL(url);
      const pages: string[] = [];
      for (const target of [
        'http://evil.example/pools/ui',
        'http://evil.example//pools/ui',
        '//evil.example/pools/ui',
        '/pools/ui?x=//evil.example',
      ]) {
        const answer = await rawGet(Number(port), target);
        // The framework's own 404 may repeat the target; the page is what links elsewhere.
        if (answer.startsWith('HTTP/1.1 200')) pages.push(answer);
      }
      expect(pages.length).toBeGreaterThanOrEqual(2); // the absolute form and the query are served
      for (const page of pages) {
        expect(page).not.toContain('evil.example');
        expect(page).toContain('<script src="/pools/ui/dashboard.js" defer></script>');
      }
    });

    it('lets the guard refuse: 403 for the page, the snapshot and the stream, which sends nothing', async () => {
      const { url, dashboard } = await start(
        {
          canActivate: (context) =>
            context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-role'] === 'ops',
          path: 'ops/pools',
        },
        { adapter },
      );
      expect((await get(`${url}/ops/pools`)).status).toBe(403);
      expect((await get(`${url}/ops/pools/snapshot`)).status).toBe(403);
      const refused = await sse(`${url}/ops/pools/stream`);
      expect(refused.status).toBe(403);
      await refused.ended;
      expect(refused.events).toEqual([]);
      expect(refused.bytes()).toBeLessThan(200); // the 403 body, no snapshot
      expect(dashboard.feed.stats().built).toBe(0);
      const allowed = await sse(`${url}/ops/pools/stream`, { 'x-role': 'ops' });
      await allowed.next(1);
      expect(allowed.status).toBe(200);
    });
  });

  it('runs the application’s own guard classes', async () => {
    class HeaderGuard {
      canActivate(context: import('@nestjs/common').ExecutionContext): boolean {
        return (
          context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers.authorization ===
          'Bearer letmein'
        );
      }
    }
    const { url } = await start({ guards: [HeaderGuard] });
    expect((await get(`${url}/pools/ui/snapshot`)).status).toBe(403);
    const res = await fetch(`${url}/pools/ui/snapshot`, { headers: { authorization: 'Bearer letmein' } });
    expect(res.status).toBe(200);
  });
});

describe('the dashboard’s assets', () => {
  it('are as small as the README and the guide say', () => {
    const files = ['index.html', 'dashboard.js', 'dashboard.css'].map((f) =>
      readFileSync(new URL(`../../lib/dashboard/assets/${f}`, import.meta.url)),
    );
    const raw = files.reduce((n, f) => n + f.length, 0);
    const gzipped = gzipSync(Buffer.concat(files)).length;
    const said = `${Math.round(raw / 1000)} kB, ${Math.round(gzipped / 1000)} kB gzipped`;
    expect(readFileSync(new URL('../../README.md', import.meta.url), 'utf8')).toContain(`(${said}; no CDN)`);
    expect(readFileSync(new URL('../../docs/dashboard.md', import.meta.url), 'utf8')).toContain(`(${said})`);
  });
});

describe('the dashboard’s options', () => {
  it.each([
    [
      { path: 'bad path' },
      "PoolDashboardModule.forRoot: option \"path\" must be a URL path such as '/pools/ui' (segments of letters, digits, - _ . ~; none of them '.' or '..'), got \"bad path\"",
    ],
    [
      { path: '../x' },
      "option \"path\" must be a URL path such as '/pools/ui' (segments of letters, digits, - _ . ~; none of them '.' or '..'), got \"../x\"",
    ],
    [{ path: '/ops/../pools' }, 'got "/ops/../pools"'],
    [{ path: './pools' }, 'got "./pools"'],
    [{ path: '/ops//pools' }, 'got "/ops//pools"'],
    [{ path: '/ops/..' }, 'got "/ops/.."'],
    [
      { intervalMs: 10 },
      'PoolDashboardModule.forRoot: option "intervalMs" must be a finite number of 100 or more (a few snapshots a second at most), got 10',
    ],
    [{ maxViewers: 0 }, 'PoolDashboardModule.forRoot: option "maxViewers" must be a whole number of 1 or more, got 0'],
    [
      { guards: [42] },
      'PoolDashboardModule.forRoot: option "guards" must be an array of Nest guards (classes or instances with canActivate), got an array',
    ],
    [
      { interval: 500 },
      'PoolDashboardModule.forRoot: option "interval" is not one of the dashboard\'s options: did you mean "intervalMs"? they are path, intervalMs, guards, canActivate, maxViewers, slowViewerMs, maxConnectionRows, maxMemberRows',
    ],
  ])('refuses %j with an error that names the option', (options, message) => {
    expect(() => PoolDashboardModule.forRoot(options as PoolDashboardOptions)).toThrow(message);
    try {
      PoolDashboardModule.forRoot(options as PoolDashboardOptions);
    } catch (err) {
      expect((err as PoolConfigError).code).toBe('POOL_CONFIG');
    }
  });
});

describe('the dashboard’s state', () => {
  it('builds a snapshot whose size does not grow with the members beyond the rows the page shows', async () => {
    const { DashboardState } = await import('../../lib/dashboard/dashboard-state.js');
    const sizes: number[] = [];
    for (const members of [1_000, 4_000]) {
      const clock = new VirtualClock();
      const group = new PoolGroup<FakeConnection>({
        name: 'tenants',
        maxTotal: 10_000,
        maxMembers: 10_000,
        clock,
        metrics: false,
        connector: () => new FakeConnector(),
      });
      await Promise.all(
        Array.from({ length: members }, (_, i) => group.use(`tenant-${String(i).padStart(5, '0')}`, () => i)),
      );
      const state = new DashboardState(
        () => [{ name: 'tenants', group }],
        { intervalMs: 500, maxConnectionRows: 10, maxMemberRows: 100 },
        () => 0,
      );
      const snapshot = state.snapshot(1);
      expect(snapshot.groups[0]).toMatchObject({ memberCount: members });
      expect(snapshot.groups[0]!.members).toHaveLength(100);
      sizes.push(Buffer.byteLength(JSON.stringify(snapshot)));
      await group.close();
    }
    // Only the member count's digits differ.
    expect(Math.abs(sizes[1]! - sizes[0]!)).toBeLessThan(16);
  });

  it('leaves out a provider whose stats() throws, and shows the others', async () => {
    const { DashboardState } = await import('../../lib/dashboard/dashboard-state.js');
    const good = new PoolGroup({ name: 'good', maxTotal: 1, connector: () => new FakeConnector() });
    const state = new DashboardState(
      () => [
        {
          name: 'stub',
          pool: {
            stats: () => {
              throw new Error('a stand-in without stats');
            },
          },
        },
        { name: 'good', group: good },
      ],
      { intervalMs: 100, maxConnectionRows: 10, maxMemberRows: 10 },
    );
    const snapshot = state.snapshot(1);
    expect(snapshot.pools).toEqual([]);
    expect(snapshot.groups.map((g) => g.name)).toEqual(['good']);
    await good.close();
  });
});

describe('the dashboard and an adaptive limiter', () => {
  it('shows its algorithm, limit, bounds and changes', async () => {
    const { DashboardState } = await import('../../lib/dashboard/dashboard-state.js');
    const { AdaptiveLimiter } = await import('../../lib/limits/index.js');
    const { ConnectionPool } = await import('../../lib/index.js');
    const limiter = new AdaptiveLimiter({ adaptive: { algorithm: 'aimd', initial: 8, max: 50, backoff: 0.5 } });
    const pool = new ConnectionPool(new FakeConnector(), { name: 'llm', limiter });
    await pool.use(async () => ({ status: 429 })); // an overload: cut to 4
    const state = new DashboardState(() => [{ name: 'llm', pool }], {
      intervalMs: 100,
      maxConnectionRows: 10,
      maxMemberRows: 10,
    });
    expect(state.snapshot(1).pools[0]!.limiter).toMatchObject({
      limit: 4,
      adaptive: {
        algorithm: 'aimd',
        limit: 4,
        min: 1,
        max: 50,
        overloads: 1,
        changes: [{ from: 8, to: 4, reason: 'overload' }],
      },
    });
    await pool.close();
  });
});

/// <reference lib="dom" />
// The dashboard of the sample app in a real browser: Debian's Chromium, headless, driven by
// playwright-core. The test drives load on the app, reads the page's DOM and checks it against
// the pools' stats(): pools listed, connections with their callers, the per-user limiter's 429s,
// a group member's share; it checks the stream keeps updating, that search and keyboard work,
// and saves screenshots (desktop and phone) under test-artifacts/ to look at.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync } from 'node:fs';
import http2, { createServer, type Http2Server, type ServerHttp2Session } from 'node:http2';
import { chromium, type Browser, type Page } from 'playwright-core';
import { getPoolToken, type ConnectionPool, type Lease, type PoolGroup } from '../../lib/index.js';
import { Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Http2SessionConnector, PoolModule } from '../../lib/index.js';
import { PoolDashboardModule } from '../../lib/dashboard/index.js';
import { AdaptiveLimiter, LocalLimiter } from '../../lib/limits/index.js';
import { startSample, type RunningSample } from '../../sample-app/main.js';
import { startFleet } from '../../sample-app/fleet.js';
import type { FleetBudget } from '../../lib/groups/index.js';
import { RedisServer } from '../support/redis-server.js';
import { FakeConnector } from '../support/fake-connector.js';
import { listenLocal } from '../support/listen.js';
import { until } from '../support/wait.js';

const ARTIFACTS = new URL('../../test-artifacts/', import.meta.url);
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
// As the machine's probe starts it: no sandbox (root), and no background calls to a network it cannot reach.
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Snapshots the page has received so far. */
const updatesOf = (page: Page) => page.evaluate(() => Number(document.body.dataset.updates ?? 0));
/** Waits until the page has received `target` snapshots in all. */
const updatesReach = (page: Page, target: number) =>
  page.waitForFunction((n) => Number(document.body.dataset.updates ?? 0) >= n, target, { timeout: 10_000 });

/** Chromium on `app`'s dashboard, once it has drawn two snapshots. */
async function openDashboard(app: INestApplication): Promise<{ browser: Browser; page: Page }> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`${(await app.getUrl()).replace('[::1]', '127.0.0.1')}/pools/ui`);
  await page.waitForFunction(() => Number(document.body.dataset.updates ?? 0) >= 2, undefined, { timeout: 15_000 });
  return { browser, page };
}

describe('the dashboard in a browser, on the sample app under load', () => {
  let sample: RunningSample;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    sample = await startSample({
      port: 0,
      logger: false,
      env: { PER_USER_LIMIT: '2' },
      upstream: { handshakeDelayMs: 20 },
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    // A CSP violation or a script error shows here.
    page.on('console', (m) => void (m.type() === 'error' && problems.push(m.text())));
    page.on('pageerror', (err) => void problems.push(err.message));
    await page.goto(`${sample.url}/pools/ui`);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await sample?.close();
  });

  /** Waits for `n` more snapshots to be drawn. */
  const nextUpdates = async (n = 2) => {
    await updatesReach(page, (await updatesOf(page)) + n);
  };

  it('lists the pools, each connection with the callers it serves as stats() has them, and keeps updating', async () => {
    const upstream = sample.app.get<ConnectionPool<unknown>>(getPoolToken('upstream'));
    const held: Lease<unknown>[] = [];
    for (let i = 0; i < 3; i++) held.push(await upstream.acquire({ key: `holder-${i}` }));
    await nextUpdates();
    const shown = await page.$$eval('[data-pool]', (cards) => cards.map((c) => c.getAttribute('data-pool')));
    expect(shown.sort()).toEqual(['blob', 'upstream']);
    const conns = await page.$$eval('[data-pool="upstream"] [data-conn]', (rows) =>
      rows.map((r) => [Number(r.getAttribute('data-conn')), Number(r.getAttribute('data-clients'))]),
    );
    expect(conns).toEqual(upstream.stats().connections.map((c) => [c.id, c.clients]));
    expect(conns.reduce((n, [, clients]) => n + clients!, 0)).toBe(3);
    expect(await page.textContent('[data-pool="upstream"] [data-field="clients"]')).toBe('3');
    for (const lease of held) lease.release();
    await nextUpdates();
    expect(await page.textContent('[data-pool="upstream"] [data-field="clients"]')).toBe('0');
  });

  it('shows the per-user limiter refusing with 429 under a burst, as its stats count them', async () => {
    const upstream = sample.app.get<ConnectionPool<unknown>>(getPoolToken('upstream'));
    const before = upstream.stats().admission!.counters.refusedKey;
    // Load: bursts of one user over the limit of 2, and steady calls of others, for a while.
    let tooMany = 0;
    const end = Date.now() + 2_000;
    const user = async (id: string) => {
      while (Date.now() < end) {
        const res = await fetch(`${sample.url}/upstream/${id}`, {
          headers: { 'x-user-id': id === 'burst' ? 'ann' : id },
        });
        if (res.status === 429) tooMany++;
        await res.arrayBuffer();
      }
    };
    const tenants = ['acme', 'globex', 'initech'].map(async (tenant) => {
      while (Date.now() < end) await (await fetch(`${sample.url}/tenants/${tenant}/items/1`)).arrayBuffer();
    });
    await Promise.all([...Array.from({ length: 8 }, () => user('burst')), user('bob'), user('cy'), ...tenants]);
    expect(tooMany).toBeGreaterThan(0);
    const refused = upstream.stats().admission!.counters.refusedKey;
    expect(refused - before).toBe(tooMany);
    await nextUpdates();
    expect(Number(await page.getAttribute('[data-pool="upstream"] [data-refused="key"]', 'data-value'))).toBe(refused);
    expect(await page.textContent('[data-pool="upstream"] [data-field="mode"]')).toBe('local');
    await page.screenshot({ path: new URL('dashboard-desktop.png', ARTIFACTS).pathname, fullPage: true });
  });

  it('shows each member of the group with its share of the budget', async () => {
    const group = sample.app.get<PoolGroup<unknown>>(getPoolToken('tenants'));
    const held = await group.acquire('acme');
    // The page's quotas are those planned within the last second (the group's summary): an update
    // may still show the plan from before the acquire. Within a few updates, they are stats()'s.
    const shown = () =>
      page.$$eval('[data-group="tenants"] [data-member]', (trs) =>
        trs.map((r) => [r.getAttribute('data-member'), Number(r.getAttribute('data-quota'))] as const),
      );
    const quotas = () => Object.fromEntries(group.stats().members.map((m) => [m.key, m.quota]));
    let rows = await shown();
    const sorted = (entries: readonly (readonly [unknown, number])[]) => JSON.stringify([...entries].sort());
    // The order too may be an update behind the acquire (the quotas need not change with it).
    const caught = () => sorted(rows) === sorted(Object.entries(quotas())) && rows[0]?.[0] === 'acme';
    for (let n = 0; n < 8 && !caught(); n++) {
      await nextUpdates(1);
      rows = await shown();
    }
    expect(Object.fromEntries(rows)).toEqual(quotas());
    expect(rows[0]![0]).toBe('acme'); // the member with a caller comes first
    held.release();
  });

  it("explains the group's words where they are shown, and keeps their key open across updates", async () => {
    const titles = await page.$$eval('[data-group="tenants"] abbr[data-term]', (all) =>
      Object.fromEntries(all.map((a) => [a.getAttribute('data-term'), a.getAttribute('title')])),
    );
    expect(Object.keys(titles).sort()).toEqual(
      ['budget', 'forgotten', 'given back', 'hunger', 'hungry', 'share', 'transfers'].sort(),
    );
    expect(titles.hungry).toBe('members with callers waiting that hold fewer connections than their share');
    expect(titles.forgotten).toContain('memberIdleMs');
    expect(titles.transfers).toContain('moved from one member to another');
    // The same words, in a key anyone can open (a tooltip needs a pointer).
    const key = '[data-group="tenants"] details[data-terms]';
    expect(await page.$eval(key, (d) => (d as HTMLDetailsElement).open)).toBe(false);
    await page.click(`${key} > summary`);
    await nextUpdates();
    expect(await page.$eval(key, (d) => (d as HTMLDetailsElement).open)).toBe(true);
    const meanings = await page.$$eval(`${key} [data-term-meaning]`, (all) =>
      Object.fromEntries(all.map((m) => [m.getAttribute('data-term-meaning'), m.querySelector('dd')?.textContent])),
    );
    expect(meanings).toEqual(titles);
    expect(await page.isVisible(`${key} [data-term-meaning="given back"] dd`)).toBe(true);
    await page.locator('[data-group="tenants"]').screenshot({
      path: new URL('dashboard-terms.png', ARTIFACTS).pathname,
    });
    await page.click(`${key} > summary`);
  });

  it('filters by search, works from the keyboard, and fits a phone', async () => {
    await page.focus('#search');
    await page.keyboard.type('blob');
    await until(async () => (await page.$$('[data-pool]')).length === 1);
    expect(await page.getAttribute('[data-pool]', 'data-pool')).toBe('blob');
    await page.fill('#search', '');
    // Tab to the first card's summary and close it with the keyboard; it stays closed across updates.
    await page.focus('[data-pool="blob"] > summary');
    await page.keyboard.press('Enter');
    await nextUpdates();
    expect(await page.$eval('[data-pool="blob"]', (d) => (d as HTMLDetailsElement).open)).toBe(false);
    expect(await page.evaluate(() => document.activeElement?.closest('[data-pool]')?.getAttribute('data-pool'))).toBe(
      'blob',
    );
    await page.keyboard.press('Enter');
    await page.setViewportSize({ width: 390, height: 844 });
    await nextUpdates();
    // Nothing wider than the screen.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await page.screenshot({ path: new URL('dashboard-phone.png', ARTIFACTS).pathname, fullPage: true });
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('ran without a script error or a refused resource', () => {
    expect(problems).toEqual([]);
  });
});

describe('the dashboard in a browser, on HTTP/2 peers that send GOAWAY', () => {
  let app: INestApplication;
  let browser: Browser;
  let page: Page;
  const servers: Http2Server[] = [];
  const sessions: ServerHttp2Session[] = [];

  /** An h2c server that sends its first session a GOAWAY with `code`, then closes it; later sessions stay. */
  async function goawayServer(code: number): Promise<string> {
    let first = true;
    const server = createServer();
    server.on('stream', (stream) => stream.respond({ ':status': 200 }, { endStream: true }));
    server.on('session', (session) => {
      sessions.push(session);
      if (!first) return;
      first = false;
      setTimeout(() => (code === 0 ? session.close() : session.goaway(code)), 100);
    });
    servers.push(server);
    return listenLocal(server);
  }

  beforeAll(async () => {
    const graceful = await goawayServer(http2.constants.NGHTTP2_NO_ERROR);
    const failing = await goawayServer(http2.constants.NGHTTP2_INTERNAL_ERROR);
    @Module({
      imports: [
        PoolModule.forRoot({
          pools: [
            { name: 'graceful', connector: new Http2SessionConnector(graceful), options: { minSize: 1 } },
            { name: 'failing', connector: new Http2SessionConnector(failing), options: { minSize: 1 } },
          ],
        }),
        PoolDashboardModule.forRoot({ intervalMs: 200 }),
      ],
    })
    class Peers {}
    app = await NestFactory.create(Peers, { logger: false });
    await app.listen(0, '127.0.0.1');
    for (const name of ['graceful', 'failing']) {
      const pool = app.get<ConnectionPool<unknown>>(getPoolToken(name));
      await until(() => pool.stats().counters.retiredBy.connector === 1 && pool.stats().ready === 1);
    }
    ({ browser, page } = await openDashboard(app));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    // server.close() leaves the sessions it has open: end them, or they hold the process.
    for (const session of sessions) session.destroy();
    for (const server of servers) server.close();
  });

  it('shows a graceful GOAWAY (NO_ERROR) as no error, and any other code as the last error', async () => {
    const graceful = app.get<ConnectionPool<unknown>>(getPoolToken('graceful')).stats();
    const failing = app.get<ConnectionPool<unknown>>(getPoolToken('failing')).stats();
    expect(graceful.lastError).toBeUndefined();
    expect(failing.lastError).toBe('GOAWAY from the peer (code 2)');
    expect(await page.$$('[data-pool="graceful"] .error')).toHaveLength(0);
    expect(await page.getAttribute('[data-pool="graceful"]', 'class')).toContain('h-healthy');
    expect(await page.textContent('[data-pool="failing"] [data-field="lastError"]')).toBe(
      'last error: GOAWAY from the peer (code 2)',
    );
  });
});

describe('the dashboard in a browser, on two sample instances under one fleet budget', () => {
  let redis: RedisServer;
  let fleet: Awaited<ReturnType<typeof startFleet>>;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];
  const BUDGET = 4;

  beforeAll(async () => {
    // A Redis of the test's own: the budget's places, and the instances' demand, are all the test's.
    redis = await RedisServer.start();
    fleet = await startFleet({ REDIS_URL: redis.url, DB_BUDGET: String(BUDGET), PORT: '0', JOBS_KEY: 'fleet:jobs' });
    ({ browser, page } = await openDashboard(fleet.instances[0]!.app));
    page.on('console', (m) => void (m.type() === 'error' && problems.push(m.text())));
    page.on('pageerror', (err) => void problems.push(err.message));
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await fleet?.close();
    await redis?.stop();
  });

  const budgetOf = (i: number) =>
    fleet.instances[i]!.app.get<ConnectionPool<unknown>>(getPoolToken('pg')).options.budget as FleetBudget;

  it('shows the budget, its places per instance and the demand, as the budget reports them', async () => {
    // Both instances busy at once: 12 callers each, 30 ms a note, on 5 connections each at most,
    // 4 places for the two.
    const busy = (url: string, until: number) =>
      Promise.all(
        Array.from({ length: 12 }, async () => {
          while (Date.now() < until) {
            const res = await fetch(`${url}/notes`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ text: 'fleet' }),
            });
            await res.arrayBuffer();
          }
        }),
      );
    const end = Date.now() + 4_000;
    const load = Promise.all(fleet.instances.map((s) => busy(s.url, end)));
    try {
      await seeBudget(load);
    } finally {
      // However the page's checks end, the callers finish before the instances close.
      await load;
    }
  }, 60_000);

  /** The page's checks while `load` runs. */
  const seeBudget = async (load: Promise<unknown>) => {
    // The page shows both instances (this one marked) once the exchange has heard them both, each
    // holding places of the budget: the places went where the callers are.
    await page.waitForFunction(
      () => {
        const rows = Array.from(document.querySelectorAll<HTMLElement>('[data-budget="sample-db"] tr[data-instance]'));
        return rows.length === 2 && rows.every((r) => Number(r.dataset.places) >= 1);
      },
      undefined,
      { timeout: 15_000 },
    );
    const shown = await page.$$eval('[data-budget="sample-db"] tr[data-instance]', (rows) =>
      rows.map((r) => Number((r as HTMLElement).dataset.places)),
    );
    expect(shown.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(BUDGET);
    const ids = await page.$$eval('[data-budget="sample-db"] tr[data-instance]', (rows) =>
      rows.map((r) => ({
        id: (r as HTMLElement).dataset.instance,
        self: (r as HTMLElement).dataset.self !== undefined,
      })),
    );
    const stats = [budgetOf(0).stats(), budgetOf(1).stats()];
    const own = stats[0]!.fleet.find((f) => f.self)!.instance;
    const other = stats[1]!.fleet.find((f) => f.self)!.instance;
    expect(ids).toEqual([
      { id: own, self: true },
      { id: other, self: false },
    ]);
    const places = await page.getAttribute('[data-budget="sample-db"] [data-field="places"] .barline', 'aria-label');
    expect(places).toMatch(new RegExp(`^\\d+ of ${BUDGET} places of the budget held by the fleet$`));
    expect(Number(places!.split(' ')[0])).toBeLessThanOrEqual(BUDGET);
    expect(await page.textContent('[data-budget="sample-db"] .quiet')).toContain('pools here: pg');
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: new URL('dashboard-fleet-budget.png', ARTIFACTS).pathname, fullPage: true });
    await load;
    // Never more than the budget across the two, as each instance counted its own.
    expect(stats[0]!.held + stats[1]!.held).toBeLessThanOrEqual(BUDGET);
    // Its words explained where they are shown.
    const tip = await page.getAttribute('[data-budget="sample-db"] abbr[data-term="moved out"]', 'title');
    expect(tip).toContain("another instance's waiting callers");
  };

  it('ran without a script error or a refused resource', () => {
    expect(problems).toEqual([]);
  });
});

// A page of 60 pools and 1,200 members redraws every 200 ms: on a machine the rest of the suite
// saturates (npm installs and compiles beside it), one test's page steps took past 20 s once.
const PAGE_MS = 60_000;

describe('the dashboard in a browser, with 60 pools and a group of 1,200 members', () => {
  let app: INestApplication;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    @Module({
      imports: [
        PoolModule.forRoot({
          pools: [
            ...Array.from({ length: 59 }, (_, i) => ({
              name: `pool-${String(i).padStart(2, '0')}`,
              connector: new FakeConnector(),
              options: { maxSize: 2, clientLimit: 1 },
            })),
            {
              name: 'llm',
              connector: new FakeConnector(),
              options: { limits: new AdaptiveLimiter({ adaptive: { algorithm: 'aimd', initial: 8, backoff: 0.5 } }) },
            },
          ],
          groups: [
            {
              name: 'tenants',
              connector: () => new FakeConnector(),
              options: { maxTotal: 50, maxMembers: 2_000, member: { clientLimit: 1 } },
            },
          ],
        }),
        PoolDashboardModule.forRoot({ intervalMs: 200 }),
      ],
    })
    class ManyPools {}
    app = await NestFactory.create(ManyPools, { logger: false });
    await app.listen(0, '127.0.0.1');
    const group = app.get<PoolGroup<unknown>>(getPoolToken('tenants'));
    for (let i = 0; i < 1_200; i++) await group.use(`tenant-${String(i).padStart(4, '0')}`, () => undefined);
    await app.get<ConnectionPool<unknown>>(getPoolToken('llm')).use(async () => ({ status: 429 })); // the adaptive limit: 8 -> 4
    // Trouble in one pool: its two connections held and a caller waiting.
    const troubled = app.get<ConnectionPool<unknown>>(getPoolToken('pool-37'));
    await troubled.acquire();
    await troubled.acquire();
    void troubled.acquire({ timeoutMs: 60_000 }).catch(() => undefined);
    ({ browser, page } = await openDashboard(app));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  it(
    'puts the pool in trouble first and open, the healthy ones folded, and the group summarised 50 members at a time',
    async () => {
      const cards = await page.$$eval('[data-pool]', (all) =>
        all.map((c) => [c.getAttribute('data-pool'), (c as HTMLDetailsElement).open]),
      );
      expect(cards).toHaveLength(60); // 59 plain pools and llm
      expect(cards[0]).toEqual(['pool-37', true]);
      expect(cards.slice(1).every(([, open]) => open === false)).toBe(true);
      expect(await page.textContent('#summary')).toContain('exhausted');
      expect(await page.$$('[data-group="tenants"] [data-member]')).toHaveLength(50);
      expect(await page.textContent('[data-more="tenants"]')).toBe('Show 50 more of 1,150');
      await page.click('[data-more="tenants"]');
      await page.waitForFunction(
        () => document.querySelectorAll('[data-group="tenants"] [data-member]').length === 100,
      );
      await page.screenshot({ path: new URL('dashboard-many.png', ARTIFACTS).pathname });
    },
    PAGE_MS,
  );

  it(
    'shows an adaptive limiter’s limit and its last change',
    async () => {
      await page.fill('#search', 'llm');
      await page.waitForFunction(() => document.querySelectorAll('[data-pool]').length === 1);
      await page.click('[data-pool="llm"] > summary');
      await page.waitForSelector('[data-pool="llm"] [data-adaptive="aimd"]');
      expect(await page.getAttribute('[data-pool="llm"] [data-adaptive]', 'data-adaptive-limit')).toBe('4');
      expect(await page.textContent('[data-pool="llm"] [data-adaptive]')).toContain('8→4 (overload)');
      await page.fill('#search', '');
    },
    PAGE_MS,
  );

  it(
    'holds the cards while a pointer is down, so a slow click opens its card though updates came meanwhile',
    async () => {
      await page.fill('#search', 'pool-05');
      await page.waitForFunction(() => document.querySelectorAll('[data-pool]').length === 1);
      expect(await page.$eval('[data-pool="pool-05"]', (d) => (d as HTMLDetailsElement).open)).toBe(false);
      // Read in one go (a handle's element may be replaced by the next render before it is
      // measured), once it is laid out (right after the search's render it measured 0 × 0 at times).
      const laidOut = await page.waitForFunction(() => {
        const r = document.querySelector('[data-pool="pool-05"] > summary')?.getBoundingClientRect();
        return r !== undefined && r.width > 0 && r.height > 0 ? (r.toJSON() as DOMRect) : null;
      });
      const box = (await laidOut.jsonValue())!;
      const from = await updatesOf(page);
      await page.mouse.move(box.x + 10, box.y + box.height / 2);
      await page.mouse.down();
      // Two snapshots (200 ms apart) come while the button is down: a render would replace the summary.
      await updatesReach(page, from + 2);
      await page.mouse.up();
      expect(await page.$eval('[data-pool="pool-05"]', (d) => (d as HTMLDetailsElement).open)).toBe(true);
      // The snapshot held back is drawn on release, and the card stays open through it.
      await updatesReach(page, (await updatesOf(page)) + 1);
      expect(await page.$eval('[data-pool="pool-05"]', (d) => (d as HTMLDetailsElement).open)).toBe(true);
      await page.fill('#search', '');
    },
    PAGE_MS,
  );

  it(
    'finds one member among 1,200 and one pool among 60 by search',
    async () => {
      await page.fill('#search', 'tenant-0777');
      await page.waitForFunction(() => document.querySelectorAll('[data-member]').length === 1);
      expect(await page.getAttribute('[data-member]', 'data-member')).toBe('tenant-0777');
      expect(await page.$$('[data-pool]')).toHaveLength(0);
      await page.fill('#search', 'pool-05');
      await page.waitForFunction(() => document.querySelectorAll('[data-pool]').length === 1);
      await page.fill('#search', '');
      await page.check('#trouble-only');
      await page.waitForFunction(() => document.querySelectorAll('[data-pool]').length === 1);
      expect(await page.getAttribute('[data-pool]', 'data-pool')).toBe('pool-37');
    },
    PAGE_MS,
  );
});

describe('the dashboard in a browser, with priority classes, tiers and controlled waiting', () => {
  it('shows each class with its share and counts, the queue’s state, and each key’s own limit', async () => {
    const limiter = new LocalLimiter({
      global: 4,
      perKey: (key) => (key === 'gold' ? 4 : 1),
      waiting: { mode: 'controlled' },
      classes: [
        { name: 'live', share: 0.75 },
        { name: 'batch', share: 0.25 },
      ],
    });
    @Module({
      imports: [
        PoolModule.forRoot({
          pools: [{ name: 'classed', connector: new FakeConnector(), options: { clientLimit: 10, limits: limiter } }],
        }),
        PoolDashboardModule.forRoot({ intervalMs: 200 }),
      ],
    })
    class Classed {}
    const app = await NestFactory.create(Classed, { logger: false });
    await app.listen(0, '127.0.0.1');
    const pool = app.get<ConnectionPool<unknown>>(getPoolToken('classed'));
    const held = [
      await pool.acquire({ key: 'gold', class: 'live' }),
      await pool.acquire({ key: 'gold', class: 'live' }),
      await pool.acquire({ key: 'ann', class: 'live' }),
      await pool.acquire({ key: 'bob', class: 'batch' }),
    ];
    const waiting = [
      pool.acquire({ key: 'cy', class: 'batch', timeoutMs: 60_000 }),
      pool.acquire({ key: 'dee', class: 'live', timeoutMs: 60_000 }),
    ];
    await until(() => pool.stats().admission!.waiting === 2);
    const { browser, page } = await openDashboard(app);
    try {
      // An exhausted pool's card is open at once; fold nothing.
      if (!(await page.$eval('[data-pool="classed"]', (d) => (d as HTMLDetailsElement).open)))
        await page.click('[data-pool="classed"] > summary');
      await page.waitForSelector('[data-pool="classed"] [data-class="batch"]');
      const rows = await page.$$eval('[data-pool="classed"] [data-class]', (trs) =>
        trs.map((tr) => Array.from(tr.querySelectorAll('td'), (td) => td.textContent)),
      );
      expect(rows).toEqual([
        ['live', '75 %', '3', '1', '3', '0'],
        ['batch', '25 %', '1', '1', '1', '0'],
      ]);
      expect(await page.getAttribute('[data-pool="classed"] [data-standing]', 'data-standing')).toBe('false');
      expect(await page.textContent('[data-pool="classed"] [data-standing]')).toContain('queue clear');
      expect(await page.textContent('[data-pool="classed"] [data-key="gold"]')).toBe('gold2 / 4');
      expect(await page.textContent('[data-pool="classed"] [data-key="ann"]')).toBe('ann1 / 1');
      // The whole page: this card is exhausted and redrawn with every snapshot, so an element
      // screenshot can lose its element between the scroll and the shot on a loaded machine.
      await page.screenshot({ path: new URL('dashboard-classes.png', ARTIFACTS).pathname, fullPage: true });
    } finally {
      for (const lease of held) lease.release();
      for (const lease of await Promise.all(waiting)) lease.release();
      await browser.close();
      await app.close();
    }
  }, 60_000);
});

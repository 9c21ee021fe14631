/**
 * The dashboard's soak: 200 clients open and close its stream for a minute (some read a few
 * snapshots and leave, some leave before the first, some never read and are cut off), on a Nest
 * app whose pools serve load meanwhile. Heap (after GC) is sampled every 5 s; at the end nothing
 * may be left: no viewer, no tick, no open socket, no listener added to the server. Exits 1 otherwise.
 *
 *   npm run soak:dashboard                 (60 s)
 *   npm run soak:dashboard -- --seconds 20
 */
import { request, type Server } from 'node:http';
import { connect } from 'node:net';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { getPoolToken, PoolGroup, PoolModule, type ConnectionPool, type Connector } from '../../lib/index.js';
import { PoolDashboard, PoolDashboardModule } from '../../lib/dashboard/index.js';

const args = process.argv.slice(2);
const at = args.indexOf('--seconds');
const SECONDS = at >= 0 ? Number(args[at + 1]) : 60;
const CLIENTS = 200;
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) {
  console.error('run with node --expose-gc (npm run soak:dashboard does)');
  process.exit(2);
}

const connector: Connector<object> = { clientLimit: 10, create: async () => ({}) };

@Module({
  imports: [
    PoolModule.forRoot({
      pools: [
        { name: 'db', connector, options: { maxSize: 4, limits: { global: 30, perKey: 3 } } },
        { name: 'cache', connector, options: { maxSize: 2 } },
      ],
      groups: [{ name: 'tenants', connector: () => connector, options: { maxTotal: 8, member: { clientLimit: 2 } } }],
    }),
    PoolDashboardModule.forRoot({ intervalMs: 100, slowViewerMs: 2_000, maxViewers: 250 }),
  ],
})
class SoakApp {}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const app = await NestFactory.create(SoakApp, { logger: false });
  await app.listen(0, '127.0.0.1');
  const url = new URL((await app.getUrl()).replace('[::1]', '127.0.0.1'));
  const server = app.getHttpServer() as Server;
  const listenersBefore = server.listenerCount('request') + server.listenerCount('connection');
  const dashboard = app.get(PoolDashboard);
  const db = app.get<ConnectionPool<object>>(getPoolToken('db'));
  const tenants = app.get<PoolGroup<object>>(getPoolToken('tenants'));
  const end = Date.now() + SECONDS * 1_000;
  let opened = 0;
  let events = 0;
  let refused = 0;

  // Load on the pools, so that every snapshot has moving figures.
  const load = async (w: number) => {
    while (Date.now() < end) {
      await db.use(() => sleep(2), { key: `user-${w % 9}` }).catch(() => undefined);
      await tenants.use(`tenant-${w % 20}`, () => sleep(1)).catch(() => undefined);
    }
  };

  /** One page: reads `take` snapshots (0: leaves at once) and leaves. */
  const page = () =>
    new Promise<void>((resolve) => {
      const take = Math.floor(Math.random() * 4);
      const req = request({ host: url.hostname, port: url.port, path: '/pools/ui/stream' }, (res) => {
        opened++;
        if (res.statusCode !== 200) refused++;
        let seen = 0;
        res.on('data', (chunk: Buffer) => {
          const n = chunk.toString().split('event: snapshot').length - 1;
          seen += n;
          events += n;
          if (seen >= take) req.destroy();
        });
        res.on('close', resolve);
        res.on('error', resolve);
        if (take === 0) req.destroy();
      });
      req.on('error', () => resolve());
      req.end();
    });

  /** One page that never reads for 4 s, then leaves: nothing may be kept for it (the feed cuts off one whose socket fills; see test/dashboard). */
  const stalled = () =>
    new Promise<void>((resolve) => {
      const socket = connect(Number(url.port), url.hostname);
      socket.write(`GET /pools/ui/stream HTTP/1.1\r\nHost: soak\r\n\r\n`);
      socket.pause();
      socket.on('close', () => resolve());
      socket.on('error', () => resolve());
      setTimeout(() => socket.destroy(), 4_000);
    });

  const client = async (c: number) => {
    while (Date.now() < end) await (c % 25 === 0 ? stalled() : page());
  };

  const heap: { s: number; mb: number; viewers: number }[] = [];
  const sampler = (async () => {
    const began = Date.now();
    while (Date.now() < end) {
      await sleep(5_000);
      gc!();
      heap.push({
        s: Math.round((Date.now() - began) / 1000),
        mb: process.memoryUsage().heapUsed / 2 ** 20,
        viewers: dashboard.feed.stats().viewers,
      });
    }
  })();

  await Promise.all([
    ...Array.from({ length: 20 }, (_, w) => load(w)),
    ...Array.from({ length: CLIENTS }, (_, c) => client(c)),
    sampler,
  ]);
  await sleep(500);
  const stats = dashboard.feed.stats();
  const connections = await new Promise<number>((resolve) => server.getConnections((_err, n) => resolve(n)));
  const listenersAfter = server.listenerCount('request') + server.listenerCount('connection');
  gc!();
  const endMb = process.memoryUsage().heapUsed / 2 ** 20;
  await app.close();

  console.log(
    `${SECONDS} s, ${CLIENTS} clients: ${opened.toLocaleString('en')} streams opened, ${events.toLocaleString('en')} snapshots read, ${refused} refused (503 past maxViewers)`,
  );
  console.log(
    `feed: ${stats.built.toLocaleString('en')} snapshots built, ${stats.dropped.toLocaleString('en')} ticks dropped for full sockets, ${stats.cutOff} pages cut off, ${stats.busyMs.toFixed(0)} ms busy`,
  );
  console.log(
    'heap after GC (MB) every 5 s: ' +
      heap.map((h) => `${h.s}s ${h.mb.toFixed(1)} (${h.viewers} open)`).join(', ') +
      `; at the end ${endMb.toFixed(1)}`,
  );
  const problems: string[] = [];
  if (stats.viewers !== 0) problems.push(`${stats.viewers} viewers left`);
  if (stats.running) problems.push('the tick still runs with no page open');
  if (connections !== 0) problems.push(`${connections} sockets left open`);
  if (listenersAfter !== listenersBefore) problems.push(`server listeners ${listenersBefore} -> ${listenersAfter}`);
  const steady = heap.slice(1);
  if (steady.length >= 2) {
    const growth = steady[steady.length - 1]!.mb - steady[0]!.mb;
    console.log(`heap growth from ${steady[0]!.s} s to ${steady[steady.length - 1]!.s} s: ${growth.toFixed(1)} MB`);
    if (growth > 10) problems.push(`heap grew ${growth.toFixed(1)} MB`);
  }
  if (problems.length > 0) {
    console.error(`FAILED: ${problems.join('; ')}`);
    process.exitCode = 1;
  } else console.log('ok: memory flat, nothing left behind');
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});

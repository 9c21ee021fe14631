/**
 * The app `dashboard-scale.ts` watches, in a process of its own: a Nest app with a pool group of
 * 10,000 members under a steady load (new keys arriving, places changing member) and the
 * dashboard. Asked over IPC, it measures its own event loop and memory for a phase, or times
 * snapshots built from scratch.
 */
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { getPoolToken, PoolModule } from '../lib/index.js';
import { PoolDashboard, PoolDashboardModule } from '../lib/dashboard/index.js';
import { DashboardState } from '../lib/dashboard/dashboard-state.js';
import type { PoolGroup } from '../lib/groups/index.js';

export const MEMBERS = 10_000;
const PLACES = 500;
const gc = (globalThis as { gc?: () => void }).gc!;
/** Memory once garbage is collected. */
function live(): NodeJS.MemoryUsage {
  gc();
  gc();
  return process.memoryUsage();
}
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** What a phase measured. */
export interface PhaseFigures {
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly rssGrowthMB: number;
  /** What is still reachable after a full GC, heap and buffers (external): what the phase kept, not when the GC last ran. */
  readonly liveGrowthMB: number;
  readonly viewers: number;
  readonly built: number;
  readonly busyMs: number;
  readonly bufferedKB: number;
  readonly cutOff: number;
}

/** Snapshots built from scratch: their time and size. */
export interface BuildFigures {
  readonly medianMs: number;
  readonly maxMs: number;
  readonly bytes: number;
  readonly memberRows: number;
  readonly members: number;
}

export type Ask = { measure: number } | { build: number };

@Module({
  imports: [
    PoolModule.forRoot({
      groups: [
        {
          name: 'tenants',
          connector: () => ({ create: async () => ({}) }),
          options: { maxTotal: PLACES, maxMembers: MEMBERS, metrics: false, member: { acquireTimeoutMs: 60_000 } },
        },
      ],
    }),
    PoolDashboardModule.forRoot(),
  ],
})
class App {}

async function main(): Promise<void> {
  const app = await NestFactory.create(App, { logger: false });
  await app.listen(0, '127.0.0.1');
  const group = app.get<PoolGroup<object>>(getPoolToken('tenants'));
  const dashboard = app.get(PoolDashboard);
  for (let i = 0; i < MEMBERS; i += PLACES)
    await Promise.all(Array.from({ length: PLACES }, (_, j) => group.use(`t${i + j}`, () => sleep(1))));
  // A steady load: a call every 2 ms, held 10 ms, on one of 400 busy members, or one in ten on
  // any member (a place then changes member).
  const key = () => (Math.random() < 0.1 ? Math.floor(Math.random() * MEMBERS) : Math.floor(Math.random() * 400));
  const load = setInterval(() => void group.use(`t${key()}`, () => sleep(10)).catch(() => {}), 2);
  const mb = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;

  process.on('message', async (ask: Ask) => {
    if ('measure' in ask) {
      const feedBefore = dashboard.feed.stats();
      const before = live();
      const delay = monitorEventLoopDelay({ resolution: 5 });
      delay.enable();
      await sleep(ask.measure);
      delay.disable();
      const after = live();
      const feed = dashboard.feed.stats();
      const figures: PhaseFigures = {
        p50Ms: delay.percentile(50) / 1e6,
        p99Ms: delay.percentile(99) / 1e6,
        maxMs: delay.max / 1e6,
        rssGrowthMB: mb(after.rss - before.rss),
        liveGrowthMB: mb(after.heapUsed + after.external - before.heapUsed - before.external),
        viewers: feed.viewers,
        built: feed.built - feedBefore.built,
        busyMs: feed.busyMs - feedBefore.busyMs,
        bufferedKB: Math.round(feed.buffered / 1024),
        cutOff: feed.cutOff,
      };
      process.send!(figures);
      return;
    }
    const state = new DashboardState(() => [{ name: 'tenants', group }], {
      intervalMs: 500,
      maxConnectionRows: 200,
      maxMemberRows: 1_000,
    });
    state.start();
    const times: number[] = [];
    let bytes = 0;
    let rows = 0;
    for (let i = 0; i < ask.build; i++) {
      await sleep(50);
      const began = performance.now();
      const snapshot = state.snapshot(0);
      times.push(performance.now() - began);
      bytes = Buffer.byteLength(JSON.stringify(snapshot));
      rows = snapshot.groups[0]!.members.length;
    }
    state.stop();
    times.sort((a, b) => a - b);
    const figures: BuildFigures = {
      medianMs: times[times.length >> 1]!,
      maxMs: times.at(-1)!,
      bytes,
      memberRows: rows,
      members: group.summary(0).memberCount,
    };
    process.send!(figures);
  });
  process.on('disconnect', () => {
    clearInterval(load);
    void app.close().then(() => process.exit(0));
  });
  process.send!({ url: (await app.getUrl()).replace('[::1]', '127.0.0.1') });
}

void main();

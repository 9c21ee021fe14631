import { AdaptiveLimiter, ConnectionPool, LocalLimiter, type Connector } from '../../lib/index.js';

import {
  Resource,
  nextId,
  ClockedLocalLimiter,
  sleep,
  gc,
  ours,
  oursUsing,
  generic,
  tarnPool,
  bareSemaphore,
  bare,
  rate,
  latency,
  compare,
} from '../contenders.js';

export async function coldBurst(clientLimit: number, maxSize: number, createMs: number, callers: number) {
  const slow: Connector<Resource> = {
    create: async () => {
      await sleep(createMs);
      return { id: nextId() };
    },
  };
  const pool = new ConnectionPool(slow, { name: 'cold', clientLimit, maxSize });
  const start = performance.now();
  await Promise.all(
    Array.from({ length: callers }, async () => {
      const lease = await pool.acquire();
      await undefined;
      lease.release();
    }),
  );
  const ms = performance.now() - start;
  await pool.close();
  return ms;
}

export async function heapAfterGc(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    gc();
    await sleep(10);
  }
  return process.memoryUsage().heapUsed;
}

export async function memory() {
  const { pool, cycle, warm, close } = ours(1, 10);
  await warm();
  await rate(cycle, 10, 100_000);
  const before = await heapAfterGc();
  await rate(cycle, 10, 1_000_000);
  const after = await heapAfterGc();
  await close();
  void pool;

  // Bookkeeping per connection: the resources exist in both measurements, so only the pool's own
  // objects differ. 1,000 is the target's size; 10,000 gives a steadier figure (GC noise is fixed).
  const perConnection: Record<string, number> = {};
  for (const n of [1_000, 10_000]) {
    const resources = Array.from({ length: n }, (_, i) => ({ id: i }));
    let next = 0;
    const handout: Connector<Resource> = { create: async () => resources[next++]! };
    const empty = await heapAfterGc();
    const big = new ConnectionPool(handout, { name: 'mem', clientLimit: 100, maxSize: n, minSize: n });
    await big.warmup();
    perConnection[n] = ((await heapAfterGc()) - empty) / n;
    await big.close();
  }
  return { growthBytes: after - before, perConnectionBytes: perConnection };
}

/** Deep queues: 10,000 callers on 1,000 exclusive connections, so 9,000 wait at any time. */
export async function deepQueue(
  results: Record<string, unknown>,
  rows: string[][],
  fmt: (n: number) => string,
): Promise<void> {
  const best = await compare(
    {
      'nestjs-shared-pool': () => ours(1, 1_000),
      'generic-pool': () => generic(1_000),
      tarn: () => tarnPool(1_000),
      'bare semaphore': () => bareSemaphore(1_000),
    },
    10_000,
    1_000_000,
  );
  const ratio = best['nestjs-shared-pool']! / best['bare semaphore']!;
  results.deepQueue = {
    ...best,
    ratioVsSemaphore: ratio,
    ratioVsGenericPool: best['nestjs-shared-pool']! / best['generic-pool']!,
  };
  const shape = 'deep queue: 10,000 callers, maxSize 1,000 (9,000 queued)';
  for (const [name, r] of Object.entries(best)) rows.push([shape, name, fmt(r), '']);
  rows.push([shape, 'ratio vs bare semaphore, in one process', `${ratio.toFixed(2)}×`, 'see the fresh-process row']);
}

/** Warm exclusive acquire+release with 1 and 100 callers, beside generic-pool, tarn and the bare-await ceiling. */
export async function exclusiveBench(
  results: Record<string, unknown>,
  rows: string[][],
  fmt: (n: number) => string,
): Promise<void> {
  const exclusive: Record<string, unknown> = {};
  for (const concurrency of [1, 100]) {
    const best = await compare(
      {
        'nestjs-shared-pool': () => ours(1, 10),
        // Admission through a LocalLimiter with room: what @UsePooled with `limits` costs on top.
        'nestjs-shared-pool + LocalLimiter': () => ours(1, 10, new LocalLimiter({ global: 1_000_000 })),
        // An adaptive limit with room, through use(): each call's end is classified and learnt from.
        'nestjs-shared-pool + LocalLimiter, use()': () => oursUsing(new LocalLimiter({ global: 1_000_000 })),
        'nestjs-shared-pool + AdaptiveLimiter, use()': () =>
          oursUsing(new AdaptiveLimiter({ adaptive: { algorithm: 'aimd', initial: 1_000_000, max: 1_000_000 } })),
        // The default algorithm (Vegas), which learns from the calls' durations.
        'nestjs-shared-pool + AdaptiveLimiter (vegas), use()': () =>
          oursUsing(new AdaptiveLimiter({ adaptive: { algorithm: 'vegas', initial: 1_000_000, max: 1_000_000 } })),
        // Control: a LocalLimiter that reads the clock once per admission, as timing a call needs.
        'nestjs-shared-pool + LocalLimiter reading the clock': () =>
          ours(1, 10, new ClockedLocalLimiter({ global: 1_000_000 })),
        'generic-pool': () => generic(10),
        tarn: () => tarnPool(10),
        // The floor of any FIFO pool's cost: what the share of the ceiling can be compared with.
        'bare semaphore': () => bareSemaphore(10),
        'bare await (ceiling)': () => ({ cycle: bare, warm: async () => {}, close: async () => {} }),
      },
      concurrency,
      1_000_000,
    );
    const ratio = best['nestjs-shared-pool']! / best['generic-pool']!;
    exclusive[`c${concurrency}`] = {
      ...best,
      ratioVsGenericPool: ratio,
      ratioVsTarn: best['nestjs-shared-pool']! / best.tarn!,
    };
    for (const [name, r] of Object.entries(best)) rows.push([`exclusive, ${concurrency} caller(s)`, name, fmt(r), '']);
    rows.push([
      `exclusive, ${concurrency} caller(s)`,
      'ratio vs generic-pool',
      `${ratio.toFixed(2)}×`,
      concurrency === 1 ? 'target ≥ 3×' : 'target ≥ 4×',
    ]);
    const ofCeiling = best['nestjs-shared-pool']! / best['bare await (ceiling)']!;
    exclusive[`c${concurrency}`] = { ...(exclusive[`c${concurrency}`] as object), shareOfCeiling: ofCeiling };
    const semaphoreOfCeiling = best['bare semaphore']! / best['bare await (ceiling)']!;
    exclusive[`c${concurrency}`] = {
      ...(exclusive[`c${concurrency}`] as object),
      semaphoreShareOfCeiling: semaphoreOfCeiling,
    };
    rows.push([
      `exclusive, ${concurrency} caller(s)`,
      'share of the bare-await ceiling',
      `${(ofCeiling * 100).toFixed(0)} %`,
      `${concurrency === 1 ? '' : 'target ≥ 70 %; '}bare semaphore ${(semaphoreOfCeiling * 100).toFixed(0)} %`,
    ]);
    const limited = best['nestjs-shared-pool + LocalLimiter']! / best['generic-pool']!;
    rows.push([
      `exclusive, ${concurrency} caller(s)`,
      'with a LocalLimiter, ratio vs generic-pool',
      `${limited.toFixed(2)}×`,
      '',
    ]);
    const limiterCost = best['nestjs-shared-pool + LocalLimiter']! / best['nestjs-shared-pool']!;
    exclusive[`c${concurrency}`] = { ...(exclusive[`c${concurrency}`] as object), localLimiterVsNone: limiterCost };
    rows.push([
      `exclusive, ${concurrency} caller(s)`,
      'a LocalLimiter in front / no limiter, in one process',
      `${limiterCost.toFixed(2)}×`,
      'see the fresh-process row (target ≥ 0.80×)',
    ]);
    const adaptiveCost =
      best['nestjs-shared-pool + AdaptiveLimiter, use()']! / best['nestjs-shared-pool + LocalLimiter, use()']!;
    exclusive[`c${concurrency}`] = {
      ...(exclusive[`c${concurrency}`] as object),
      adaptiveVsLocalLimiter: adaptiveCost,
    };
    const clockCost =
      best['nestjs-shared-pool + LocalLimiter reading the clock']! / best['nestjs-shared-pool + LocalLimiter']!;
    const vegasCost =
      best['nestjs-shared-pool + AdaptiveLimiter (vegas), use()']! / best['nestjs-shared-pool + LocalLimiter, use()']!;
    exclusive[`c${concurrency}`] = {
      ...(exclusive[`c${concurrency}`] as object),
      adaptiveVegasVsLocalLimiter: vegasCost,
      clockReadVsLocalLimiter: clockCost,
    };
    rows.push([
      `exclusive, ${concurrency} caller(s)`,
      'an AdaptiveLimiter in front / a LocalLimiter, through use() (aimd, vegas), in one process',
      `${adaptiveCost.toFixed(2)}×, ${vegasCost.toFixed(2)}×`,
      `see the fresh-process row; one clock read per admission alone: ${clockCost.toFixed(2)}× (calls this dense are timed in a sample)`,
    ]);
  }
  results.exclusive = exclusive;
}

/** The pools side by side: exclusive and shared rates, deep queues, cold bursts, memory. */
export async function peersBench(
  results: Record<string, unknown>,
  rows: string[][],
  fmt: (n: number) => string,
): Promise<void> {
  await exclusiveBench(results, rows, fmt);
  await deepQueue(results, rows, fmt);

  const shared: Record<string, unknown> = {};
  for (const maxSize of [10, 1000]) {
    let best = { rate: 0, p50us: 0, p99us: 0 };
    for (let r = 0; r < 3; r++) {
      const { pool, warm, close } = ours(100, maxSize);
      await warm();
      await latency(pool, 1000, 100_000);
      const m = await latency(pool, 1000, 1_000_000);
      if (m.rate > best.rate) best = m;
      await close();
    }
    shared[`max${maxSize}`] = best;
    rows.push([
      `shared (clientLimit 100), maxSize ${maxSize}, 1000 callers`,
      'nestjs-shared-pool',
      fmt(best.rate),
      `p50 ${best.p50us.toFixed(1)} µs, p99 ${best.p99us.toFixed(1)} µs`,
    ]);
  }
  const sharedRatio = (shared.max1000 as { rate: number }).rate / (shared.max10 as { rate: number }).rate;
  shared.ratio1000vs10 = sharedRatio;
  rows.push(['shared, maxSize 1000 vs 10', 'ratio', `${sharedRatio.toFixed(2)}×`, 'target ≥ 0.8×']);
  results.shared = shared;

  const createMs = 50;
  const burst = {
    createMs,
    exclusiveMax100Ms: await coldBurst(1, 100, createMs, 100),
    sharedMax10Ms: await coldBurst(100, 10, createMs, 100),
  };
  results.coldBurst = burst;
  rows.push([
    'cold burst: 100 callers, 50 ms create, clientLimit 1 maxSize 100',
    'time to serve all',
    `${burst.exclusiveMax100Ms.toFixed(1)} ms`,
    `${(burst.exclusiveMax100Ms / createMs).toFixed(2)}× create (target ≤ 1.3×)`,
  ]);
  rows.push([
    'cold burst: 100 callers, 50 ms create, clientLimit 100 maxSize 10',
    'time to serve all',
    `${burst.sharedMax10Ms.toFixed(1)} ms`,
    `${(burst.sharedMax10Ms / createMs).toFixed(2)}× create (target ≤ 1.3×)`,
  ]);

  const mem = await memory();
  results.memory = mem;
  rows.push([
    'memory: 1,000,000 warm cycles',
    'heap growth',
    `${(mem.growthBytes / 1024).toFixed(1)} KiB`,
    'target < 1 MiB',
  ]);
  for (const [n, bytes] of Object.entries(mem.perConnectionBytes)) {
    rows.push([
      `memory: ${Number(n).toLocaleString('en')} idle connections`,
      'bookkeeping per connection',
      `${bytes.toFixed(0)} B`,
      'target < 1 KiB',
    ]);
  }
}

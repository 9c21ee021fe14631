import genericPool from 'generic-pool';
import tarn from 'tarn';
import {
  ConnectionPool,
  type ConcurrencyLimiter,
  LocalLimiter,
  type Connector,
  type PoolLogger,
} from '../lib/index.js';
import type { MetricsMeter } from '../lib/core/observation/pool-metrics.js';
import { type Cycle, semaphore } from './fresh-cycles.js';

export type Resource = { id: number };

export const ACQUIRE_TIMEOUT_MS = 60_000;
let ids = 0;
/** A fresh resource id. */
export const nextId = () => ids++;
export const instant: Connector<Resource> = { create: async () => ({ id: ids++ }) };
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
export const gc = (): void => (globalThis as { gc?: () => void }).gc?.();

export function ours(
  clientLimit: number,
  maxSize: number,
  limiter?: ConcurrencyLimiter,
  metrics: boolean | MetricsMeter = false,
  metricTimings = true,
  logger?: PoolLogger,
) {
  const pool = new ConnectionPool(instant, {
    ...(logger === undefined ? {} : { logger }),
    name: 'bench',
    clientLimit,
    maxSize,
    minSize: maxSize,
    acquireTimeoutMs: ACQUIRE_TIMEOUT_MS,
    limiter,
    metrics,
    metricTimings,
  });
  const cycle: Cycle = async () => {
    const lease = await pool.acquire();
    await undefined;
    lease.release();
  };
  return { pool, cycle, warm: () => pool.warmup(), close: () => pool.close() };
}

/** use() around a body that awaits once, without a scope: how a call's end reaches an adaptive limiter (a lease by hand tells it nothing). */
export function oursUsing(limiter: ConcurrencyLimiter) {
  const own = ours(1, 10, limiter);
  const body = async () => {
    await undefined;
  };
  const cycle: Cycle = () => own.pool.use(body, { propagation: 'none' });
  return { ...own, cycle };
}

/** Metrics off, and the two clock reads that timing a lease takes (one at checkout, one at release): the floor of any honest timing. */
export let clockSink = 0;
export function oursReadingTheClock() {
  const own = ours(1, 10);
  const cycle: Cycle = async () => {
    const at = performance.now();
    const lease = await own.pool.acquire();
    await undefined;
    lease.release();
    clockSink += performance.now() - at;
  };
  return { ...own, cycle };
}

export function generic(max: number) {
  const pool = genericPool.createPool<Resource>(
    { create: async () => ({ id: ids++ }), destroy: async () => {} },
    { max, min: max, acquireTimeoutMillis: ACQUIRE_TIMEOUT_MS },
  );
  const cycle: Cycle = async () => {
    const r = await pool.acquire();
    await undefined;
    await pool.release(r);
  };
  return {
    cycle,
    warm: () => pool.ready(),
    close: async () => {
      await pool.drain();
      await pool.clear();
    },
  };
}

export function tarnPool(max: number) {
  const pool = new tarn.Pool<Resource>({
    create: async () => ({ id: ids++ }),
    destroy: () => {},
    min: max,
    max,
    acquireTimeoutMillis: ACQUIRE_TIMEOUT_MS,
  });
  const cycle: Cycle = async () => {
    const r = await pool.acquire().promise;
    await undefined;
    pool.release(r);
  };
  return {
    cycle,
    warm: async () => {
      const held = await Promise.all(Array.from({ length: max }, () => pool.acquire().promise));
      held.forEach((r) => pool.release(r));
    },
    close: () => pool.destroy(),
  };
}

/** A bare semaphore of `max` permits with a FIFO of waiters: the floor of any pool's cost. */
export function bareSemaphore(max: number) {
  const permits = semaphore(max);
  const cycle: Cycle = async () => {
    await permits.acquire();
    await undefined;
    permits.release();
  };
  return { cycle, warm: async () => {}, close: async () => {} };
}

export const bare: Cycle = async () => {
  await undefined;
  await undefined;
};

/** Runs `total` cycles spread over `concurrency` workers; returns cycles per second. */
export async function rate(cycle: Cycle, concurrency: number, total: number): Promise<number> {
  const per = Math.ceil(total / concurrency);
  const worker = async () => {
    for (let i = 0; i < per; i++) await cycle();
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  return (per * concurrency) / ((performance.now() - start) / 1000);
}

/** Acquire latencies (call to lease) of `total` cycles over `concurrency` workers, plus the rate. */
export async function latency(pool: ConnectionPool<Resource>, concurrency: number, total: number) {
  const per = Math.ceil(total / concurrency);
  const samples = new Float64Array(per * concurrency);
  let n = 0;
  const worker = async () => {
    for (let i = 0; i < per; i++) {
      const t0 = performance.now();
      const lease = await pool.acquire();
      samples[n++] = performance.now() - t0;
      await undefined;
      lease.release();
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - start) / 1000;
  samples.sort();
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]! * 1000;
  return { rate: samples.length / seconds, p50us: at(0.5), p99us: at(0.99) };
}

/** Best of `rounds` runs of each contender, interleaved so drift hits all alike. */
export async function compare(
  contenders: Record<string, () => { cycle: Cycle; warm: () => Promise<unknown>; close: () => Promise<unknown> }>,
  concurrency: number,
  total: number,
  rounds = 3,
) {
  const best: Record<string, number> = {};
  for (let r = 0; r < rounds; r++) {
    for (const [name, make] of Object.entries(contenders)) {
      const c = make();
      await c.warm();
      await rate(c.cycle, concurrency, total / 10); // JIT warm-up
      const measured = await rate(c.cycle, concurrency, total);
      await c.close();
      best[name] = Math.max(best[name] ?? 0, measured);
    }
  }
  return best;
}

/** A LocalLimiter that reads the clock once per admission: the floor of any limiter that times its calls. */
export class ClockedLocalLimiter extends LocalLimiter {
  stamp = 0;

  override tryAdmit(request: Parameters<LocalLimiter['tryAdmit']>[0]) {
    this.stamp = performance.now();
    return super.tryAdmit(request);
  }
}

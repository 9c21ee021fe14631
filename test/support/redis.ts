import { afterEach } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Redis, type Cluster } from 'ioredis';
import type { ConcurrencyLimiter } from '../../lib/index.js';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

const cleanups: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A plain client to look at what the limiter wrote; closed after the test. */
export function inspector(url = REDIS_URL): Redis {
  const redis = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1 });
  cleanups.push(async () => redis.disconnect());
  return redis;
}

/** Leases in a namespace's global set: every member but the sentinel (scored +inf). */
export function leasesIn(redis: Redis | Cluster, ns: string): Promise<number> {
  return redis.zcount(`{${ns}}:g`, '-inf', '(+inf');
}

/** A namespace of its own, deleted after the test. */
export function namespace(url = REDIS_URL): string {
  const ns = `test-${randomUUID().slice(0, 8)}`;
  cleanups.push(async () => {
    const redis = new Redis(url, { maxRetriesPerRequest: 1, retryStrategy: () => null });
    redis.on('error', () => {});
    try {
      const keys = await redis.keys(`{${ns}}*`);
      if (keys.length > 0) await redis.del(...keys);
    } catch {
      // the server may be gone (tests that stop it)
    } finally {
      redis.disconnect();
    }
  });
  return ns;
}

/** Starts a limiter and closes it after the test. */
export async function started<L extends ConcurrencyLimiter>(limiter: L): Promise<L> {
  cleanups.push(() => limiter.close());
  await limiter.start();
  return limiter;
}

/** Runs after the test, in reverse order of registration. */
export function onCleanup(fn: () => Promise<unknown>): void {
  cleanups.push(fn);
}

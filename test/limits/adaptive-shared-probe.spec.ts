// A limit shared through Redis measures the backend's latency without a queue again, as one
// instance's does, by a probe at a pinned low concurrency, but for the whole fleet: the backend
// gets slower for good (a deploy, a colder cache), its capacity the same, and the fleet's limit
// must come back to that capacity. Without the fleet's probe, every instance keeps the floor it
// learned when the backend was fast, reads the slower calls as a queue, and the limit falls to a
// fraction of the capacity for good (Vegas to half of it, the gradient to its least; AIMD, which
// also learns from calls that did not fill its limit, holds either way and is checked unharmed).
import { describe, expect, it } from '@jest/globals';
import { AdaptiveLimiter } from '../../lib/limits/index.js';
import { RecordingLogger } from '../support/harness.js';
import { inspector, namespace, onCleanup, REDIS_URL, started } from '../support/redis.js';
import { sleep } from '../support/wait.js';

/** Calls the backend serves at once before they queue. */
const C = 20;
const CALLERS = 20; // per instance, two instances: twice the capacity

describe('AdaptiveLimiter shared through Redis, probing the latency without a queue', () => {
  it.each(['vegas', 'gradient', 'aimd'] as const)(
    '%s comes back to the capacity after the backend got slower for good: the fleet pins its limit to measure again',
    async (algorithm) => {
      const ns = namespace();
      const make = () =>
        started(
          new AdaptiveLimiter({
            name: 'llm',
            logger: new RecordingLogger(),
            // Windows of 50 ms and a probe every 2 limits' worth of them: every 2 s at the capacity.
            adaptive: { algorithm, initial: 10, max: 60, windowMs: 50, probeEvery: 2 },
            redis: { url: REDIS_URL, namespace: ns, leaseTtlMs: 2_000, restartProtection: false },
          }),
        );
      const limiters = [await make(), await make()];
      // The backend: C at once take `base` ms; past C, every call in flight slows in proportion.
      let base = 10;
      let inflight = 0;
      let pinnedSeen = 0;
      const backend = async () => {
        inflight++;
        const ms = base * Math.max(1, inflight / C);
        await sleep(ms);
        inflight--;
      };
      let stop = false;
      const caller = async (limiter: AdaptiveLimiter) => {
        while (!stop) {
          try {
            const admission = await limiter.admit({ pool: 'api', timeoutMs: 2_000 });
            if (inflight < 3) pinnedSeen++;
            await backend();
            admission.ended!({ ok: true, value: { status: 200 } });
            admission.release();
          } catch {
            await sleep(5);
          }
        }
      };
      const running = limiters.flatMap((l) => Array.from({ length: CALLERS }, () => caller(l)));
      onCleanup(async () => {
        stop = true;
        await Promise.all(running);
      });

      await sleep(3_000); // learns the backend at 10 ms
      const fast = limiters[0]!.limit;
      base = 25; // slower for good, as many at once
      await sleep(6_000);
      // The last two seconds: the limit the fleet keeps.
      const seen: number[] = [];
      for (let i = 0; i < 20; i++) {
        seen.push(Number(await inspector().hget(`{${ns}}:meta`, 'alimit')));
        await sleep(100);
      }
      stop = true;
      await Promise.all(running);
      seen.sort((a, b) => a - b);
      const median = seen[10]!;
      console.log(
        `shared ${algorithm}, C ${C}: limit ${fast} at 10 ms; at 25 ms the last 2 s ${seen[0]!.toFixed(1)}–${seen.at(-1)!.toFixed(1)} (median ${median.toFixed(1)}); calls admitted with fewer than 3 in flight ${pinnedSeen}`,
      );
      expect(fast).toBeGreaterThanOrEqual(0.8 * C);
      expect(median).toBeGreaterThanOrEqual(0.8 * C);
      expect(median).toBeLessThanOrEqual(2 * C);
    },
    30_000,
  );
});

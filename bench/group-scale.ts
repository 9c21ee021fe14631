/**
 * A pool group at scale: the cost of a release once the budget is spent, with 200 to 10,000
 * members. 100 members hold the 100 places and every other member waits with one caller, so
 * each release is weighed (does the connection go to a hungrier member?) and, being overfull,
 * gives its place to a waiting member. The time is that of the release calls themselves.
 */
import { PoolGroup } from '../lib/groups/index.js';
import type { Lease } from '../lib/core/index.js';

const PLACES = 100;
const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Microseconds per release with `members` members (the best of the rounds' means). */
export async function groupReleaseMicros(members: number): Promise<number> {
  const quiet = { warn: () => {}, error: (message: string) => console.error(message) };
  const group = new PoolGroup<object>({
    name: 'scale',
    maxTotal: PLACES,
    maxMembers: members,
    minHoldMs: 0,
    logger: quiet,
    metrics: false,
    connector: () => ({ create: async () => ({}) }),
    member: { acquireTimeoutMs: 600_000 },
  });
  const held: Lease<object>[] = [];
  for (let i = 0; i < PLACES; i++) held.push(await group.acquire(`k${i}`));
  for (let i = PLACES; i < members; i++)
    group.acquire(`k${i}`).then(
      (lease) => held.push(lease),
      () => {},
    );
  await pause(50);
  let best = Infinity;
  for (let round = 0; round < 5; round++) {
    const batch = held.splice(0, 50);
    const started = performance.now();
    for (const lease of batch) lease.release();
    best = Math.min(best, ((performance.now() - started) * 1000) / batch.length);
    await pause(20);
  }
  for (const lease of held) lease.release();
  await group.close({ graceMs: 0 });
  return best;
}

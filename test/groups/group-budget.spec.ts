// maxTotal holds at the connector, from the start of a create to the end of its close, whatever
// forgets a member: an eviction for maxMembers, a close, a create that timed out but still ran.
import { describe, expect, it } from '@jest/globals';
import type { Connector } from '../../lib/index.js';
import { PoolGroup } from '../../lib/groups/pool-group.js';
import type { PoolGroupOptions } from '../../lib/groups/group-options.js';
import { RecordingLogger } from '../support/harness.js';
import { countingServer as server, type Conn } from '../support/counting-server.js';
import { flush, VirtualClock } from '../support/virtual-clock.js';

function groupOf(clock: VirtualClock, connector: () => Connector<Conn>, options: Partial<PoolGroupOptions<Conn>>) {
  return new PoolGroup<Conn>({
    name: 'g',
    maxTotal: 3,
    clock,
    logger: new RecordingLogger(),
    minHoldMs: 10,
    rebalanceIntervalMs: 10,
    connector,
    ...options,
  });
}

/** Five callers call seven keys round-robin, 30 calls each, on a group of maxTotal 3 and maxMembers 2 with creates of 20 ms. */
async function roundRobin(deadlineMs: number, closeMs: number, options: Partial<PoolGroupOptions<Conn>> = {}) {
  const clock = new VirtualClock();
  const { state, connector } = server(clock, 20, closeMs);
  const g = groupOf(clock, connector, {
    maxTotal: 3,
    maxMembers: 2,
    member: { acquireTimeoutMs: deadlineMs },
    ...options,
  });
  const keys = Array.from({ length: 7 }, (_, i) => `k${i}`);
  let next = 0;
  let served = 0;
  let refused = 0;
  let shared = 0;
  const caller = async () => {
    for (let i = 0; i < 30; i++) {
      const key = keys[next++ % keys.length]!;
      try {
        await g.use(key, async (conn) => {
          if (++conn.users > 1) shared++;
          await new Promise<void>((resolve) => clock.setTimeout(resolve, 5));
          conn.users--;
        });
        served++;
      } catch {
        refused++;
      }
    }
  };
  let done = false;
  void Promise.all(Array.from({ length: 5 }, caller)).then(() => (done = true));
  for (let t = 0; t < 60_000 && !done; t += 10) await clock.advance(10);
  if (!done) throw new Error('the callers did not finish');
  const closing = g.close();
  await clock.advance(100);
  await closing;
  return { state, served, refused, shared };
}

describe('a pool group keeps maxTotal at the connector', () => {
  it.each([
    [10, 0],
    [15, 10],
    [25, 10],
    [200, 10],
    [200, 40],
  ])(
    'with maxMembers 2 and seven keys called round-robin by five callers, creates of 20 ms, deadlines of %i ms, closes of %i ms: never more than 3 alive',
    async (deadlineMs, closeMs) => {
      const { state, served, refused, shared } = await roundRobin(deadlineMs, closeMs);
      expect(state.peak).toBeLessThanOrEqual(3);
      expect([shared, state.alive]).toEqual([0, 0]);
      expect(served + refused).toBe(150);
      expect(served).toBeGreaterThan(0);
    },
  );

  it('a new key that waits for a member place is refused far less often than one refused at once', async () => {
    const waiting = await roundRobin(200, 10);
    const atOnce = await roundRobin(200, 10, { maxWaiting: 0 }); // the behaviour before new keys could wait
    console.log(
      `round-robin of 7 keys over maxMembers 2, deadlines 200 ms: refused ${atOnce.refused} of 150 at once, ${waiting.refused} of 150 when new keys wait`,
    );
    expect(atOnce.refused).toBeGreaterThan(50);
    expect(waiting.refused).toBeLessThan(atOnce.refused / 4);
    expect(waiting.state.peak).toBeLessThanOrEqual(3);
  });

  it('a member evicted while its create is in flight keeps the place until that create has ended and its connection closed', async () => {
    const clock = new VirtualClock();
    const { state, connector } = server(clock, 50, 30);
    const g = groupOf(clock, connector, { maxTotal: 1, maxMembers: 1, member: { acquireTimeoutMs: 10 } });
    const first = g.use('a', () => 1).catch((e: unknown) => e); // times out at 10 ms; its create runs on
    await clock.advance(10);
    expect(await first).toMatchObject({ code: 'CONNECTIONS_EXHAUSTED' });
    const second = g.use('b', () => 2, { timeoutMs: 1_000 }); // evicts 'a', whose create is still under way
    await clock.advance(39);
    expect([state.alive, g.stats().total]).toEqual([0, 1]); // a's place is still a's
    await clock.advance(1); // a's create ends: the late connection arrives and is closed
    expect(state.alive).toBe(1);
    await clock.advance(29);
    expect(state.created).toBe(1); // b has not begun: a's close has not ended
    await clock.advance(1 + 50);
    await flush();
    expect(await second).toBe(2);
    expect(state.peak).toBe(1);
    const closing = g.close();
    await clock.advance(100);
    await closing;
  });
});

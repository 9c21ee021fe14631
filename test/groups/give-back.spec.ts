// A group gives a burst's connections back to the server soon after the burst, and learns not
// to when bursts return in a rhythm (lib/groups/give-back.ts).
import { afterEach, describe, expect, it } from '@jest/globals';
import type { Connector } from '../../lib/index.js';
import { countingServer, type Conn } from '../support/counting-server.js';
import { PoolGroup } from '../../lib/groups/pool-group.js';
import type { PoolGroupOptions } from '../../lib/groups/group-options.js';
import { configError, RecordingLogger } from '../support/harness.js';
import { VirtualClock } from '../support/virtual-clock.js';

/** The server of these tests: 20 ms connects, 5 ms closes. */
const server = (clock: VirtualClock) => countingServer(clock, 20, 5);

const open: PoolGroup<Conn>[] = [];
let clock: VirtualClock;

function groupOf(connector: () => Connector<Conn>, options: Partial<PoolGroupOptions<Conn>> = {}) {
  const g = new PoolGroup<Conn>({
    name: 'g',
    maxTotal: 40,
    clock,
    logger: new RecordingLogger(),
    connector,
    metrics: false,
    ...options,
  });
  open.push(g);
  return g;
}

afterEach(async () => {
  const closing = Promise.all(open.splice(0).map((g) => g.close()));
  await clock.advance(1_000);
  await closing;
});

/** `callers` callers of member `key`, each holding a connection `holdMs` at a time, back to back, for `forMs`. */
function burst(g: PoolGroup<Conn>, key: string, callers: number, holdMs: number, forMs: number): Promise<unknown> {
  const end = clock.now() + forMs;
  const caller = async () => {
    while (clock.now() < end) await g.use(key, () => new Promise<void>((resolve) => clock.setTimeout(resolve, holdMs)));
  };
  return Promise.all(Array.from({ length: callers }, caller));
}

const connectionsOf = (g: PoolGroup<Conn>, key: string) => g.member(key)?.stats().size ?? 0;

describe('a pool group gives a burst back', () => {
  it('a member that burst to 30 connections and went quiet falls back to about its steady need within half a second, while a steady member keeps its own', async () => {
    clock = new VirtualClock();
    const { state, connector } = server(clock);
    const g = groupOf(connector);
    const steady = burst(g, 'steady', 2, 10, 3_000);
    await clock.advance(500);
    const spike = burst(g, 'spike', 30, 50, 200);
    await clock.advance(300);
    await spike;
    expect(connectionsOf(g, 'spike')).toBe(30);
    // Idle for less than the give-back delay (300 ms by default): kept, so a pause is no give-back.
    await clock.advance(200);
    expect(connectionsOf(g, 'spike')).toBe(30);
    await clock.advance(300);
    // Half a second after the burst: what it needed lately (its need falls fast once it falls) and
    // one more (it kept 3 while its need fell as slowly as the planner's), as Gel's simulation
    // scores a burst's end.
    expect(connectionsOf(g, 'spike')).toBeLessThanOrEqual(2);
    await clock.advance(500);
    expect(connectionsOf(g, 'steady')).toBeGreaterThanOrEqual(2);
    expect(state.alive).toBeLessThanOrEqual(6);
    const stats = g.stats();
    expect(stats.givenBack).toBeGreaterThanOrEqual(28);
    expect(stats.members.find((m) => m.key === 'spike')).toMatchObject({ giveBackMs: 300, givenBack: stats.givenBack });
    expect(g.member('spike')!.stats().counters.retiredBy.idle).toBe(stats.givenBack);
    await clock.advance(2_000);
    await steady;
  });

  it('bursts that return in a rhythm cost one round of reconnects, then keep their connections through the gaps', async () => {
    clock = new VirtualClock();
    const { state, connector } = server(clock);
    const g = groupOf(connector);
    const createsPerBurst: number[] = [];
    for (let i = 0; i < 5; i++) {
      const before = state.created;
      const b = burst(g, 'rhythm', 20, 50, 200);
      await clock.advance(300);
      await b;
      createsPerBurst.push(state.created - before);
      await clock.advance(1_200); // a gap of about 1.3 s
    }
    // The first burst opens its connections; the first gap gives them back (nothing says the burst
    // returns); the second burst reopens them and teaches the member the gap; then none.
    expect(createsPerBurst[0]).toBe(20);
    expect(createsPerBurst[1]).toBeGreaterThanOrEqual(15);
    expect(createsPerBurst.slice(2)).toEqual([0, 0, 0]);
    const learned = g.stats().members[0]!.giveBackMs;
    expect(learned).toBeGreaterThan(1_300);
    // The bursts stop for good: after the learned delay the connections go back all the same.
    await clock.advance(learned + 500);
    expect(connectionsOf(g, 'rhythm')).toBeLessThanOrEqual(2);
    // No burst came back for ten seconds: the member gives back sooner again.
    await clock.advance(10_500);
    expect(g.stats().members[0]!.giveBackMs).toBeLessThan(learned);
  });

  it("giveBackAfterMs sets the delay; Infinity keeps idle connections until the members' maxIdleMs", async () => {
    clock = new VirtualClock();
    const { connector } = server(clock);
    const soon = groupOf(connector, { giveBackAfterMs: 1_000 });
    const never = groupOf(connector, { giveBackAfterMs: Infinity, member: { maxIdleMs: 5_000 } });
    const bursts = [burst(soon, 'a', 10, 50, 100), burst(never, 'a', 10, 50, 100)];
    await clock.advance(200);
    await Promise.all(bursts);
    await clock.advance(900);
    expect([connectionsOf(soon, 'a'), connectionsOf(never, 'a')]).toEqual([10, 10]);
    await clock.advance(300);
    expect(connectionsOf(soon, 'a')).toBeLessThanOrEqual(3);
    await clock.advance(3_000);
    expect(connectionsOf(never, 'a')).toBe(10);
    expect(never.stats().givenBack).toBe(0);
    await clock.advance(2_000);
    expect(connectionsOf(never, 'a')).toBe(0); // the members' idle expiry, as without a group
  });

  it('refuses a giveBackAfterMs that is not a duration', () => {
    clock = new VirtualClock();
    const { connector } = server(clock);
    for (const bad of [-1, Number.NaN, '300', null]) {
      const error = configError(() => groupOf(connector, { giveBackAfterMs: bad as never }));
      expect(error.message).toContain('giveBackAfterMs');
    }
  });
});

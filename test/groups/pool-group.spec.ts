// A pool group on virtual time: members per key share maxTotal connections; hungry members take
// idle places from overfull ones after the minimum hold; a rare member is not starved by a busy
// one, and keeps its place while it calls now and then; idle members are forgotten.
import { describe, expect, it } from '@jest/globals';
import type { Connector, Lease } from '../../lib/index.js';
import { PoolGroup } from '../../lib/groups/pool-group.js';
import type { PoolGroupOptions } from '../../lib/groups/group-options.js';
import { FakeConnector, type FakeConnection } from '../support/fake-connector.js';
import { configError, RecordingLogger, track } from '../support/harness.js';
import { flush, VirtualClock } from '../support/virtual-clock.js';

function group(options: Partial<PoolGroupOptions<FakeConnection>> = {}) {
  const clock = new VirtualClock();
  const connectors = new Map<string, FakeConnector>();
  const g = new PoolGroup<FakeConnection>({
    name: 'tenants',
    maxTotal: 4,
    clock,
    logger: new RecordingLogger(),
    minHoldMs: 50,
    rebalanceIntervalMs: 10,
    connector: (key) => {
      const c = new FakeConnector();
      connectors.set(key, c);
      return c;
    },
    member: { clientLimit: 1, acquireTimeoutMs: 10_000 },
    ...options,
  });
  /** Connections open on the (fake) server now, every member together. */
  const live = () => [...connectors.values()].reduce((n, c) => n + c.live.size, 0);
  return { g, clock, connectors, live };
}

/** A connector whose close takes 10 ms of `clock`: a place taken from a member frees only then. */
function closingIn10ms(clock: VirtualClock): Connector<{ id: number }> {
  let ids = 0;
  return {
    create: async () => ({ id: ++ids }),
    close: () => new Promise<void>((resolve) => clock.setTimeout(resolve, 10)),
  };
}

describe('a pool group', () => {
  it('opens connections for its members as they need them while the budget has room', async () => {
    const { g, live } = group();
    const leases = [await g.acquire('a'), await g.acquire('a'), await g.acquire('b')];
    expect([live(), g.stats().total]).toEqual([3, 3]);
    expect(leases.map((l) => l.connection.id)).toEqual([1, 2, 1]); // each member has its own connector
    for (const l of leases) l.release();
    await g.close();
    expect(live()).toBe(0);
  });

  it('never has more connections than maxTotal, however its members race', async () => {
    const { g, clock, live } = group({ maxTotal: 3 });
    let peak = 0;
    const work = async (key: string, ms: number) => {
      await g.use(key, async () => {
        peak = Math.max(peak, live(), g.stats().total);
        await new Promise<void>((resolve) => clock.setTimeout(resolve, ms));
      });
    };
    const calls = Array.from({ length: 40 }, (_, i) => track(work(`t${i % 5}`, 5 + (i % 7) * 10)));
    for (let t = 0; t < 400 && calls.some((c) => !c.settled); t++) await clock.advance(10);
    expect(calls.filter((c) => c.error !== undefined)).toEqual([]);
    expect(calls.every((c) => c.settled)).toBe(true);
    expect(peak).toBeLessThanOrEqual(3);
    expect(live()).toBeLessThanOrEqual(3);
    await g.close();
    expect([live(), g.stats().total]).toEqual([0, 0]);
  });

  it('gives a hungry member the idle place of an overfull one, once held for the minimum hold time', async () => {
    const { g, clock, connectors } = group({ giveBackAfterMs: Infinity }); // a keeps the rest (give-back.spec.ts)
    const held = await Promise.all([0, 1, 2, 3].map(() => g.acquire('a')));
    for (const l of held) l.release(); // a now holds 4 idle connections, 0 ms old
    const b = track(g.acquire('b'));
    await flush();
    expect(b.settled).toBe(false); // a's connections are younger than the minimum hold
    await clock.advance(60);
    expect(b.settled).toBe(true);
    expect(connectors.get('a')!.live.size).toBe(3);
    expect(g.stats().total).toBe(4);
    (b.value as Lease<FakeConnection>).release();
    await g.close();
  });

  it('lets an acquire take an old enough idle place at once, without waiting for the rebalance', async () => {
    const { g, clock, connectors } = group({ rebalanceIntervalMs: 60_000 });
    const held = await Promise.all([0, 1, 2, 3].map(() => g.acquire('a')));
    for (const l of held) l.release();
    await clock.advance(60); // past the minimum hold; the rebalance timer is far off
    const b = track(g.acquire('b'));
    await flush();
    expect(b.settled).toBe(true);
    expect([connectors.get('a')!.live.size, g.stats().total]).toEqual([3, 4]);
    (b.value as Lease<FakeConnection>).release();
    await g.close();
  });

  it('serves a rare member soon beside a busy one whose queue never empties', async () => {
    const { g, clock } = group();
    let stop = false;
    const busy = async () => {
      while (!stop) await g.use('busy', () => new Promise<void>((resolve) => clock.setTimeout(resolve, 20)));
    };
    const workers = Array.from({ length: 12 }, () => track(busy())); // 12 callers on 4 places: a queue that never empties
    await clock.advance(200);
    const rare = track(g.use('rare', () => 'served'));
    let waited = 0;
    while (!rare.settled && waited < 1_000) {
      await clock.advance(10);
      waited += 10;
    }
    expect(rare.value).toBe('served');
    expect(waited).toBeLessThanOrEqual(100); // a few busy holds, not until the busy member stops
    stop = true;
    for (let t = 0; t < 100 && workers.some((w) => !w.settled); t++) await clock.advance(20);
    expect(workers.filter((w) => w.error !== undefined)).toEqual([]);
    await g.close();
  });

  it('lets a member that calls now and then keep its place beside a busy one, and lets it go when its calls stop', async () => {
    // Connects cost 50 ms (the minimum hold); the rare member calls every 150 ms, within ten of them.
    const { g, clock, connectors } = group();
    let stop = false;
    const busy = async () => {
      while (!stop) await g.use('busy', () => new Promise<void>((resolve) => clock.setTimeout(resolve, 20)));
    };
    const workers = Array.from({ length: 12 }, () => track(busy()));
    await clock.advance(200);
    for (let call = 0; call < 20; call++) {
      const rare = track(g.use('rare', () => 'served'));
      await clock.advance(150);
      expect(rare.value).toBe('served');
    }
    // Two connects for twenty calls: before its second call, nothing said it calls again.
    expect(connectors.get('rare')!.created).toBe(2);
    // Its calls stop: once three of its gaps have passed, the busy member takes the place.
    await clock.advance(600);
    expect(connectors.get('rare')!.live.size).toBe(0);
    expect(g.member('busy')!.stats().size).toBe(4);
    stop = true;
    for (let t = 0; t < 100 && workers.some((w) => !w.settled); t++) await clock.advance(20);
    expect(workers.filter((w) => w.error !== undefined)).toEqual([]);
    await g.close();
  });

  it('forgets a member idle for memberIdleMs, and makes it again on its next use', async () => {
    const { g, clock, connectors } = group({
      memberIdleMs: 1_000,
      member: { clientLimit: 1, maxIdleMs: 200, reapIntervalMs: 50 },
    });
    await g.use('a', () => 1);
    expect(g.stats().members.map((m) => m.key)).toEqual(['a']);
    expect(g.stats().forgotten).toBe(0);
    await clock.advance(1_500);
    expect(g.stats().members).toEqual([]);
    expect(g.stats().forgotten).toBe(1);
    expect(connectors.get('a')!.live.size).toBe(0);
    await g.use('a', () => 1);
    expect(g.stats().members.map((m) => m.key)).toEqual(['a']);
    await g.close();
  });

  it('does not keep a place for a caller that gave up while it was being freed', async () => {
    // The place of a taken connection frees only once its close ends; the caller it was taken for left meanwhile.
    const clock = new VirtualClock();
    const slowClose = () => closingIn10ms(clock);
    const g = new PoolGroup({
      maxTotal: 2,
      clock,
      logger: new RecordingLogger(),
      minHoldMs: 0,
      connector: slowClose,
      member: { clientLimit: 1 },
    });
    const busy = await g.acquire('a');
    (await g.acquire('a')).release(); // a: one busy, one idle
    const gaveUp = new AbortController();
    const b = track(g.acquire('b', { signal: gaveUp.signal }));
    await flush();
    gaveUp.abort();
    await clock.advance(20); // a's idle connection closed; nobody waits for its place
    expect(b.error).toMatchObject({ name: 'AbortError' });
    const c = track(g.acquire('c'));
    await flush();
    expect(c.settled).toBe(true); // the free place is anyone's, not kept for b
    expect(g.stats()).toMatchObject({ total: 2, waiting: 0, transfers: 1 });
    busy.release();
    (c.value as Lease<{ id: number }>).release();
    const closing = g.close();
    await clock.advance(20);
    await closing;
  });

  it('holds a connection at least as long as a connect takes, when that is longer than minHoldMs', async () => {
    const clock = new VirtualClock();
    const slowConnect: Connector<number> = {
      create: () => new Promise<number>((resolve) => clock.setTimeout(() => resolve(1), 200)),
    };
    const g = new PoolGroup({
      maxTotal: 1,
      clock,
      logger: new RecordingLogger(),
      minHoldMs: 10,
      rebalanceIntervalMs: 10,
      connector: () => slowConnect,
      member: { clientLimit: 1 },
    });
    const a = track(g.acquire('a'));
    await clock.advance(200);
    (a.value as Lease<number>).release();
    expect(g.stats().minHoldMs).toBe(200);
    const b = track(g.acquire('b'));
    await clock.advance(150); // a's connection is 150 ms old: too young to take
    expect([b.settled, g.stats().health]).toEqual([false, 'exhausted']);
    await clock.advance(60 + 200); // past the hold, then b's own connect
    expect(b.settled).toBe(true);
    expect(g.stats()).toMatchObject({ total: 1, transfers: 1, waiting: 0, health: 'exhausted' });
    (b.value as Lease<number>).release();
    expect(g.stats().health).toBe('healthy');
    await g.close();
  });

  it('fails a waiter with the connect error when nothing else could serve it, even once the budget was spent', async () => {
    // The breaker opening on the first failure: a missing database is no transient error.
    const { g, clock, connectors } = group({
      maxTotal: 2,
      minHoldMs: 10,
      member: { clientLimit: 1, acquireTimeoutMs: 60_000, breakerFailures: 1, breakerAfterMs: 0 },
    });
    const held = [await g.acquire('a'), await g.acquire('a')]; // the budget is spent
    held[1]!.release();
    const down = track(g.acquire('down'));
    connectors.get('down')!.createSteps.push({ kind: 'fail', error: new Error('database "down" does not exist') });
    await clock.advance(20); // a's idle connection is taken for 'down', whose connect fails
    expect(down.error).toMatchObject({
      code: 'CONNECTION_FAILED',
      message: expect.stringContaining('database "down" does not exist'),
    });
    expect(clock.now()).toBeLessThan(60_000); // not its deadline
    expect(g.stats().members.find((m) => m.key === 'down')!.pool).toMatchObject({ waiting: 0, failureStreak: 1 });
    // The place 'down' could not use is anyone's: a still opens a connection.
    const again = track(g.acquire('a'));
    await clock.advance(1);
    expect(again.settled).toBe(true);
    held[0]!.release();
    (again.value as Lease<FakeConnection>).release();
    await g.close();
  });

  it('keeps at most maxMembers: a new key takes the place of the member idle longest, or waits for one while all have callers', async () => {
    const { g, clock, connectors } = group({ maxMembers: 2 });
    await g.use('a', () => 1);
    await clock.advance(10);
    await g.use('b', () => 1);
    await clock.advance(10);
    await g.use('c', () => 1); // a was used longest ago: it goes, its idle connection closes
    await flush();
    expect(
      g
        .stats()
        .members.map((m) => m.key)
        .sort(),
    ).toEqual(['b', 'c']);
    expect(g.stats().forgotten).toBe(1); // a, for c
    expect(connectors.get('a')!.live.size).toBe(0);
    const held = [await g.acquire('b'), await g.acquire('c')];
    const timedOut = track(g.acquire('d', { timeoutMs: 100 }));
    await clock.advance(99);
    expect(timedOut.settled).toBe(false); // waits for a member place
    await clock.advance(1);
    expect(timedOut.error).toMatchObject({ code: 'CAPACITY_EXCEEDED', reason: 'members', limit: 2 });
    expect((timedOut.error as Error).message).toBe(
      'pool "tenants": the group has its 2 members (maxMembers), each with callers for the whole 100 ms this call waited for a place; retry later',
    );
    const d = track(g.acquire('d', { timeoutMs: 100 }));
    const e = track(g.acquire('e', { timeoutMs: 100 }));
    await clock.advance(30);
    held[0]!.release(); // b has no caller now: d, which came first, takes its place at once
    await flush();
    expect([d.settled, e.settled]).toEqual([true, false]);
    expect(
      g
        .stats()
        .members.map((m) => m.key)
        .sort(),
    ).toEqual(['c', 'd']);
    (d.value as Lease<FakeConnection>).release(); // and e takes d's, within what is left of its deadline
    await flush();
    expect(e.settled).toBe(true);
    expect(
      g
        .stats()
        .members.map((m) => m.key)
        .sort(),
    ).toEqual(['c', 'e']);
    (e.value as Lease<FakeConnection>).release();
    held[1]!.release();
    await g.close();
  });

  it('a new key waits for a member place within its deadline, in turn, and not at all past maxWaiting; an abort or a close ends the wait', async () => {
    const { g, clock } = group({ maxMembers: 1, maxWaiting: 1 });
    const a = await g.acquire('a');
    expect(clock.holds).toBe(0);
    const b = track(g.acquire('b', { timeoutMs: 1_000 }));
    expect(clock.holds).toBe(1); // a call waiting for a member place keeps the process alive
    const full = await g.acquire('c').catch((err: unknown) => err);
    expect(full).toMatchObject({ reason: 'members' });
    expect((full as Error).message).toMatch(/and 1 calls already wait for a place \(maxWaiting\)/);
    // A key that has a member does not wait, even while new keys do.
    const again = await g.acquire('a');
    again.release();
    await clock.advance(500);
    a.release();
    await flush();
    expect(b.settled).toBe(true);
    expect(clock.holds).toBe(0);
    const lease = b.value as Lease<FakeConnection>;
    // Its deadline covers the wait and the acquire: 500 ms were left for b's first connect.
    const controller = new AbortController();
    const aborted = track(g.acquire('a', { signal: controller.signal }));
    controller.abort(new Error('gave up'));
    await flush();
    expect((aborted.error as Error).message).toBe('gave up');
    const closing = track(g.acquire('c'));
    const closed = g.close({ graceMs: 0 });
    await flush();
    expect(closing.error).toMatchObject({ code: 'POOL_CLOSED' });
    lease.release();
    await closed;
  });

  it('forgets the places an evicted member was giving up, so later steals are not held back', async () => {
    const clock = new VirtualClock();
    const slowClose = () => closingIn10ms(clock);
    const g = new PoolGroup({
      maxTotal: 2,
      maxMembers: 2,
      clock,
      logger: new RecordingLogger(),
      minHoldMs: 0,
      rebalanceIntervalMs: 10,
      connector: slowClose,
      member: { clientLimit: 1 },
    });
    const first = [await g.acquire('a'), await g.acquire('a')];
    for (const l of first) l.release();
    const b = track(g.acquire('b')); // takes one of a's places: closing for 10 ms
    await flush();
    const c = track(g.acquire('c')); // a, with no caller, is evicted while giving that place up
    await clock.advance(20);
    expect([b.settled, c.settled]).toEqual([true, true]);
    (b.value as Lease<{ id: number }>).release();
    await clock.advance(5);
    const more = track(g.acquire('c')); // c needs b's idle place, once b's recent need has faded
    await clock.advance(200);
    expect(more.settled).toBe(true);
    expect(g.stats().transfers).toBe(2);
    (c.value as Lease<{ id: number }>).release();
    (more.value as Lease<{ id: number }>).release();
    const closing = g.close();
    await clock.advance(20);
    await closing;
  });

  it('sums itself up as stats() does, with only the members most in trouble: waiting, then busiest, then the most recently used', async () => {
    const { g, clock } = group({ maxTotal: 2, maxMembers: 10 });
    const idle = await g.acquire('idle');
    idle.release();
    const busy = await g.acquire('busy');
    await clock.advance(100);
    const queued = track(g.acquire('queued'));
    await flush();
    await clock.advance(1);
    const recent = track(g.acquire('recent'));
    await flush();
    const summary = g.summary(3);
    const stats = g.stats();
    expect(summary).toMatchObject({
      name: 'tenants',
      maxTotal: 2,
      total: stats.total,
      waiting: stats.waiting,
      utilization: stats.utilization,
      health: stats.health,
      forgotten: stats.forgotten,
      memberCount: 4,
    });
    expect(summary.members.map((m) => [m.key, m.waiting, m.clients])).toEqual([
      ['recent', 1, 0], // waits (the budget is spent)
      ['queued', 0, 1], // took the idle member's place at once; as busy as busy, and used since
      ['busy', 0, 1],
    ]);
    expect(summary.hungry).toBe(stats.members.filter((m) => m.hunger === 'hungry' && m.pool.waiting > 0).length);
    const sum = (of: (p: (typeof stats.members)[number]['pool']) => number) =>
      stats.members.reduce((n, m) => n + of(m.pool), 0);
    expect([summary.ready, summary.clients, summary.lastError]).toEqual([
      sum((p) => p.ready),
      sum((p) => p.clients),
      undefined,
    ]);
    expect(g.summary(0).members).toEqual([]);
    expect(g.summary(10).members.map((m) => m.key)).toEqual(['recent', 'queued', 'busy', 'idle']);
    busy.release();
    await clock.advance(200);
    for (const t of [queued, recent]) (t.value as Lease<FakeConnection> | undefined)?.release();
    await g.close();
  });

  it('refuses bad options and keys, saying what to change', async () => {
    const connector = () => new FakeConnector();
    expect(configError(() => new PoolGroup({ connector } as never)).message).toBe(
      'pool group "group": option "maxTotal" is required: the connections all members may have at once',
    );
    expect(configError(() => new PoolGroup({ maxTotal: 0, connector })).message).toBe(
      'pool group "group": option "maxTotal" must be a whole number from 1 to 100,000 (a pool of more connections than one process can open is no bound), got 0',
    );
    expect(configError(() => new PoolGroup({ maxTotal: 2 } as never)).message).toBe(
      'pool group "group": option "connector" is required: a function of the key that makes its connector',
    );
    expect(configError(() => new PoolGroup({ maxTotal: 2, connector, minHoldMs: -1 })).message).toBe(
      'pool group "group": option "minHoldMs" must be a finite number of 0 or more, got -1',
    );
    expect(configError(() => new PoolGroup({ maxTotal: 2, connector, maxMembers: 0.5 })).message).toBe(
      'pool group "group": option "maxMembers" must be a whole number of 1 or more, or Infinity, got 0.5',
    );
    expect(configError(() => new PoolGroup({ maxTotal: 2, connector, member: { clientLimit: 0 } })).message).toContain(
      'option "clientLimit" must be a whole number from 1 to 1,000,000',
    );
    const { g } = group();
    await expect(g.use('', () => 1)).rejects.toThrow(
      'pool group "tenants": option "key" must be a non-empty string naming the member (a tenant, a database), got an empty string',
    );
    await g.close();
    await expect(g.use('a', () => 1)).rejects.toMatchObject({ code: 'POOL_CLOSED' });
  });
});

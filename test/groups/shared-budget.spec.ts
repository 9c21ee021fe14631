// The engine's side of a pool group: member pools that share one budget of connections. A
// connection counts from its create until its close has finished, so the pools together never
// have more open than the budget, whatever fails; a member the budget blocks says so, and a
// member gives up its oldest idle connection only once held for the minimum hold time.
import { describe, expect, it } from '@jest/globals';
import { ConnectionPool, type Lease } from '../../lib/index.js';
import {
  kBudget,
  kMember,
  type BudgetMember,
  type ConnectionBudget,
} from '../../lib/core/contracts/connection-budget.js';
import { FakeConnector, type FakeConnection } from '../support/fake-connector.js';
import { track, RecordingLogger } from '../support/harness.js';
import { flush, VirtualClock } from '../support/virtual-clock.js';

/** The simplest budget: room while under `max`; a freed connection wakes the longest-starved member. */
class TestBudget implements ConnectionBudget {
  total = 0;
  peak = 0;
  readonly starvedQueue: BudgetMember[] = [];
  constructor(readonly max: number) {}
  mayOpen(): boolean {
    return this.total < this.max;
  }
  began(): void {
    this.peak = Math.max(this.peak, ++this.total);
  }
  connected(): void {}
  ended(): void {
    this.total--;
    this.starvedQueue.shift()?.demand();
  }
  starved(member: BudgetMember): void {
    if (!this.starvedQueue.includes(member)) this.starvedQueue.push(member);
  }
  yields(): boolean {
    return false;
  }
  quiet(): void {}
}

function members(max: number, options = {}) {
  const clock = new VirtualClock();
  const budget = new TestBudget(max);
  const make = (name: string) => {
    const connector = new FakeConnector();
    // growAt 1: no connection opens ahead of demand, so the counts below are exact.
    const settings = {
      name,
      clock,
      logger: new RecordingLogger(),
      lifetimeJitter: 0,
      clientLimit: 1,
      maxSize: 10,
      growAt: 1,
      ...options,
      [kBudget]: budget,
    };
    const pool = new ConnectionPool(connector, settings);
    return { pool, connector };
  };
  const a = make('a');
  const b = make('b');
  /** Connections open on the (fake) server right now, both members together. */
  const live = () => a.connector.live.size + b.connector.live.size;
  return { clock, budget, a, b, live };
}

describe('member pools sharing a budget', () => {
  it('never have more connections than the budget; a blocked member waits and says so', async () => {
    const { budget, a, b, live } = members(3);
    const held: Lease<FakeConnection>[] = [];
    for (let i = 0; i < 3; i++) held.push(await a.pool.acquire());
    const waiting = track(b.pool.acquire({ timeoutMs: 10_000 }));
    await flush();
    expect([waiting.settled, live(), budget.total, budget.starvedQueue.length]).toEqual([false, 3, 3, 1]);
    // A release alone frees no budget: the connection is still open, idle in a.
    held.pop()!.release();
    await flush();
    expect([waiting.settled, live()]).toEqual([false, 3]);
    // a gives up its oldest idle connection: once it has closed, b opens one and is served.
    expect(a.pool[kMember]().retireOldestIdle(0)).toBe(true);
    await flush();
    expect(waiting.settled).toBe(true);
    expect([live(), budget.total, budget.peak]).toEqual([3, 3, 3]);
    (waiting.value as Lease<FakeConnection>).release();
    for (const lease of held) lease.release();
    await Promise.all([a.pool.close(), b.pool.close()]);
    expect([live(), budget.total]).toEqual([0, 0]);
  });

  it('count a retired connection until its last client leaves and its close finishes', async () => {
    const { budget, a } = members(2);
    const lease = await a.pool.acquire();
    lease.connection.ctx.retire('server going away');
    await flush();
    expect(budget.total).toBe(1); // draining, still open on the server
    lease.release();
    await flush();
    expect(budget.total).toBe(0);
    await a.pool.close();
  });

  it('give the budget back when a create fails, and when one arrives after the pool closed', async () => {
    const { budget, a } = members(2);
    a.connector.createSteps.push({ kind: 'hold' });
    const late = track(a.pool.acquire({ timeoutMs: 1_000 }));
    await flush();
    expect(budget.total).toBe(1);
    const closing = a.pool.close({ graceMs: 0 });
    a.connector.releaseCreate(); // arrives after the close: closed at once
    await closing;
    await flush();
    expect([late.settled, budget.total, a.connector.live.size]).toEqual([true, 0, 0]);

    const { budget: other, b, clock } = members(2);
    b.connector.createSteps.push({ kind: 'fail' });
    const failed = track(b.pool.acquire({ timeoutMs: 5 }));
    await flush();
    expect(other.total).toBe(0); // given back as soon as the create failed, while the caller still waits
    await clock.advance(5);
    expect(failed.error).toMatchObject({ code: 'CONNECTIONS_EXHAUSTED', reason: 'creates-failing' });
    expect(other.total).toBe(0);
    await b.pool.close();
  });

  it('give up only idle connections held for the minimum hold time, the oldest first', async () => {
    const { clock, a } = members(5);
    const first = await a.pool.acquire();
    await clock.advance(100);
    const second = await a.pool.acquire();
    const member = a.pool[kMember]();
    expect(member.load(50)).toEqual({ connections: 2, opening: 0, inUse: 2, stealable: 0, oldestMs: 100 });
    first.release();
    second.release();
    expect(member.load(50)).toMatchObject({ inUse: 0, stealable: 1 });
    expect(member.retireOldestIdle(50)).toBe(true); // the first, 100 ms old
    expect(member.retireOldestIdle(50)).toBe(false); // the second is too young
    await flush();
    expect(a.connector.liveIds()).toEqual([2]);
    await clock.advance(50);
    expect(member.retireOldestIdle(50)).toBe(true);
    await a.pool.close();
  });

  it('rotate a connection past its lifetime only when the budget has room for the replacement', async () => {
    const { clock, budget, a, b } = members(2, { maxLifetimeMs: 1_000, reapIntervalMs: 100 });
    // In use past its lifetime, so it is rotated (an idle one the pool does not need is let go).
    const lease = await a.pool.acquire();
    const other = await b.pool.acquire();
    await clock.advance(1_200);
    expect([a.connector.created, budget.peak]).toEqual([1, 2]); // no replacement: the budget is full
    other.release();
    expect(b.pool[kMember]().retireOldestIdle(0)).toBe(true);
    await flush();
    await clock.advance(200);
    expect(a.connector.created).toBe(2); // rotated once there was room
    expect(budget.peak).toBe(2);
    lease.release();
    await Promise.all([a.pool.close(), b.pool.close()]);
    expect(budget.total).toBe(0);
  });
});

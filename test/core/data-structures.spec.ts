// The engine's data structures on their own, against plain models (as HikariCP tests its
// ConcurrentBag): the connection index with its bitmap buckets, the waiter queue, the connection
// set and its counts, the backoff, the deferral to the end of a turn.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { getEventListeners } from 'node:events';
import { hookAbort, unhookAbort } from '../../lib/core/common/abort-hooks.js';
import { backoffMs } from '../../lib/core/common/clock.js';
import { systemClock, Timers, turnQueue, type Clock, type TimerHandle } from '../../lib/core/common/clock.js';
import { TurnClock as LeaseDates, TURN_READS, turnDates as eventDates } from '../../lib/core/common/turn-clock.js';
import { ConnectionIndex } from '../../lib/core/connections/connection-index.js';
import { ConnectionSet } from '../../lib/core/connections/connection-set.js';
import { CreateBackoff } from '../../lib/core/connections/create-backoff.js';
import { ConnectionFailedError } from '../../lib/core/common/errors.js';
import { resolveOptions, type PoolOptions } from '../../lib/core/options/pool-options.js';
import { SharedConnection } from '../../lib/core/connections/shared-connection.js';
import { WaiterDeadlines } from '../../lib/core/waiting/waiter-deadlines.js';
import { Stamp, Waiter, WaiterQueue } from '../../lib/core/waiting/waiter-queue.js';
import { VirtualClock } from '../support/virtual-clock.js';

type Op =
  | { kind: 'add'; clients: number; limit: number }
  | { kind: 'remove'; at: number }
  | { kind: 'update'; at: number; clients: number };

const ops = (clientLimit: number) =>
  fc.array(
    fc.oneof(
      fc.record({
        kind: fc.constant('add' as const),
        clients: fc.nat(clientLimit),
        limit: fc.integer({ min: 1, max: clientLimit }),
      }),
      fc.record({ kind: fc.constant('remove' as const), at: fc.nat() }),
      fc.record({ kind: fc.constant('update' as const), at: fc.nat(), clients: fc.nat(clientLimit) }),
    ),
    { maxLength: 200 },
  );

describe('ConnectionIndex', () => {
  // Client limits around the 32-bit word edges of the bitmap.
  it.each([1, 2, 31, 32, 33, 64, 65, 100])(
    'picks like the model at clientLimit %i, for spread and pack',
    (clientLimit) => {
      fc.assert(
        fc.property(ops(clientLimit), fc.constantFrom('spread' as const, 'pack' as const), (script: Op[], strategy) => {
          const index = new ConnectionIndex<number>(clientLimit, strategy);
          // The model: every connection with room, most recently filed last.
          let model: SharedConnection<number>[] = [];
          const all: SharedConnection<number>[] = [];
          let id = 0;
          const file = (c: SharedConnection<number>) => {
            model = model.filter((m) => m !== c);
            if (c.clients < c.limit) model.push(c);
          };
          for (const op of script) {
            if (op.kind === 'add') {
              const c = new SharedConnection<number>(id++, op.limit);
              c.clients = Math.min(op.clients, op.limit);
              all.push(c);
              index.add(c);
              file(c);
            } else if (all.length > 0) {
              const c = all[op.at % all.length]!;
              if (op.kind === 'remove') {
                index.remove(c);
                model = model.filter((m) => m !== c);
              } else {
                c.clients = Math.min(op.clients, c.limit);
                index.update(c);
                file(c);
              }
            }
            expect(index.size).toBe(model.length);
            const best = model.reduce<SharedConnection<number> | null>((b, c) => {
              if (b === null) return c;
              const better = strategy === 'spread' ? c.clients <= b.clients : c.clients >= b.clients; // later = more recent wins ties
              return better ? c : b;
            }, null);
            expect(index.pick()).toBe(best);
          }
        }),
        { numRuns: 200 },
      );
    },
  );

  it('leaves a full connection out, and removing one not in the index does nothing', () => {
    const index = new ConnectionIndex<number>(4, 'spread');
    const full = new SharedConnection<number>(1, 2);
    full.clients = 2;
    index.add(full);
    expect(index.size).toBe(0);
    expect(index.pick()).toBeNull();
    index.remove(full);
    expect(index.size).toBe(0);
  });
});

describe('WaiterQueue', () => {
  it('keeps FIFO order through pushes, shifts and removals anywhere, like an array', () => {
    fc.assert(
      // Pushes weigh more, so long queues with many removed waiters (the ring's compaction) occur.
      fc.property(
        fc.array(
          fc.oneof(
            fc.constant('push' as const),
            fc.constant('push' as const),
            fc.constant('shift' as const),
            fc.nat({ max: 1000 }),
          ),
          { maxLength: 600 },
        ),
        (script) => {
          const queue = new WaiterQueue<number>();
          const model: Waiter<number>[] = [];
          const made: Waiter<number>[] = [];
          for (const op of script) {
            if (op === 'push') {
              const w = new Waiter<number>(0);
              made.push(w);
              queue.push(w);
              model.push(w);
            } else if (op === 'shift') {
              const w = queue.shift();
              expect(w).toBe(model.shift() ?? null);
              if (w !== null) expect(w.queued).toBe(false);
            } else if (made.length > 0) {
              const w = made[op % made.length]!;
              queue.remove(w); // a second removal is a no-op
              const at = model.indexOf(w);
              if (at >= 0) model.splice(at, 1);
              expect(w.queued).toBe(false);
            }
            expect(queue.length).toBe(model.length);
            expect(queue.head).toBe(model[0] ?? null);
          }
          expect(queue.toArray()).toEqual(model);
          // Read in order until told to stop, and no further.
          const read: Waiter<number>[] = [];
          queue.eachUntil((w) => read.push(w) < 3);
          expect(read).toEqual(model.slice(0, 3));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('reads in order from the first waiter still queued: served ones in front are passed over once, not on every read', () => {
    const queue = new WaiterQueue<number>();
    const all = Array.from({ length: 30 }, () => new Waiter<number>(0));
    for (const w of all) queue.push(w);
    for (const w of all.slice(0, 20)) queue.remove(w); // served from the front, as a limiter's waiters are
    expect(queue.slotsInUse).toBe(30);
    const read: Waiter<number>[] = [];
    queue.eachUntil((w) => read.push(w) < 1);
    expect(read).toEqual([all[20]]);
    expect(queue.slotsInUse).toBe(10);
  });

  it('keeps no slots for callers that gave up behind a head that never leaves', () => {
    const queue = new WaiterQueue<number>();
    const stuck = new Waiter<number>(0);
    queue.push(stuck);
    for (let i = 0; i < 100_000; i++) {
      const w = new Waiter<number>(0);
      queue.push(w);
      if (i % 10 !== 0) queue.remove(w); // nine in ten time out or abort; the rest wait on
    }
    expect(queue.length).toBe(10_001);
    expect(queue.slotsInUse).toBeLessThanOrEqual(2 * queue.length + 33); // compacted: marked slots never outnumber waiting ones by much
    expect(queue.head).toBe(stuck);
    const order = queue.toArray();
    expect(order).toHaveLength(10_001);
    for (let i = 0; i < 10_000; i++) queue.remove(order[1 + i]!);
    expect(queue.slotsInUse).toBeLessThanOrEqual(34);
    expect(queue.shift()).toBe(stuck);
    expect(queue.length).toBe(0);
    expect(queue.slotsInUse).toBe(0);
  });
});

describe('Waiter', () => {
  it('settles its own promise, once, and each waiter its own', async () => {
    const a = new Waiter<string>(0);
    const b = new Waiter<string>(0);
    const pa = a.promise();
    const pb = b.promise();
    b.fail(new Error('b failed'));
    a.resolve('a');
    a.resolve('too late');
    await expect(pa).resolves.toBe('a');
    await expect(pb).rejects.toThrow('b failed');
  });

  it('keeps only its resolving function, and a failure gives the admission back before the caller hears of it', async () => {
    const w = new Waiter<string>(0);
    const p = w.promise();
    expect(Object.keys(w)).not.toContain('reject');
    const order: string[] = [];
    w.admission = { id: 'a', release: () => order.push('released') } as unknown as NonNullable<
      Waiter<string>['admission']
    >;
    w.fail(new Error('timed out'));
    expect(w.admission).toBeUndefined();
    await p.catch((err: unknown) => order.push((err as Error).message));
    expect(order).toEqual(['released', 'timed out']);
  });

  it('a failure of a waiter already settled changes nothing and leaves no unhandled rejection', async () => {
    const served = new Waiter<string>(0);
    const failed = new Waiter<string>(0);
    const ps = served.promise();
    const pf = failed.promise();
    served.resolve('lease');
    served.fail(new Error('too late'));
    failed.fail(new Error('first'));
    failed.fail(new Error('second'));
    await expect(ps).resolves.toBe('lease');
    await expect(pf).rejects.toThrow('first');
    // An unhandled rejection would surface here, within a turn (the setup fails the test on one).
    await new Promise((resolve) => setImmediate(resolve));
  });

  it('has no deadline until its batch is dated, then the date plus its timeout', () => {
    const w = new Waiter<number>(250);
    expect(w.deadline).toBe(Infinity);
    const batch = (w.stamp = new Stamp());
    expect([w.deadline, w.since]).toEqual([Infinity, undefined]); // queued, its batch not dated yet
    batch.at = 1_000;
    expect([w.deadline, w.since]).toEqual([1_250, 1_000]);
    expect(Object.assign(new Waiter<number>(Infinity), { stamp: Object.assign(new Stamp(), { at: 5 }) }).deadline).toBe(
      Infinity,
    );
  });
});

/** A clock whose time the test sets and whose turn ends when the test says: `defer` runs then. */
class TurnClock implements Clock {
  t = 0;
  readonly timers = new Map<number, { at: number; fn: () => void }>();
  readonly deferred: (() => void)[] = [];
  #id = 0;
  now(): number {
    return this.t;
  }
  setTimeout(fn: () => void, ms: number): TimerHandle {
    this.timers.set(++this.#id, { at: this.t + ms, fn });
    return this.#id;
  }
  clearTimeout(handle: TimerHandle): void {
    this.timers.delete(handle as number);
  }
  defer(fn: () => void): void {
    this.deferred.push(fn);
  }
  endTurn(): void {
    for (const fn of this.deferred.splice(0)) fn();
  }
  /** Moves to `t`, firing the timers due by then in order. */
  runTo(t: number): void {
    for (;;) {
      const due = [...this.timers].filter(([, timer]) => timer.at <= t).sort(([, a], [, b]) => a.at - b.at)[0];
      if (due === undefined) break;
      this.timers.delete(due[0]);
      this.t = due[1].at;
      due[1].fn();
    }
    this.t = t;
  }
}

describe('WaiterDeadlines', () => {
  function deadlines() {
    const clock = new TurnClock();
    const queue = new WaiterQueue<number>();
    const expired: [number, Waiter<number>[]][] = [];
    const d = new WaiterDeadlines(new Timers(clock), queue, (due) => {
      expired.push([clock.t, due]);
      for (const w of due) queue.remove(w);
    });
    const join = (timeoutMs: number) => {
      const w = new Waiter<number>(timeoutMs);
      queue.push(w);
      d.queued(w);
      return w;
    };
    return { clock, queue, d, expired, join };
  }

  it('dates a batch when it fills or when its turn ends, whichever is first, and times each waiter out from its date, never early', () => {
    const { clock, expired, join } = deadlines();
    const first = Array.from({ length: 255 }, () => join(100));
    expect(first[0]!.since).toBeUndefined();
    clock.t = 10;
    first.push(join(100)); // the 256th: the batch is full and dated now, in the middle of the turn
    expect(new Set(first.map((w) => w.since))).toEqual(new Set([10]));
    const second = [join(50), join(200)];
    expect(second.map((w) => w.since)).toEqual([undefined, undefined]);
    clock.t = 30;
    clock.endTurn(); // the second batch is dated with its turn; the first one's deferred dating finds it dated already
    expect(second.map((w) => w.deadline)).toEqual([80, 230]);
    expect(first.every((w) => w.deadline === 110)).toBe(true);
    clock.runTo(79);
    expect(expired).toEqual([]);
    clock.runTo(80);
    expect(expired).toEqual([[80, [second[0]]]]);
    clock.runTo(110);
    expect(expired[1]).toEqual([110, first]);
    clock.runTo(1_000);
    expect(expired.map(([at]) => at)).toEqual([80, 110, 230]);
    expect(clock.timers.size).toBe(0);
  });

  it('a waiter with the shortest timeout that was served leaves no one timed out early, and the rest on time', () => {
    const { clock, queue, expired, join } = deadlines();
    const quick = join(5);
    const slow = join(40);
    clock.endTurn();
    queue.remove(quick); // served before its deadline
    clock.runTo(5);
    expect(expired).toEqual([]); // the sweep at the batch's earliest deadline found no one due
    clock.runTo(39);
    expect(expired).toEqual([]);
    clock.runTo(40);
    expect(expired).toEqual([[40, [slow]]]);
  });

  it('stopped, it dates nothing more and leaves no timer, even with a dating still pending for the turn', () => {
    const { clock, d, expired, join } = deadlines();
    join(10);
    d.stop();
    clock.endTurn();
    clock.runTo(1_000);
    expect(expired).toEqual([]);
    expect(clock.timers.size).toBe(0);
  });

  it('on a clock without defer, dates with a zero timer, one per batch, each cleared by stop()', () => {
    const clock = new TurnClock();
    const plain: Clock = {
      now: () => clock.now(),
      setTimeout: (fn, ms) => clock.setTimeout(fn, ms),
      clearTimeout: (h) => clock.clearTimeout(h),
    };
    const queue = new WaiterQueue<number>();
    const d = new WaiterDeadlines(new Timers(plain), queue, () => {});
    for (let i = 0; i < 300; i++) {
      const w = new Waiter<number>(1_000);
      queue.push(w);
      d.queued(w);
    }
    expect(clock.timers.size).toBe(3); // the first batch's dating, the deadline timer it armed when it filled, the second batch's dating
    d.stop();
    expect(clock.timers.size).toBe(0);
  });
});

describe('TurnClock (dates shared within a turn)', () => {
  function turnDates() {
    const clock = new TurnClock();
    let reads = 0;
    const counted: Clock = {
      now: () => (reads++, clock.t),
      setTimeout: (fn, ms) => clock.setTimeout(fn, ms),
      clearTimeout: (handle) => clock.clearTimeout(handle),
      defer: (fn) => clock.defer(fn),
    };
    return { clock, dates: new LeaseDates(new Timers(counted)), reads: () => reads };
  }

  it('reads the clock once for the dates of a turn, and again in the next', () => {
    const { clock, dates, reads } = turnDates();
    clock.t = 5;
    expect(dates.now()).toBe(5);
    clock.t = 7; // time passes within the turn: its dates stay the turn's
    expect([dates.now(), dates.now()]).toEqual([5, 5]);
    expect(reads()).toBe(1);
    expect(clock.deferred).toHaveLength(1); // one end of turn asked for, not one per date
    clock.endTurn();
    expect(dates.now()).toBe(7);
    expect(reads()).toBe(2);
  });

  it(`reads again after ${TURN_READS} dates in one long turn, without asking for another end of turn`, () => {
    const { clock, dates, reads } = turnDates();
    const seen: number[] = [];
    for (let i = 0; i < TURN_READS * 3; i++) {
      clock.t = i;
      seen.push(dates.now());
    }
    expect(reads()).toBe(3);
    expect(clock.deferred).toHaveLength(1);
    expect(seen.slice(TURN_READS - 1, TURN_READS + 1)).toEqual([0, TURN_READS]);
    // Never late, early by less than TURN_READS dates, never backwards.
    seen.forEach((d, i) => {
      expect(d).toBeLessThanOrEqual(i);
      expect(i - d).toBeLessThan(TURN_READS);
      if (i > 0) expect(d).toBeGreaterThanOrEqual(seen[i - 1]!);
    });
  });

  it('tells a span from the date of its last read as no time while the turn lasts, without a read, and reads for any other', () => {
    const { clock, dates, reads } = turnDates();
    expect(dates.elapsed(0)).toBe(0);
    expect(reads()).toBe(1); // nothing read yet: no date is the turn's, so a span takes a read
    clock.endTurn();
    clock.t = 5;
    dates.now();
    clock.t = 9;
    expect(dates.elapsed(5)).toBe(0); // the turn's read: no time at the turn's resolution
    expect(dates.elapsed(2)).toBe(3); // another date: up to the turn's
    expect(reads()).toBe(2); // asking read nothing more
    clock.endTurn();
    expect(dates.elapsed(5)).toBe(4); // the turn ended: its date is no longer now
    expect(reads()).toBe(3);
    expect(dates.elapsed(9)).toBe(0);
    // A clock without turns dates every event by a read of its own: no date is known to be now.
    const plain = new VirtualClock();
    const every = eventDates(new Timers(plain));
    const at = every.now();
    plain.advanceNow(7);
    expect(every.elapsed(at)).toBe(7);
  });

  it('on a clock without defer, ends the turn with a timer of its own', () => {
    const clock = new VirtualClock();
    const dates = new LeaseDates(new Timers(clock));
    expect(dates.now()).toBe(0);
    expect(clock.pending).toBe(1);
  });
});

describe('turnQueue', () => {
  /** A defer whose scheduled runs the test makes, one at a time. */
  function manual() {
    const runs: (() => void)[] = [];
    const defer = turnQueue((run) => runs.push(run));
    return { runs, defer };
  }

  it('runs every callback deferred before its run in one run, in order; one deferred during the run goes to the next', () => {
    const { runs, defer } = manual();
    const seen: string[] = [];
    defer(() => seen.push('a'));
    defer(() => {
      seen.push('b');
      defer(() => seen.push('d'));
    });
    defer(() => seen.push('c'));
    expect(runs).toHaveLength(1);
    runs.shift()!();
    expect(seen).toEqual(['a', 'b', 'c']);
    expect(runs).toHaveLength(1);
    runs.shift()!();
    expect(seen).toEqual(['a', 'b', 'c', 'd']);
    expect(runs).toHaveLength(0);
  });

  it('a callback that throws fails its run; the ones after it run in the next, ahead of those deferred since', () => {
    const { runs, defer } = manual();
    const seen: string[] = [];
    defer(() => seen.push('a'));
    defer(() => {
      throw new Error('bug');
    });
    defer(() => seen.push('c'));
    defer(() => seen.push('d'));
    expect(() => runs.shift()!()).toThrow('bug');
    expect(seen).toEqual(['a']);
    defer(() => seen.push('e'));
    expect(runs).toHaveLength(1); // the rest's run, which takes e too
    runs.shift()!();
    expect(seen).toEqual(['a', 'c', 'd', 'e']);
    expect(runs).toHaveLength(0);
  });

  it('on the system clock, runs the callbacks of a turn in the first immediate, before an immediate set between them', async () => {
    const seen: string[] = [];
    systemClock.defer!(() => seen.push('a'));
    setImmediate(() => seen.push('immediate'));
    systemClock.defer!(() => seen.push('b'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen).toEqual(['a', 'b', 'immediate']);
  });
});

describe('ConnectionSet', () => {
  type SetOp =
    | { kind: 'begin'; rotate: number | null }
    | { kind: 'opened' | 'drop' | 'retire' | 'validate' | 'validated'; at: number }
    | { kind: 'limit'; at: number; limit: number }
    | { kind: 'clients'; at: number; clients: number };
  const setOps = fc.array(
    fc.oneof(
      fc.record({ kind: fc.constant('begin' as const), rotate: fc.option(fc.nat(), { nil: null }) }),
      fc.record({
        kind: fc.constantFrom(
          'opened' as const,
          'drop' as const,
          'retire' as const,
          'validate' as const,
          'validated' as const,
        ),
        at: fc.nat(),
      }),
      fc.record({ kind: fc.constant('limit' as const), at: fc.nat(), limit: fc.integer({ min: 1, max: 8 }) }),
      fc.record({ kind: fc.constant('clients' as const), at: fc.nat(), clients: fc.nat(8) }),
    ),
    { maxLength: 150 },
  );

  it('keeps its counts equal to a recount of its connections through any sequence of changes', () => {
    fc.assert(
      fc.property(setOps, (script: SetOp[]) => {
        const set = new ConnectionSet<number>(8, 'spread', new Timers(new VirtualClock()));
        const pickFrom = (at: number) => {
          const all = [...set.all];
          return all.length === 0 ? undefined : all[at % all.length]!;
        };
        for (const op of script) {
          if (op.kind === 'begin') {
            const old = op.rotate === null ? undefined : pickFrom(op.rotate);
            // Only a ready connection not already rotating is rotated, as the house-keeper does.
            set.begin(old !== undefined && old.state === 'ready' && !old.rotating && !old.validating ? old : null);
            continue;
          }
          const conn = pickFrom(op.at);
          if (conn === undefined) continue;
          const opening = conn.state === 'opening';
          const idleReady = conn.state === 'ready' && conn.clients === 0;
          if (op.kind === 'opened' && opening) {
            const old = set.opened(conn, 10, 1_000);
            if (old !== null) set.retire(old);
          } else if (op.kind === 'drop' && opening) set.dropOpening(conn);
          else if (op.kind === 'retire') set.retire(conn);
          else if (op.kind === 'validate' && idleReady && !conn.validating) set.startValidation(conn);
          else if (op.kind === 'validated' && conn.validating) set.endValidation(conn, 20);
          else if (op.kind === 'limit') set.setLimit(conn, op.limit);
          else if (op.kind === 'clients' && conn.state === 'ready' && !conn.validating) {
            // Checkout and checkin move clients and refile the connection, as the pool does.
            const clients = Math.min(op.clients, conn.limit);
            set.clients += clients - conn.clients;
            conn.clients = clients;
            set.index.update(conn);
          }
        }
        const all = [...set.all];
        const ready = all.filter((c) => c.state === 'ready');
        expect(set.opening).toBe(all.filter((c) => c.state === 'opening').length);
        expect(set.ready).toBe(ready.length);
        expect(set.capacity).toBe(ready.reduce((sum, c) => sum + c.limit, 0));
        expect(set.validating).toBe(all.filter((c) => c.validating).length);
        expect(set.rotations).toBe(ready.filter((c) => c.rotating).length);
        expect(set.size).toBe(set.opening + set.ready - set.rotations);
        expect(set.clients).toBe(all.reduce((sum, c) => sum + c.clients, 0));
        // The index holds exactly the ready connections with room that are not being validated.
        expect(set.index.size).toBe(ready.filter((c) => !c.validating && c.clients < c.limit).length);
      }),
      { numRuns: 300 },
    );
  });

  it('gives the connection a replacement rotates out once the replacement is ready, and keeps it when the replacement fails', () => {
    const set = new ConnectionSet<number>(4, 'spread', new Timers(new VirtualClock()));
    const old = set.begin(null);
    expect(set.opened(old, 0, 100)).toBeNull();
    const first = set.begin(old);
    expect(old.rotating).toBe(true);
    expect(set.size).toBe(1); // the replacement does not count against maxSize
    set.dropOpening(first);
    expect(old.rotating).toBe(false);
    expect(set.size).toBe(1);
    const second = set.begin(old);
    expect(set.opened(second, 5, 105)).toBe(old);
    expect(set.retire(old)).toBe(true);
    expect(set.retire(old)).toBe(false); // already draining: nothing changes
    expect([set.ready, set.rotations, set.size]).toEqual([1, 0, 1]);
  });
});

describe('CreateBackoff', () => {
  const backoffOn = (clock: VirtualClock, retry: () => void, more: PoolOptions = {}) =>
    new CreateBackoff(
      new Timers(clock),
      resolveOptions(
        { name: 'b', createBackoffMs: 100, maxCreateBackoffMs: 400, breakerFailures: 3, breakerAfterMs: 500, ...more },
        { create: async () => 1 },
      ),
      retry,
    );
  const failure = (detail: string) => new ConnectionFailedError('b', detail);

  it('holds creates back for the growing delay, retries once per backoff, and ends with a success', async () => {
    const clock = new VirtualClock();
    let retries = 0;
    const backoff = backoffOn(clock, () => retries++);
    expect(backoff.active()).toBe(false);
    expect(backoff.failed(failure('refused'), 0).delay).toBe(100);
    expect(backoff.active()).toBe(true);
    expect(backoff.active()).toBe(true); // asking again sets no second timer
    await clock.advance(99);
    expect(retries).toBe(0);
    await clock.advance(1);
    expect(retries).toBe(1);
    expect(backoff.active()).toBe(false);
    expect([1, 2, 3].map(() => backoff.failed(failure('refused'), clock.now()).delay)).toEqual([200, 400, 400]);
    expect(backoff.streak).toBe(4);
    backoff.succeeded();
    expect([backoff.streak, backoff.active()]).toEqual([0, false]);
  });

  it('opens the breaker only when both the failures in a row and the time since the first are reached', async () => {
    const clock = new VirtualClock();
    const backoff = backoffOn(clock, () => {});
    // Three failures within 200 ms: enough failures, too little time.
    for (let i = 0; i < 3; i++) {
      expect(backoff.failed(failure('refused'), clock.now()).opened).toBe(false);
      await clock.advance(100);
    }
    expect(backoff.state(0)).toBe('closed');
    expect(backoff.blocks(true, 0)).toBe(false);
    await clock.advance(200); // 500 ms since the first failed create started
    expect(backoff.failed(failure('ECONNREFUSED'), clock.now()).opened).toBe(true);
    expect(backoff.failed(failure('ECONNREFUSED'), clock.now()).opened).toBe(false); // opens once
    expect(backoff.state(0)).toBe('open');
    expect(backoff.state(1)).toBe('half-open');
    expect(backoff.succeeded()).toBe(true);
    expect([backoff.state(0), backoff.streak]).toEqual(['closed', 0]);
    // A long create that failed counts its whole time: one failure after 600 ms meets the time, not the count.
    expect(backoff.failed(failure('timeout'), clock.now() - 600).opened).toBe(false);
  });

  it('once open, blocks callers only while nothing is ready and no probe may start for them, naming the last failure', async () => {
    const clock = new VirtualClock();
    const backoff = backoffOn(clock, () => {}, { breakerFailures: 1, breakerAfterMs: 0 });
    expect(backoff.blocks(true, 0)).toBe(false); // no failure yet
    backoff.failed(failure('ECONNREFUSED'), 0);
    expect(backoff.blocks(false, 0)).toBe(false); // a connection can still serve
    expect(backoff.blocks(true, 0)).toBe(true);
    expect(backoff.mayStart(0)).toBe(false);
    await clock.advance(30);
    const err = backoff.failFast(0);
    expect(err.message).toContain('ECONNREFUSED');
    expect(err.message).toContain('the next probe in 70 ms');
    expect(err.cause).toBe(backoff.lastFailure);
    await clock.advance(70);
    // Past the backoff the next caller may start a probe; while it runs, others fail fast.
    expect(backoff.blocks(true, 0)).toBe(false);
    expect(backoff.mayStart(0)).toBe(true);
    expect(backoff.mayStart(1)).toBe(false);
    expect(backoff.blocks(true, 1)).toBe(true);
    expect(backoff.failFast(1).message).toContain('a probe is under way');
    const off = backoffOn(clock, () => {}, { blockingPeriod: false, breakerFailures: 1, breakerAfterMs: 0 });
    off.failed(failure('x'), 0);
    expect([off.blocks(true, 0), off.state(0)]).toEqual([false, 'closed']);
  });

  it('stops: a backoff timer set before stop() never calls retry', async () => {
    const clock = new VirtualClock();
    let retries = 0;
    const backoff = backoffOn(clock, () => retries++);
    backoff.failed(failure('x'), 0);
    expect(backoff.active()).toBe(true);
    backoff.stop();
    await clock.advance(1_000);
    expect([retries, clock.pending]).toEqual([0, 0]);
  });
});

describe('backoffMs', () => {
  it('starts at the first delay, doubles per failure, and stops at the most', () => {
    expect([1, 2, 3, 4, 5].map((n) => backoffMs(n, 10, 100))).toEqual([10, 20, 40, 80, 100]);
    expect(backoffMs(0, 10, 100)).toBe(10);
    expect(backoffMs(10_000, 10, 5_000)).toBe(5_000); // 2 ** 9999 is Infinity: still the most
    // The Redis limiter's reconnects: 100, 200, 400, 800, 1000 ms.
    expect([1, 2, 3, 4, 5].map((n) => backoffMs(n, 100, 1_000))).toEqual([100, 200, 400, 800, 1_000]);
  });
});

describe('hookAbort', () => {
  it('holds one listener per signal, tells each hook still on it once, in the order hooked, with the reason; none unhooked', () => {
    const controller = new AbortController();
    const told: [number, unknown][] = [];
    const hooks = Array.from({ length: 1_000 }, (_, i) => ({ aborted: (reason: unknown) => told.push([i, reason]) }));
    for (const hook of hooks) hookAbort(controller.signal, hook);
    hookAbort(controller.signal, hooks[0]!); // the same wait twice: told once
    expect(getEventListeners(controller.signal, 'abort').length).toBe(1);
    hooks.forEach((hook, i) => i % 2 === 1 && unhookAbort(controller.signal, hook));
    const reason = new Error('closing');
    controller.abort(reason);
    controller.abort();
    expect(told).toEqual(Array.from({ length: 500 }, (_, i) => [i * 2, reason]));
    // A signal that aborted holds no hooks: a new one is for its own wait (which checks `aborted` first).
    const late: unknown[] = [];
    hookAbort(controller.signal, { aborted: (r) => late.push(r) });
    unhookAbort(controller.signal, hooks[0]!); // off a signal with no hooks left: nothing to do
    expect(late).toEqual([]);
  });
});

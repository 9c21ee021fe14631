// Priority classes (`limits.classes`): a partitioned limit. Under contention each class keeps its
// guaranteed share of the global limit, a class takes what the others leave idle, the higher
// class is served first from the queue, and aging bounds how long a lower class waits. Each case
// runs on virtual time through the limiter's own admit().
import { describe, expect, it } from '@jest/globals';
import {
  AdaptiveLimiter,
  type Admission,
  ConnectionPool,
  type LimitOptions,
  LocalLimiter,
  PoolConfigError,
} from '../../lib/index.js';
import { FakeConnector } from '../support/fake-connector.js';
import { heldAdmission, type Outcome } from '../support/held-admissions.js';
import { flush, VirtualClock } from '../support/virtual-clock.js';

interface Arrivals {
  /** The class asked for; undefined: none named (the default class). */
  readonly cls: string | undefined;
  /** One caller every `everyMs`. */
  readonly everyMs: number;
  readonly timeoutMs: number;
}

/** Callers of several classes arriving together for `untilMs` at a limiter of `global` slots, each held `holdMs`. */
async function contention(
  options: LimitOptions,
  arrivals: readonly Arrivals[],
  { global = 10, holdMs = 20, untilMs = 6_000 } = {},
) {
  const clock = new VirtualClock();
  const limiter = new LocalLimiter({ global, ...options, clock });
  const outcomes = new Map<string | undefined, Outcome[]>(arrivals.map((a) => [a.cls, []]));
  const next = arrivals.map(() => 0);
  const stepMs = 0.5;
  for (let t = 0; t < untilMs; t += stepMs) {
    arrivals.forEach((a, i) => {
      if (t < next[i]!) return;
      next[i] = t + a.everyMs;
      outcomes.get(a.cls)!.push(heldAdmission(limiter, clock, holdMs, a.timeoutMs, { class: a.cls }));
    });
    await clock.advance(stepMs);
  }
  const during = limiter.stats();
  await clock.advance(Math.max(...arrivals.map((a) => a.timeoutMs)) + holdMs);
  return { limiter, outcomes, during };
}

const admittedFrom = (outcomes: Outcome[], from: number) => outcomes.filter((o) => o.admitted && o.at >= from);
const waitsOf = (outcomes: Outcome[]) => outcomes.filter((o) => o.admitted).map((o) => o.at - o.arrived);

describe('priority classes', () => {
  it('under contention from every class, each keeps at least its guaranteed share of the slots', async () => {
    const classes = [
      { name: 'live', share: 0.6 },
      { name: 'batch', share: 0.3 },
      { name: 'bulk', share: 0.1 },
    ];
    // Each class alone would fill the limit (10 slots held 20 ms: 500 a second): three times the capacity.
    const { limiter, outcomes, during } = await contention(
      { classes },
      classes.map((c) => ({ cls: c.name, everyMs: 2, timeoutMs: 1_000 })),
    );
    const served = classes.map((c) => admittedFrom(outcomes.get(c.name)!, 1_000).length);
    const total = served.reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThan(0.95 * 500 * 5); // the limit is served at its capacity
    classes.forEach((c, i) => expect(served[i]! / total).toBeGreaterThanOrEqual(c.share - 0.02));
    // The stats show each class's share, what it holds and who waits.
    expect(during.classes).toEqual([
      {
        name: 'live',
        share: 0.6,
        used: 6,
        waiting: expect.any(Number),
        admitted: expect.any(Number),
        refused: expect.any(Number),
      },
      {
        name: 'batch',
        share: 0.3,
        used: 3,
        waiting: expect.any(Number),
        admitted: expect.any(Number),
        refused: expect.any(Number),
      },
      {
        name: 'bulk',
        share: 0.1,
        used: 1,
        waiting: expect.any(Number),
        admitted: expect.any(Number),
        refused: expect.any(Number),
      },
    ]);
    expect(during.classes!.every((c) => c.waiting > 0)).toBe(true);
    // Three times the capacity: every class has calls refused (at once, or at their deadline), counted as its own.
    const after = limiter.stats().classes!;
    classes.forEach((c, i) => {
      const arrived = outcomes.get(c.name)!;
      expect(after[i]).toMatchObject({
        admitted: arrived.filter((o) => o.admitted).length,
        refused: arrived.filter((o) => !o.admitted).length,
      });
    });
  });

  it('gives what the shares leave to the highest class, not to whoever came first', async () => {
    const classes = [
      { name: 'live', share: 0.5 },
      { name: 'batch', share: 0.3 },
    ];
    const { outcomes } = await contention(
      { classes },
      classes.map((c) => ({ cls: c.name, everyMs: 2, timeoutMs: 1_000 })),
    );
    const live = admittedFrom(outcomes.get('live')!, 1_000).length;
    const batch = admittedFrom(outcomes.get('batch')!, 1_000).length;
    // The fifth of the limit no class is guaranteed goes to live: 70 % against 30 %.
    expect(live / (live + batch)).toBeCloseTo(0.7, 1);
    expect(batch / (live + batch)).toBeGreaterThanOrEqual(0.29);
  });

  it('lets a class take every slot the others leave idle', async () => {
    const { outcomes, during } = await contention(
      {
        classes: [
          { name: 'live', share: 0.9 },
          { name: 'batch', share: 0.1 },
        ],
      },
      [{ cls: 'batch', everyMs: 1, timeoutMs: 1_000 }],
    );
    expect(during.classes![1]).toMatchObject({ name: 'batch', used: 10 });
    expect(admittedFrom(outcomes.get('batch')!, 1_000).length).toBeGreaterThan(0.95 * 500 * 5);
  });

  it('serves the higher class first from the queue, and with agingMs 0 in arrival order', async () => {
    for (const [agingMs, first] of [
      [1_000, 'live'],
      [0, 'batch'],
    ] as const) {
      const clock = new VirtualClock();
      const limiter = new LocalLimiter({ global: 1, classes: [{ name: 'live' }, { name: 'batch' }], agingMs, clock });
      const held = await limiter.admit({ pool: 'api', timeoutMs: 0 });
      const order: string[] = [];
      const waiter = (cls: string) =>
        limiter.admit({ pool: 'api', class: cls, timeoutMs: 5_000 }).then((a) => (order.push(cls), a));
      const batch = waiter('batch');
      await clock.advance(10);
      const live = waiter('live');
      held.release();
      (await (first === 'live' ? live : batch)).release();
      (await (first === 'live' ? batch : live)).release();
      expect(order).toEqual(first === 'live' ? ['live', 'batch'] : ['batch', 'live']);
    }
  });

  it('bounds the lowest class’s wait by agingMs and the class above’s deadline, where without aging it starves', async () => {
    const run = (agingMs: number) =>
      contention(
        { classes: [{ name: 'live' }, { name: 'batch' }], agingMs },
        [
          { cls: 'live', everyMs: 1, timeoutMs: 300 }, // twice the capacity, all of it from live
          { cls: 'batch', everyMs: 100, timeoutMs: 10_000 },
        ],
        { global: 4, holdMs: 8 },
      );
    const aged = await run(500);
    const batch = aged.outcomes.get('batch')!;
    expect(batch.every((o) => o.admitted)).toBe(true);
    // Stated bound: agingMs (500) + the longest wait of live (its deadline, 300) + one hold (8).
    expect(Math.max(...waitsOf(batch))).toBeLessThanOrEqual(500 + 300 + 8);
    // Live still gets nearly every slot: one batch call in a hundred is what aging costs it.
    expect(admittedFrom(aged.outcomes.get('live')!, 0).length).toBeGreaterThan(0.95 * 500 * 6);
    // Aging longer than live's queue ever gets: while live's overload lasts (6 s), no batch call
    // is served (the first comes at 0, while slots are free, and is admitted at once).
    const starved = await run(60_000);
    // The stats count each class's admissions: at 6 s, batch's one, and its callers all waiting.
    expect(starved.during.classes![1]).toMatchObject({ name: 'batch', admitted: 1 });
    expect(starved.during.classes![1]!.waiting).toBeGreaterThan(50);
    expect(aged.limiter.stats().classes![1]).toMatchObject({ refused: 0, admitted: batch.length });
    expect(starved.outcomes.get('batch')!.filter((o) => o.admitted && o.at < 6_000)).toHaveLength(1);
  });

  it('ages a class without a share past one whose share is nearly the whole limit', async () => {
    // live's guarantee is 9 of the 10 slots (0.99 × 10, rounded down): the tenth goes by aging.
    const { outcomes } = await contention(
      { classes: [{ name: 'live', share: 0.99 }, { name: 'batch' }], agingMs: 500 },
      [
        { cls: 'live', everyMs: 1, timeoutMs: 300 },
        { cls: 'batch', everyMs: 100, timeoutMs: 10_000 },
      ],
    );
    const batch = outcomes.get('batch')!;
    expect(batch.every((o) => o.admitted)).toBe(true);
    expect(Math.max(...waitsOf(batch))).toBeLessThanOrEqual(500 + 300 + 20);
  });

  it('a class whose waiters wait for their keys does not hold up the others', async () => {
    const limiter = new LocalLimiter({
      global: 2,
      perKey: 1,
      wait: true,
      classes: [{ name: 'live' }, { name: 'batch' }],
    });
    const ann = await limiter.admit({ pool: 'api', key: 'ann', class: 'live', timeoutMs: 0 });
    const other = await limiter.admit({ pool: 'api', key: 'cy', class: 'live', timeoutMs: 0 });
    const annAgain = limiter.admit({ pool: 'api', key: 'ann', class: 'live', timeoutMs: 5_000 });
    const bob = limiter.admit({ pool: 'api', key: 'bob', class: 'batch', timeoutMs: 5_000 });
    other.release(); // live's waiter is ann's, whose key is full: bob's batch call takes the slot
    const bobs = await bob;
    expect(limiter.stats().classes).toMatchObject([
      { name: 'live', used: 1, waiting: 1 },
      { name: 'batch', used: 1, waiting: 0 },
    ]);
    ann.release();
    (await annAgain).release();
    bobs.release();
    expect(limiter.stats()).toMatchObject({ held: 0, waiting: 0 });
  });

  it('refuses an unknown class with a PoolConfigError that names the classes, taking no slot', async () => {
    const limiter = new LocalLimiter({ global: 1, classes: [{ name: 'live' }, { name: 'batch' }] });
    const err = await limiter.admit({ pool: 'api', class: 'batchh', timeoutMs: 100 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PoolConfigError);
    expect((err as Error).message).toBe(
      `pool "api": option "acquire.class" ("batchh") is not a class of the limiter "limits": one of 'live', 'batch' (did you mean 'batch'?)`,
    );
    expect(limiter.tryAdmit({ pool: 'api', class: 'nope', timeoutMs: 0 })).toBeUndefined();
    expect(limiter.stats()).toMatchObject({ held: 0 });
    // A call that names none is the default class: the last, unless defaultClass says.
    (await limiter.admit({ pool: 'api', timeoutMs: 0 })).release();
    expect(limiter.stats().classes!.map((c) => c.name)).toEqual(['live', 'batch']);
    const byDefault = new LocalLimiter({
      global: 2,
      classes: [{ name: 'live' }, { name: 'batch' }],
      defaultClass: 'live',
    });
    const lease = await byDefault.admit({ pool: 'api', timeoutMs: 0 });
    expect(byDefault.stats().classes![0]).toMatchObject({ name: 'live', used: 1 });
    lease.release();
  });

  it('refuses bad class options, saying what to change', () => {
    const bad: [LimitOptions, string][] = [
      [{ classes: [] }, 'option "limits.classes" must be a non-empty array of { name, share? }'],
      [{ classes: [{ name: '' }] }, 'option "limits.classes[0].name" must be a non-empty string'],
      [{ classes: [{ name: 'a' }, { name: 'a' }] }, 'option "limits.classes[1].name" ("a") names another class too'],
      [{ classes: [{ name: 'a', share: 1.5 }] }, 'option "limits.classes[0].share" must be a number from 0 to 1'],
      [{ classes: [{ name: 'a', share: NaN }] }, 'option "limits.classes[0].share" must be a number from 0 to 1'],
      [
        {
          classes: [
            { name: 'a', share: 0.7 },
            { name: 'b', share: 0.4 },
          ],
        },
        'option "limits.classes" shares add up to 1.1',
      ],
      [
        { classes: [{ name: 'live', share: 1 }, { name: 'batch' }] },
        'option "limits.classes" shares add up to 1, so the class "batch", whose share is 0, would never be served under contention',
      ],
      [{ classes: [] }, 'got an empty array'],
      [
        { classes: [{ name: 'a', weight: 1 } as never] },
        'option "limits.classes[0].weight" is not an option of a class',
      ],
      [{ classes: [{ name: 'a' }], defaultClass: 'b' }, `option "limits.defaultClass" ("b") is not a class`],
      [{ classes: [{ name: 'a' }], agingMs: -1 }, 'option "limits.agingMs" must be a finite number of 0 or more'],
      [{ classes: [{ name: 'a' }], wait: false }, `option "limits.wait" must be true or 'global' with classes`],
      [{ defaultClass: 'a' }, 'option "limits.defaultClass" needs classes'],
      [
        { global: undefined, classes: [{ name: 'a' }] },
        'option "limits.classes" partition limits.global: give a global limit',
      ],
    ];
    for (const [options, message] of bad) expect(() => new LocalLimiter({ global: 10, ...options })).toThrow(message);
  });

  it('works in an AdaptiveLimiter, and through pool.use({ class }) on a pool', async () => {
    const adaptive = new AdaptiveLimiter({ classes: [{ name: 'live', share: 0.8 }, { name: 'batch' }] });
    const lease: Admission = await adaptive.admit({ pool: 'api', class: 'live', timeoutMs: 0 });
    expect(adaptive.stats().classes![0]).toMatchObject({ name: 'live', used: 1 });
    lease.release();

    const limiter = new LocalLimiter({ global: 1, classes: [{ name: 'live' }, { name: 'batch' }] });
    const pool = new ConnectionPool(new FakeConnector(), { name: 'db', maxSize: 2, limiter });
    let release!: () => void;
    const first = pool.use(() => new Promise<void>((r) => (release = r)), { class: 'batch' });
    await flush();
    const order: string[] = [];
    const batch = pool.use(async () => void order.push('batch'), { class: 'batch' });
    const live = pool.use(async () => void order.push('live'), { class: 'live' });
    await flush();
    expect(limiter.stats().classes).toMatchObject([
      { name: 'live', waiting: 1 },
      { name: 'batch', used: 1, waiting: 1 },
    ]);
    release();
    await Promise.all([first, batch, live]);
    expect(order).toEqual(['live', 'batch']);
    await expect(pool.use(async () => 1, { class: 7 as unknown as string })).rejects.toThrow(
      'pool "db": option "acquire.class" must be a non-empty string, got 7',
    );
    await pool.close();
  });
});

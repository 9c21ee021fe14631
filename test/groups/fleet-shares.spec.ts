// The fleet's plan, on hand-built figures: which instance gives places back, how many, and when
// it holds back from asking; and the figures' words as they travel through Redis.
import { describe, expect, it } from '@jest/globals';
import { decodeLoad, encodeLoad, fleetShare, InstanceMeter } from '../../lib/groups/fleet-shares.js';
import type { MemberLoad } from '../../lib/groups/group-planner.js';
import type { MemberSide } from '../../lib/core/index.js';

/** An instance's figures: `connections` of them in use, `waiting` callers, 20 ms holds. */
const instance = (key: string, connections: number, waiting: number, idle = 0): MemberLoad => ({
  key,
  connections: connections + idle,
  inUse: connections,
  stealable: idle,
  waiting,
  holdMs: 20,
  oldestMs: 5_000,
  waitedMs: waiting > 0 ? 300 : 0,
  recentNeed: connections + waiting,
});

describe("a fleet budget's plan", () => {
  it('has an instance holding the whole budget give back to one whose callers wait with none', () => {
    // Needs 50 (20 in use, 30 waiting) and 30 (30 waiting): the budget of 20 goes 12.25 and 7.75, so 12 and 8.
    const loads = [instance('a', 20, 30), instance('b', 0, 30)];
    const a = fleetShare('a', loads, 20, 500);
    expect(a).toMatchObject({ instances: 2, quota: 12, excess: 8, waitingElsewhere: 30, holdBack: true });
    const b = fleetShare('b', loads, 20, 500);
    expect(b).toMatchObject({ quota: 8, excess: 0, holdBack: false });
  });

  it('says the budget is short when more instances want a place than it has', () => {
    const five = ['a', 'b', 'c', 'd', 'e'].map((k) => instance(k, 1, 0));
    expect(fleetShare('a', five, 4, 500).short).toBe(true);
    expect(fleetShare('a', five, 5, 500).short).toBe(false);
  });

  it('lists every instance heard, this one first, with its figures and quota', () => {
    const loads = [instance('c', 0, 30), instance('a', 20, 30), instance('b', 0, 0)];
    const { fleet } = fleetShare('c', loads, 20, 500);
    expect(fleet.map((f) => f.instance)).toEqual(['c', 'a', 'b']);
    expect(fleet[0]).toEqual({
      instance: 'c',
      self: true,
      connections: 0,
      places: 0,
      inUse: 0,
      waiting: 30,
      waitedMs: 300,
      quota: 8,
    });
    expect(fleet[1]).toMatchObject({ instance: 'a', self: false, connections: 20, inUse: 20, waiting: 30, quota: 12 });
    expect(fleet[2]).toMatchObject({ instance: 'b', self: false, connections: 0, waiting: 0, quota: 0 });
    expect(fleet.reduce((n, f) => n + f.quota, 0)).toBeLessThanOrEqual(20);
  });

  it("shows each instance's places as Redis counted them, not the connections it last published", () => {
    // 'a' published 20 connections, then gave 3 back; Redis already counts 'c' with those 3.
    const loads = [instance('c', 0, 30), instance('a', 20, 30)];
    const { fleet } = fleetShare(
      'c',
      loads,
      20,
      500,
      0,
      new Map([
        ['a', 17],
        ['c', 3],
      ]),
    );
    expect(fleet.map((f) => [f.instance, f.connections, f.places])).toEqual([
      ['c', 0, 3],
      ['a', 20, 17],
    ]);
    // An instance the count does not know shows what it published.
    expect(fleetShare('c', loads, 20, 500).fleet.map((f) => f.places)).toEqual([0, 20]);
  });

  it('shares by demand: a busier instance keeps more', () => {
    const loads = [instance('a', 15, 45), instance('b', 5, 15)];
    // Needs 60 and 20 of a budget of 20: 15 and 5, as held.
    expect(fleetShare('a', loads, 20, 500)).toMatchObject({ quota: 15, excess: 0 });
    expect(fleetShare('b', loads, 20, 500)).toMatchObject({ quota: 5, excess: 0 });
  });

  it('moves nothing while nobody else waits, however far over its quota an instance is', () => {
    const loads = [instance('a', 18, 0, 2), instance('b', 0, 0)];
    expect(fleetShare('a', loads, 20, 500)).toMatchObject({ excess: 0, holdBack: false });
  });

  it('passes no single connection back and forth between instances near their quotas', () => {
    // Needs of 40 each: quotas of 10. b is one below its quota, a one over: a gives nothing (b is
    // not starving), but asks for no place while b is hungry.
    const near = [instance('a', 11, 29), instance('b', 9, 31)];
    expect(fleetShare('a', near, 20, 500)).toMatchObject({ quota: 10, excess: 0, over: 1, holdBack: true });
    // Over by one in the two plans before too: not a quota passing by, so a gives it.
    expect(fleetShare('a', near, 20, 500, 2)).toMatchObject({ excess: 1 });
    // One over while another instance has less than half its quota: that one gets it.
    const starving = [instance('a', 11, 30), instance('b', 4, 30), instance('c', 5, 30)];
    expect(fleetShare('a', starving, 20, 500).excess).toBeGreaterThanOrEqual(1);
  });

  it('gives a quiet instance nothing of the budget, so its idle connections go to the busy ones', () => {
    const loads = [instance('quiet', 0, 0, 8), instance('busy', 12, 40)];
    expect(fleetShare('quiet', loads, 20, 500)).toMatchObject({ quota: 0, excess: 8 });
  });

  it('reads back what it wrote, and ignores figures it cannot read', () => {
    const load = instance('a', 3, 4, 1);
    expect(decodeLoad('a', encodeLoad({ ...load, waitedMs: 300, recentNeed: 7, recurring: false }))).toEqual(load);
    expect(decodeLoad('a', encodeLoad({ ...load, waitedMs: 300, recentNeed: 7, recurring: true }))).toEqual({
      ...load,
      recurring: true,
    });
    // An instance of the version before the flag: its figures, nothing of its rhythm.
    expect(decodeLoad('a', '1 1 0 0 20 5 0 1')).toMatchObject({ connections: 1, recentNeed: 1 });
    expect(decodeLoad('a', '1 1 0 0 20 5 0 1')).not.toHaveProperty('recurring');
    expect(decodeLoad('a', '1 2 3')).toBeUndefined();
    expect(decodeLoad('a', '1 2 3 4 5 6 7 8 1 1')).toBeUndefined();
    expect(decodeLoad('a', '1 2 3 4 5 6 7 x')).toBeUndefined();
    expect(decodeLoad('a', '1 2 3 4 5 6 7 -1')).toBeUndefined();
    expect(decodeLoad('a', '1 2 3 4 5 6 7 Infinity')).toBeUndefined();
  });
});

describe("an instance's meter", () => {
  /** A pool as the budget sees it, with figures the test sets. */
  const side = () => {
    const s = { inUse: 0, idle: 0, waiting: 0, released: 0, most: 10 };
    const member = {
      counters: {
        get released() {
          return s.released;
        },
      },
      waiting: () => s.waiting,
      maxSizeNow: () => s.most,
      waitedMs: () => (s.waiting > 0 ? 100 : 0),
      load: () => ({
        connections: s.inUse + s.idle,
        opening: 0,
        inUse: s.inUse,
        stealable: s.idle,
        oldestMs: 1_000,
      }),
    } as unknown as MemberSide;
    return { s, member };
  };

  it('adds its pools up, measures their hold time, and lets a pool with nothing in it go', () => {
    const meter = new InstanceMeter();
    const one = side();
    const two = side();
    meter.sides.add(one.member);
    meter.sides.add(two.member);
    Object.assign(one.s, { inUse: 4, waiting: 6 });
    Object.assign(two.s, { inUse: 1, idle: 2 });
    const first = meter.measure(250, 250, 500);
    expect(first).toMatchObject({ connections: 7, inUse: 5, stealable: 2, waiting: 6, waitedMs: 100 });
    expect(first.recentNeed).toBeCloseTo(5.5); // half way to a need of 11
    // Twice 250 ms with 5 connections busy, then 50 leases released: 50 ms a lease.
    one.s.released += 40;
    two.s.released += 10;
    expect(meter.measure(500, 250, 500).holdMs).toBeCloseTo(50);
    Object.assign(two.s, { inUse: 0, idle: 0 });
    meter.measure(750, 250, 500);
    expect([...meter.sides]).toEqual([one.member]);
  });

  it('needs no more connections than its pools may open, however many callers wait', () => {
    const meter = new InstanceMeter();
    const one = side();
    Object.assign(one.s, { inUse: 5, waiting: 25, most: 5 });
    meter.sides.add(one.member);
    for (let i = 1; i <= 20; i++) meter.measure(250 * i, 250, 500);
    // A pool at its maxSize of 5 with 25 callers waiting needs 5: a quota past it would be places nobody opens.
    expect(meter.measure(250 * 21, 250, 500).recentNeed).toBeCloseTo(5);
  });

  it('tells a pool that calls now and then, keeps it while it does, and lets it go three gaps after its last call', () => {
    const meter = new InstanceMeter();
    const rare = side();
    meter.sides.add(rare.member);
    // One call every other exchange (500 ms apart) on its one connection, each over before the exchange sees it.
    Object.assign(rare.s, { idle: 1 });
    let at = 0;
    for (let i = 1; i <= 12; i++) {
      at = 250 * i;
      if (i % 2 === 0) rare.s.released++;
      expect(meter.measure(at, 250, 500).connections).toBe(1);
    }
    expect(meter.recurring(rare.member, at, 500)).toBe(true);
    expect(meter.measure(at + 250, 250, 500).recurring).toBe(true);
    // Its connection gone (given back), it still counts while its next call is likely.
    Object.assign(rare.s, { idle: 0 });
    expect(meter.measure(at + 500, 250, 500).recurring).toBe(true);
    expect([...meter.sides]).toEqual([rare.member]);
    // Its calls stop: three gaps (1.5 s) after the last, it no longer recurs, and leaves.
    expect(meter.recurring(rare.member, at + 1_400, 500)).toBe(true);
    expect(meter.measure(at + 1_500, 250, 500).recurring).toBe(false);
    expect([...meter.sides]).toEqual([]);
    // Calls further apart than ten minimum holds (5 s) never recur.
    const seldom = side();
    meter.sides.add(seldom.member);
    for (let i = 1; i <= 5; i++) {
      seldom.s.released++;
      meter.measure(6_000 * i, 6_000, 500);
    }
    expect(meter.recurring(seldom.member, 30_000, 500)).toBe(false);
  });
});

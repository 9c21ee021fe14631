// The decisions of a group whose budget is spent, on hand-built states: which member a starved
// acquire takes an idle connection from, whether a release gives its connection away, and who a
// freed place goes to. Each member's side reports a fixed load; the group plans over those loads.
import { describe, expect, it } from '@jest/globals';
import type { MemberLoadFigures, MemberSide } from '../../lib/core/contracts/connection-budget.js';
import type { MemberLoad, PlanSettings } from '../../lib/groups/group-planner.js';
import { PlaceTransfers, type TransferMember } from '../../lib/groups/place-transfers.js';
import { load } from '../support/member-load.js';

const settings: PlanSettings = { maxTotal: 10, clientLimit: 1, minHoldMs: 50 };

interface Fake extends TransferMember {
  load: MemberLoad;
}

/** A group over fixed loads; `asked` records who was asked to open, `retired` whose idle connection was taken. */
function groupOf(loads: MemberLoad[], s: PlanSettings = settings) {
  const asked: string[] = [];
  const retired: string[] = [];
  const members: Fake[] = loads.map((l) => {
    const side = {
      waiting: () => member.load.waiting,
      connectionCount: () => member.load.connections,
      waitedMs: () => member.load.waitedMs ?? 0,
      load: (): MemberLoadFigures => ({
        connections: member.load.connections,
        opening: 0,
        inUse: member.load.inUse,
        stealable: member.load.stealable,
        oldestMs: member.load.oldestMs,
      }),
      retireOldestIdle: () => (retired.push(member.key), true),
      demand: () => void asked.push(member.key),
    } as unknown as MemberSide;
    const member: Fake = { key: l.key, side, quota: 0, demand: 0, keeps: 0, giving: 0, load: l };
    return member;
  });
  let total = loads.reduce((sum, l) => sum + l.connections, 0);
  const transfers = new PlaceTransfers<Fake>({
    maxTotal: s.maxTotal,
    clientLimit: s.clientLimit,
    total: () => total,
    members: () => members,
    loads: (ms) => ms.map((m) => m.load),
    settings: () => s,
    now: () => 1_000,
  });
  const byKey = (key: string) => members.find((m) => m.key === key)!;
  return {
    transfers,
    asked,
    retired,
    starve: (key: string) => transfers.starved(byKey(key)),
    yields: (key: string, heldMs: number) => transfers.yields(byKey(key), heldMs),
    /** A connection closes: one place free. */
    free: () => {
      total--;
      transfers.handOut();
    },
  };
}

describe('an acquire with no connection free', () => {
  it('opens one while the budget is not spent, whatever the member’s quota: nothing is taken', () => {
    const group = groupOf([
      load('a', { connections: 8, inUse: 8, waiting: 5 }),
      load('b', { connections: 1, inUse: 1 }),
    ]);
    group.starve('a');
    expect(group.retired).toEqual([]);
  });

  it('takes, for a hungry member, an idle connection of the most overfull member that may give one up', () => {
    const group = groupOf([
      load('hungry', { waiting: 2 }),
      load('full', { connections: 4, stealable: 4, oldestMs: 5_000 }),
      load('fuller', { connections: 6, stealable: 6, oldestMs: 5_000 }),
    ]);
    group.starve('hungry');
    expect(group.retired).toEqual(['fuller']);
  });

  it('waits when the overfull members’ idle connections are younger than the minimum hold time', () => {
    const group = groupOf([
      load('hungry', { waiting: 2 }),
      load('fresh', { connections: 10, stealable: 0, oldestMs: 10 }),
    ]);
    group.starve('hungry');
    expect(group.retired).toEqual([]);
  });

  it('waits when the member is not hungry: it has its share', () => {
    const group = groupOf([
      load('a', { connections: 5, inUse: 5, waiting: 1 }),
      load('b', { connections: 5, inUse: 5, waiting: 1 }),
    ]);
    group.starve('a');
    expect(group.retired).toEqual([]);
  });

  it('takes one place for a waiting member, not one per call, while that place is on its way', () => {
    const group = groupOf([
      load('hungry', { waiting: 1 }),
      load('fuller', { connections: 10, stealable: 10, oldestMs: 5_000 }),
    ]);
    group.starve('hungry');
    group.starve('hungry');
    expect(group.retired).toEqual(['fuller']);
  });

  it('counts a member that waits with no connection as needing one, whatever it needed before', () => {
    const small: PlanSettings = { maxTotal: 4, clientLimit: 1, minHoldMs: 50 };
    const group = groupOf(
      [
        load('new', { waiting: 1, recentNeed: 0 }),
        load('a', { connections: 4, inUse: 3, stealable: 1, recentNeed: 4, oldestMs: 500 }),
      ],
      small,
    );
    group.starve('new');
    expect(group.retired).toEqual(['a']);
  });

  it('does not make a member hungry for a burst its own connections can serve', () => {
    const small: PlanSettings = { maxTotal: 4, clientLimit: 1, minHoldMs: 50 };
    // 'a' needed about two connections lately; a burst queued six callers on its two.
    const group = groupOf(
      [
        load('a', { connections: 2, inUse: 2, waiting: 6, recentNeed: 1.8 }),
        load('b', { connections: 2, stealable: 2, recentNeed: 1.2, oldestMs: 500 }),
      ],
      small,
    );
    group.starve('a');
    expect(group.retired).toEqual([]);
  });
});

describe('a release', () => {
  it('keeps the connection for the member’s own waiters while it is within its quota', () => {
    // a's quota is 4 of the 10 (its demand is 60 of 140), b's 6: b is hungry, but a keeps its own.
    const group = groupOf([
      load('a', { connections: 4, inUse: 3, waiting: 3 }),
      load('b', { connections: 6, inUse: 5, waiting: 3 }),
    ]);
    expect(group.yields('a', 1_000)).toBe(false);
  });

  it('hands an overfull member’s connection to the hungriest member with waiters, even past its own waiters', () => {
    const group = groupOf([
      load('busy', { connections: 10, inUse: 9, waiting: 50, holdMs: 100, oldestMs: 5_000 }),
      load('rare', { waiting: 1, holdMs: 5 }),
    ]);
    group.starve('rare'); // its pool could not open: the budget is spent (busy's idle one is too young to take)
    expect(group.retired).toEqual([]);
    expect(group.yields('busy', 1_000)).toBe(true);
    // Its close frees the place, and the place goes to the member that waits for it.
    group.free();
    expect(group.asked[0]).toBe('rare');
  });

  it('keeps a connection held for less than the minimum hold time', () => {
    const group = groupOf([
      load('busy', { connections: 10, inUse: 9, waiting: 50, holdMs: 100 }),
      load('rare', { waiting: 1 }),
    ]);
    expect(group.yields('busy', 10)).toBe(false);
  });

  it('keeps it when nobody else waits for a place', () => {
    const group = groupOf([load('a', { connections: 6, inUse: 1 }), load('b', { connections: 4, inUse: 4 })]);
    expect(group.yields('a', 1_000)).toBe(false);
  });

  it('keeps the one connection of a member that calls now and then, while another waits; not with a short budget', () => {
    const loads = (maxTotal: number) =>
      groupOf(
        [
          load('busy', { connections: maxTotal - 1, inUse: maxTotal - 1, waiting: 20, recentNeed: 8, holdMs: 20 }),
          load('rare', { connections: 1, inUse: 0, stealable: 1, recentNeed: 0.02, recurring: true, oldestMs: 900 }),
        ],
        { maxTotal, clientLimit: 1, minHoldMs: 50 },
      );
    const roomy = loads(6);
    roomy.starve('busy');
    expect(roomy.retired).toEqual([]); // its connection is not taken from it
    expect(roomy.yields('rare', 1_000)).toBe(false); // nor given away when its call ends
    // Two members wanting and a budget of one: they take turns, and nobody keeps an idle place.
    const short = loads(1);
    short.starve('busy');
    expect(short.retired).toEqual(['rare']);
  });

  it('gives no second connection while the one given is on its way and covers what the others wait for', () => {
    const group = groupOf([
      load('busy', { connections: 10, inUse: 10, waiting: 50, holdMs: 100, oldestMs: 5_000 }),
      load('rare', { waiting: 1, holdMs: 5 }),
    ]);
    group.starve('rare');
    expect(group.yields('busy', 1_000)).toBe(true);
    expect(group.yields('busy', 1_000)).toBe(false);
  });
});

describe('a freed place', () => {
  it('goes first to the hungriest member that waits, then to any member that starved', () => {
    const group = groupOf([
      load('big', { connections: 5, inUse: 5, waiting: 9, holdMs: 100 }),
      load('small', { connections: 4, inUse: 4, waiting: 1, holdMs: 5 }),
      load('c', { connections: 1, inUse: 1 }),
    ]);
    group.starve('small');
    group.starve('big');
    group.free();
    expect(group.asked).toEqual(['big', 'small']);
  });

  it('goes to the hungry member whose caller waited longest, not the one with the most demand', () => {
    // Both are below their quotas: 'starved' has one connection for 18 callers, 'grown' more
    // demand and callers that came later.
    const group = groupOf([
      load('grown', { connections: 2, inUse: 2, waiting: 30, holdMs: 100, waitedMs: 20 }),
      load('starved', { connections: 1, inUse: 1, waiting: 18, holdMs: 100, waitedMs: 800 }),
      load('c', { connections: 7, inUse: 7, recentNeed: 7 }),
    ]);
    group.starve('grown');
    group.starve('starved');
    group.free();
    expect(group.asked[0]).toBe('starved');
  });

  it('takes turns with a short budget: the member whose caller waited longest first, whatever its demand', () => {
    const small: PlanSettings = { maxTotal: 2, clientLimit: 1, minHoldMs: 50 };
    const group = groupOf(
      [
        load('held', { connections: 2, inUse: 2, recentNeed: 2 }),
        load('late', { waiting: 1, holdMs: 500, waitedMs: 10 }),
        load('early', { waiting: 1, holdMs: 5, waitedMs: 900 }),
      ],
      small,
    );
    group.starve('late');
    group.starve('early');
    group.free();
    expect(group.asked[0]).toBe('early');
  });
});

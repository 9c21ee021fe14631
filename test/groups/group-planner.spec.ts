// The group planner on hand-built states: quotas from demand, hunger and scores. The decisions
// taken with them (stealing, release routing, the minimum hold) are place-transfers.spec's.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { demandOf, planMembers, quotasOf, type MemberLoad, type PlanSettings } from '../../lib/groups/group-planner.js';
import { load } from '../support/member-load.js';

const settings: PlanSettings = { maxTotal: 10, clientLimit: 1, minHoldMs: 50 };

const quotas = (loads: MemberLoad[], s: PlanSettings = settings) => Object.fromEntries(quotasOf(loads, s));
const hunger = (loads: MemberLoad[], s: PlanSettings = settings) =>
  Object.fromEntries(planMembers(loads, s).map((p) => [p.key, p.hunger]));

describe('demand', () => {
  it('is mean hold time × the connections needed now: those in use, and enough for the waiters', () => {
    expect(demandOf(load('a', { inUse: 2, waiting: 3, holdMs: 20 }), settings)).toBe(100);
    // Sharing: 250 waiters fit on 3 connections of 100 callers.
    expect(demandOf(load('a', { inUse: 1, waiting: 250, holdMs: 20 }), { ...settings, clientLimit: 100 })).toBe(80);
    // Before any hold time is measured, a waiter still makes demand.
    expect(demandOf(load('a', { waiting: 1, holdMs: 0 }), settings)).toBeGreaterThan(0);
    expect(demandOf(load('a', { connections: 3 }), settings)).toBe(0);
  });
});

describe('quotas', () => {
  it('share the budget in proportion to demand', () => {
    expect(
      quotas([load('a', { inUse: 4, waiting: 20, holdMs: 30 }), load('b', { inUse: 4, waiting: 20, holdMs: 10 })]),
    ).toEqual({ a: 7, b: 3 });
  });

  it('never exceed a member’s need: what it does not need goes to the others', () => {
    expect(quotas([load('a', { inUse: 1, holdMs: 1_000 }), load('b', { inUse: 3, waiting: 30, holdMs: 1 })])).toEqual({
      a: 1,
      b: 9,
    });
  });

  it('give every member with demand one connection, however small its demand', () => {
    const q = quotas([load('busy', { inUse: 10, waiting: 500, holdMs: 100 }), load('rare', { waiting: 1, holdMs: 1 })]);
    expect(q).toEqual({ busy: 9, rare: 1 });
  });

  it('give nothing to members without demand, so what they hold is reclaimed', () => {
    expect(quotas([load('idle', { connections: 4, stealable: 4 }), load('a', { inUse: 2, waiting: 1 })])).toEqual({
      idle: 0,
      a: 3,
    });
  });

  it('go to the largest demands when there are more members than connections', () => {
    const loads = ['a', 'b', 'c', 'd'].map((k, i) => load(k, { waiting: 1, holdMs: (i + 1) * 10 }));
    expect(quotas(loads, { ...settings, maxTotal: 2 })).toEqual({ a: 0, b: 0, c: 1, d: 1 });
  });

  it('never exceed the budget or any member’s need, and use the whole budget when the need is there', () => {
    const member = fc.record({ inUse: fc.nat(20), waiting: fc.nat(50), holdMs: fc.nat(500) });
    fc.assert(
      fc.property(
        fc.array(member, { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 5 }),
        (members, maxTotal, clientLimit) => {
          const s = { maxTotal, clientLimit, minHoldMs: 10 };
          const loads = members.map((m, i) => load(`m${i}`, m));
          const q = quotasOf(loads, s);
          const need = loads.map((l) => l.inUse + Math.ceil(l.waiting / clientLimit));
          const given = [...q.values()].reduce((a, b) => a + b, 0);
          expect(given).toBeLessThanOrEqual(maxTotal);
          loads.forEach((l, i) => expect(q.get(l.key)).toBeLessThanOrEqual(need[i]));
          expect(given).toBe(
            Math.min(
              maxTotal,
              need.reduce((a, b) => a + b, 0),
            ),
          );
        },
      ),
    );
  });
});

describe('hunger', () => {
  it('is hungry below the quota, satisfied at it, overfull above it', () => {
    const loads = [
      load('a', { connections: 1, inUse: 1, waiting: 4 }),
      load('b', { connections: 2, inUse: 2 }),
      load('c', { connections: 5, stealable: 5 }),
    ];
    expect(hunger(loads)).toEqual({ a: 'hungry', b: 'satisfied', c: 'overfull' });
  });

  it('makes the member with more extra connections, and an older oldest one, the better victim', () => {
    const loads = [
      load('young', { connections: 3, stealable: 3, oldestMs: 100 }),
      load('old', { connections: 3, stealable: 3, oldestMs: 10_000 }),
      load('more', { connections: 5, stealable: 5, oldestMs: 100 }),
    ];
    const score = Object.fromEntries(planMembers(loads, settings).map((p) => [p.key, p.score]));
    expect(score.old).toBeGreaterThan(score.young);
    expect(score.more).toBeGreaterThan(score.young);
  });
});

describe('with the need the group measured lately', () => {
  const small: PlanSettings = { maxTotal: 4, clientLimit: 1, minHoldMs: 50 };

  it('does not make a member hungry for a burst its own connections can serve', () => {
    // 'a' needed about two connections lately; a burst queued six callers on its two.
    const loads = [
      load('a', { connections: 2, inUse: 2, waiting: 6, recentNeed: 1.8 }),
      load('b', { connections: 2, stealable: 2, recentNeed: 1.2, oldestMs: 500 }),
    ];
    expect(hunger(loads, small)).toEqual({ a: 'satisfied', b: 'satisfied' });
    // Without the measured need, the burst alone would make a hungry and b overfull.
    const instant = loads.map(({ recentNeed: _, ...l }) => l);
    expect(hunger(instant, small)).toEqual({ a: 'hungry', b: 'overfull' });
  });

  it('lets a member that stopped go within a second: a small residue is no need', () => {
    expect(
      quotas(
        [load('gone', { connections: 2, stealable: 2, recentNeed: 0.04 }), load('a', { inUse: 2, recentNeed: 2 })],
        small,
      ),
    ).toEqual({ gone: 0, a: 2 });
  });

  it('counts a member that waits with no connection as needing one, whatever it needed before', () => {
    const loads = [
      load('new', { waiting: 1, recentNeed: 0 }),
      load('a', { connections: 4, inUse: 3, stealable: 1, recentNeed: 4, oldestMs: 500 }),
    ];
    expect(quotas(loads, small)).toEqual({ new: 1, a: 3 });
  });

  it('keeps one connection for a member that calls now and then, though it needs none this instant', () => {
    const loads = [
      load('rare', { connections: 1, stealable: 1, recentNeed: 0.02, recurring: true, oldestMs: 500 }),
      load('busy', { connections: 3, inUse: 3, waiting: 9, recentNeed: 6 }),
    ];
    expect(quotas(loads, small)).toEqual({ rare: 1, busy: 3 });
    expect(hunger(loads, small)).toEqual({ rare: 'satisfied', busy: 'satisfied' });
    // Once its calls stop coming (or without a connection to keep), it needs none.
    expect(quotas([{ ...loads[0]!, recurring: false }, loads[1]!], small)).toEqual({ rare: 0, busy: 4 });
    expect(quotas([load('rare', { recentNeed: 0.02, recurring: true }), loads[1]!], small)).toEqual({
      rare: 0,
      busy: 4,
    });
  });

  it('gives the first connections of a short budget to the members waiting longest, not the largest', () => {
    const loads = ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'].map((key, i) =>
      load(key, { waiting: 1, recentNeed: 0, holdMs: 100 - i, waitedMs: i * 10 }),
    );
    expect(quotas(loads, small)).toEqual({ m1: 0, m2: 0, m3: 1, m4: 1, m5: 1, m6: 1 });
  });
});

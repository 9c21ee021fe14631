// The group planner's decisions on hand-built states: quotas from demand, hunger,
// stealing and release routing, with the minimum hold time.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  demandOf,
  planAcquire,
  planMembers,
  planRelease,
  quotasOf,
  type MemberLoad,
  type PlanSettings,
} from '../../lib/groups/group-planner.js';

const settings: PlanSettings = { maxTotal: 10, clientLimit: 1, minHoldMs: 50 };

/** A member's load: nothing held, nothing asked, unless said. */
const load = (key: string, fields: Partial<Omit<MemberLoad, 'key'>> = {}): MemberLoad => ({
  key,
  connections: 0,
  inUse: 0,
  stealable: 0,
  waiting: 0,
  holdMs: 10,
  oldestMs: 0,
  ...fields,
});

const quotas = (loads: MemberLoad[], s: PlanSettings = settings) => Object.fromEntries(quotasOf(loads, s));
const hunger = (loads: MemberLoad[], s: PlanSettings = settings) => Object.fromEntries(planMembers(loads, s).map((p) => [p.key, p.hunger]));

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
    expect(quotas([load('a', { inUse: 4, waiting: 20, holdMs: 30 }), load('b', { inUse: 4, waiting: 20, holdMs: 10 })])).toEqual({ a: 7, b: 3 });
  });

  it('never exceed a member’s need: what it does not need goes to the others', () => {
    expect(quotas([load('a', { inUse: 1, holdMs: 1_000 }), load('b', { inUse: 3, waiting: 30, holdMs: 1 })])).toEqual({ a: 1, b: 9 });
  });

  it('give every member with demand one connection, however small its demand', () => {
    const q = quotas([load('busy', { inUse: 10, waiting: 500, holdMs: 100 }), load('rare', { waiting: 1, holdMs: 1 })]);
    expect(q).toEqual({ busy: 9, rare: 1 });
  });

  it('give nothing to members without demand, so what they hold is reclaimed', () => {
    expect(quotas([load('idle', { connections: 4, stealable: 4 }), load('a', { inUse: 2, waiting: 1 })])).toEqual({ idle: 0, a: 3 });
  });

  it('go to the largest demands when there are more members than connections', () => {
    const loads = ['a', 'b', 'c', 'd'].map((k, i) => load(k, { waiting: 1, holdMs: (i + 1) * 10 }));
    expect(quotas(loads, { ...settings, maxTotal: 2 })).toEqual({ a: 0, b: 0, c: 1, d: 1 });
  });

  it('never exceed the budget or any member’s need, and use the whole budget when the need is there', () => {
    const member = fc.record({ inUse: fc.nat(20), waiting: fc.nat(50), holdMs: fc.nat(500) });
    fc.assert(
      fc.property(fc.array(member, { minLength: 1, maxLength: 12 }), fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 5 }), (members, maxTotal, clientLimit) => {
        const s = { maxTotal, clientLimit, minHoldMs: 10 };
        const loads = members.map((m, i) => load(`m${i}`, m));
        const q = quotasOf(loads, s);
        const need = loads.map((l) => l.inUse + Math.ceil(l.waiting / clientLimit));
        const given = [...q.values()].reduce((a, b) => a + b, 0);
        expect(given).toBeLessThanOrEqual(maxTotal);
        loads.forEach((l, i) => expect(q.get(l.key)).toBeLessThanOrEqual(need[i]));
        expect(given).toBe(Math.min(maxTotal, need.reduce((a, b) => a + b, 0)));
      }),
    );
  });
});

describe('hunger', () => {
  it('is hungry below the quota, satisfied at it, overfull above it', () => {
    const loads = [load('a', { connections: 1, inUse: 1, waiting: 4 }), load('b', { connections: 2, inUse: 2 }), load('c', { connections: 5, stealable: 5 })];
    expect(hunger(loads)).toEqual({ a: 'hungry', b: 'satisfied', c: 'overfull' });
  });

  it('makes the member with more extra connections, and an older oldest one, the better victim', () => {
    const loads = [load('young', { connections: 3, stealable: 3, oldestMs: 100 }), load('old', { connections: 3, stealable: 3, oldestMs: 10_000 }), load('more', { connections: 5, stealable: 5, oldestMs: 100 })];
    const score = Object.fromEntries(planMembers(loads, settings).map((p) => [p.key, p.score]));
    expect(score.old).toBeGreaterThan(score.young);
    expect(score.more).toBeGreaterThan(score.young);
  });
});

describe('an acquire with no connection free', () => {
  it('opens one at once while the budget is not spent, whatever the member’s quota', () => {
    const loads = [load('a', { connections: 8, inUse: 8, waiting: 5 }), load('b', { connections: 1, inUse: 1 })];
    expect(planAcquire('a', loads, settings)).toEqual({ kind: 'open' });
  });

  it('takes, for a hungry member, an idle connection of the most overfull member that may give one up', () => {
    const loads = [
      load('hungry', { waiting: 2 }),
      load('full', { connections: 4, stealable: 4, oldestMs: 5_000 }),
      load('fuller', { connections: 6, stealable: 6, oldestMs: 5_000 }),
    ];
    expect(planAcquire('hungry', loads, settings)).toEqual({ kind: 'steal', from: 'fuller' });
  });

  it('waits when the overfull members’ idle connections are younger than the minimum hold time', () => {
    const loads = [load('hungry', { waiting: 2 }), load('fresh', { connections: 10, stealable: 0, oldestMs: 10 })];
    expect(planAcquire('hungry', loads, settings)).toEqual({ kind: 'wait' });
  });

  it('waits when the member is not hungry: it has its share', () => {
    const loads = [load('a', { connections: 5, inUse: 5, waiting: 1 }), load('b', { connections: 5, inUse: 5, waiting: 1 })];
    expect(planAcquire('a', loads, settings)).toEqual({ kind: 'wait' });
  });
});

describe('a release', () => {
  it('keeps the connection for the member’s own waiters while it is within its quota', () => {
    // a's quota is 4 of the 10 (its demand is 60 of 140), b's 6: b is hungry, but a keeps its own.
    const loads = [load('a', { connections: 4, inUse: 3, waiting: 3 }), load('b', { connections: 5, inUse: 5, waiting: 3 })];
    expect(hunger(loads)).toEqual({ a: 'satisfied', b: 'hungry' });
    expect(planRelease('a', 1_000, loads, settings)).toEqual({ kind: 'keep' });
  });

  it('hands an overfull member’s connection to the hungriest member with waiters, even past its own waiters', () => {
    const loads = [load('busy', { connections: 10, inUse: 9, waiting: 50, holdMs: 100, oldestMs: 5_000 }), load('rare', { waiting: 1, holdMs: 5 })];
    expect(planRelease('busy', 1_000, loads, settings)).toEqual({ kind: 'transfer', to: 'rare' });
  });

  it('keeps a connection held for less than the minimum hold time', () => {
    const loads = [load('busy', { connections: 10, inUse: 9, waiting: 50, holdMs: 100 }), load('rare', { waiting: 1 })];
    expect(planRelease('busy', 10, loads, settings)).toEqual({ kind: 'keep' });
  });

  it('keeps it when nobody else waits', () => {
    const loads = [load('a', { connections: 6, inUse: 1 }), load('b', { connections: 4, inUse: 4 })];
    expect(planRelease('a', 1_000, loads, settings)).toEqual({ kind: 'keep' });
  });
});

describe('with the need the group measured lately', () => {
  const small: PlanSettings = { maxTotal: 4, clientLimit: 1, minHoldMs: 50 };

  it('does not make a member hungry for a burst its own connections can serve', () => {
    // 'a' needed about two connections lately; a burst queued six callers on its two.
    const loads = [load('a', { connections: 2, inUse: 2, waiting: 6, recentNeed: 1.8 }), load('b', { connections: 2, stealable: 2, recentNeed: 1.2, oldestMs: 500 })];
    expect(hunger(loads, small)).toEqual({ a: 'satisfied', b: 'satisfied' });
    expect(planAcquire('a', loads, small)).toEqual({ kind: 'wait' });
    // Without the measured need, the burst alone would take b's connections.
    const instant = loads.map(({ recentNeed: _, ...l }) => l);
    expect(planAcquire('a', instant, small)).toEqual({ kind: 'steal', from: 'b' });
  });

  it('lets a member that stopped go within a second: a small residue is no need', () => {
    expect(quotas([load('gone', { connections: 2, stealable: 2, recentNeed: 0.04 }), load('a', { inUse: 2, recentNeed: 2 })], small)).toEqual({ gone: 0, a: 2 });
  });

  it('counts a member that waits with no connection as needing one, whatever it needed before', () => {
    const loads = [load('new', { waiting: 1, recentNeed: 0 }), load('a', { connections: 4, inUse: 3, stealable: 1, recentNeed: 4, oldestMs: 500 })];
    expect(quotas(loads, small)).toEqual({ new: 1, a: 3 });
    expect(planAcquire('new', loads, small)).toEqual({ kind: 'steal', from: 'a' });
  });

  it('gives the first connections of a short budget to the members waiting longest, not the largest', () => {
    const loads = ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'].map((key, i) => load(key, { waiting: 1, recentNeed: 0, holdMs: 100 - i, waitedMs: i * 10 }));
    expect(quotas(loads, small)).toEqual({ m1: 0, m2: 0, m3: 1, m4: 1, m5: 1, m6: 1 });
  });
});

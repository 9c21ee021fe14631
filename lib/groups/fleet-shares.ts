// How a fleet budget's places follow demand across instances (issue 50): each instance measures
// its pools as one member of the fleet, as a pool group measures a member (connections in use,
// callers waiting, hold time, smoothed need), trades those figures through Redis, and runs the
// group's own planner over every instance's. An instance over its quota while another one's
// callers wait gives connections back: idle ones held for the minimum hold at once, busy ones as
// their callers leave. Their places go to the instance waiting in Redis for one.
import type { MemberSide } from '../core/index.js';
import { connectionsFor, type MemberLoad, planMembers } from './group-planner.js';

/** The figures an instance publishes, in this order (words of one string). */
const FIELDS = [
  'connections',
  'inUse',
  'stealable',
  'waiting',
  'holdMs',
  'oldestMs',
  'waitedMs',
  'recentNeed',
] as const satisfies readonly (keyof MemberLoad)[];

type Figures = { -readonly [F in (typeof FIELDS)[number]]: number } & { recurring: boolean };

/** `load` as the words another instance reads back with {@link decodeLoad}: the figures, then 1 if it calls now and then. */
export function encodeLoad(load: Figures): string {
  return [...FIELDS.map((f) => String(Math.round(load[f] * 100) / 100)), load.recurring ? '1' : '0'].join(' ');
}

/** An instance's figures as published; undefined when they are not (another version, or garbage). */
export function decodeLoad(key: string, words: string): MemberLoad | undefined {
  const values = words.split(' ').map(Number);
  // The recurring flag came after the figures: an instance without it says nothing of it.
  if (values.length < FIELDS.length || values.length > FIELDS.length + 1) return undefined;
  if (values.some((v) => !Number.isFinite(v) || v < 0)) return undefined;
  const load: Record<string, unknown> = { key };
  FIELDS.forEach((f, i) => (load[f] = values[i]));
  if (values[FIELDS.length] === 1) load.recurring = true;
  return load as unknown as MemberLoad;
}

/** How many of its usual gaps a pool that calls now and then keeps a place after its last call (as a group's member). */
const RECURRING_GAPS = 3;
/** A pool whose calls come further apart than this many minimum holds keeps no place between them. */
const RECURRING_HOLDS = 10;

/** When a pool on the budget was last called, and its usual gap between calls. */
interface Rhythm {
  lastCallAt: number;
  gapMs: number;
}

/**
 * This instance as one member of its fleet: every pool on the budget together, measured on each
 * exchange as the group measures a member on its tick.
 */
export class InstanceMeter {
  /** The pools on the budget that may have load: those that opened, asked or waited. */
  readonly sides = new Set<MemberSide>();
  /** Each pool's rhythm of calls, from the leases it released between measures. */
  readonly #rhythms = new WeakMap<MemberSide, Rhythm>();
  #recentNeed = 0;
  #holdMs = 0;
  #busyMs = 0;
  /** Leases each pool had released at the last measure. */
  readonly #released = new WeakMap<MemberSide, number>();

  /**
   * Whether `side` calls now and then, often enough that a place is worth keeping for it between
   * calls, and its next call is likely soon: as a group's member (see group-member.ts), its usual
   * gap within ten minimum holds and its last call within three gaps (measured to the exchange).
   */
  recurring(side: MemberSide, now: number, minHoldMs: number): boolean {
    const r = this.#rhythms.get(side);
    return r !== undefined && r.gapMs <= RECURRING_HOLDS * minHoldMs && now - r.lastCallAt < RECURRING_GAPS * r.gapMs;
  }

  /** The instance's load `now`; `intervalMs` since the last measure. Pools with nothing in them leave the set. */
  measure(now: number, intervalMs: number, minHoldMs: number): Figures {
    const figures: Figures = {
      connections: 0,
      inUse: 0,
      stealable: 0,
      waiting: 0,
      holdMs: 0,
      oldestMs: 0,
      waitedMs: 0,
      recentNeed: 0,
      recurring: false,
    };
    let released = 0;
    let most = 0;
    for (const side of this.sides) {
      most += side.maxSizeNow();
      const load = side.load(minHoldMs);
      const waiting = side.waiting();
      figures.connections += load.connections;
      figures.inUse += load.inUse;
      figures.stealable += load.stealable;
      figures.waiting += waiting;
      figures.oldestMs = Math.max(figures.oldestMs, load.oldestMs);
      figures.waitedMs = Math.max(figures.waitedMs, side.waitedMs());
      const total = side.counters.released;
      const calls = total - (this.#released.get(side) ?? total);
      released += calls;
      this.#released.set(side, total);
      if (calls > 0) this.#called(side, now, calls);
      if (this.recurring(side, now, minHoldMs)) figures.recurring = true;
      else if (load.connections === 0 && waiting === 0) this.sides.delete(side);
    }
    // Hold time by sampling, as the group's: busy time since the last sample over the leases released meanwhile.
    this.#busyMs += figures.inUse * intervalMs;
    if (released > 0 && this.#busyMs > 0) {
      const hold = this.#busyMs / released;
      this.#holdMs = this.#holdMs === 0 ? hold : 0.7 * this.#holdMs + 0.3 * hold;
      this.#busyMs = 0;
    }
    // No more than its pools may open: an instance at its maxSize is no hungrier for its waiters.
    const need = Math.min(connectionsFor(figures.inUse, figures.waiting, 1), Math.max(most, figures.connections));
    // Up fast, down fast: a burst elsewhere should not wait for this instance's need to fade.
    this.#recentNeed += (need - this.#recentNeed) * (need >= this.#recentNeed ? 0.5 : 0.7);
    figures.holdMs = this.#holdMs;
    figures.recentNeed = this.#recentNeed;
    return figures;
  }

  /** `side` released `calls` leases since the last measure: the gap since its last calls, over them, smoothed. */
  #called(side: MemberSide, now: number, calls: number): void {
    const r = this.#rhythms.get(side);
    if (r === undefined) {
      this.#rhythms.set(side, { lastCallAt: now, gapMs: Infinity });
      return;
    }
    const gap = (now - r.lastCallAt) / calls;
    r.gapMs = r.gapMs === Infinity ? gap : r.gapMs + (gap - r.gapMs) * (1 - 0.9 ** calls);
    r.lastCallAt = now;
  }
}

/** One instance as the last exchange heard it, and its quota in the plan. */
export interface FleetInstance {
  /** Its id (its leases' prefix in Redis). */
  readonly instance: string;
  /** Whether it is this process. */
  readonly self: boolean;
  /** Its connections, each with a place: open, opening or closing (as it last published them). */
  readonly connections: number;
  /**
   * Its places in Redis at the moment of the exchange: its connections' and the places granted
   * that no create has taken yet. Every instance's counted at that one moment, so together never
   * more than the budget (its `connections`, each published at its own moment, may be while places
   * move).
   */
  readonly places: number;
  /** Of those, serving callers. */
  readonly inUse: number;
  /** Callers waiting for a connection. */
  readonly waiting: number;
  /** How long its caller queued longest has waited, ms. */
  readonly waitedMs: number;
  /** Its part of the budget by demand. */
  readonly quota: number;
}

/** What the fleet's plan asks of this instance. */
export interface FleetShare {
  /** Every instance heard, this one first, then by id. */
  readonly fleet: readonly FleetInstance[];
  /** Instances heard, this one included. */
  readonly instances: number;
  /** This instance's quota of the budget. */
  readonly quota: number;
  /** Connections to give back now for instances whose callers wait (0: none). */
  readonly excess: number;
  /** Connections over the quota while another instance is hungry, given back or not. */
  readonly over: number;
  /** Callers waiting on the other instances. */
  readonly waitingElsewhere: number;
  /** More instances want a place than the budget has: none keeps a place it does not use (they take turns). */
  readonly short: boolean;
  /**
   * Another instance is hungry and this one holds at least its quota: it asks for no place until
   * the next plan, so that the places it gives back go to that instance, not back to itself.
   */
  readonly holdBack: boolean;
}

/** The share while nothing is known of the fleet: no moves, no holding back. */
export const UNKNOWN_SHARE: FleetShare = {
  fleet: [],
  instances: 0,
  quota: 0,
  excess: 0,
  over: 0,
  waitingElsewhere: 0,
  short: false,
  holdBack: false,
};

/**
 * This instance's share of the budget, planned by the group's planner over every instance's
 * figures. It gives connections up only while another instance is hungry (below its quota, with
 * callers waiting). One connection over only when that instance has less than half its quota, or
 * when this instance was over in the plans before (`overBefore` in a row): quotas near equal
 * demands move by one from plan to plan, and a connection should not follow each move.
 */
export function fleetShare(
  self: string,
  loads: readonly MemberLoad[],
  maxTotal: number,
  minHoldMs: number,
  overBefore = 0,
  /** Each instance's places in Redis, counted at one moment; an instance missing counts its connections. */
  places: ReadonlyMap<string, number> = new Map(),
): FleetShare {
  // Every instance counts with the fleet's mean hold time: instances of one service hold alike,
  // and one instance's hold, sampled on its exchanges, runs far from the others' on a busy machine
  // (52 ms against 24 for the same 20 ms calls), which would split the budget by the error. So the
  // budget goes by the connections each needs; an instance that has released no lease yet counts
  // with the mean too, not as a hold of nothing, which would leave it one place.
  const known = loads.filter((l) => l.holdMs > 0);
  const meanHold = known.reduce((sum, l) => sum + l.holdMs, 0) / Math.max(1, known.length);
  const weighed = (meanHold > 0 ? loads.map((l) => ({ ...l, holdMs: meanHold })) : [...loads])
    // Every instance plans alike only if ties fall alike (the planner keeps the order it is given
    // where demands tie): the connection held longest yields first, then by id.
    .sort((a, b) => a.oldestMs - b.oldestMs || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const plans = planMembers(weighed, { maxTotal, clientLimit: 1, minHoldMs });
  const byKey = new Map(loads.map((l) => [l.key, l]));
  const own = plans.find((p) => p.key === self);
  let waitingElsewhere = 0;
  let starving = false;
  let hungry = false;
  for (const plan of plans) {
    const load = byKey.get(plan.key)!;
    if (plan.key === self) continue;
    waitingElsewhere += load.waiting;
    if (plan.hunger !== 'hungry' || load.waiting === 0) continue;
    hungry = true;
    if (load.connections < plan.quota / 2) starving = true;
  }
  const fleet = plans
    .map((plan): FleetInstance => {
      const { connections, inUse, waiting, waitedMs = 0 } = byKey.get(plan.key)!;
      const held = places.get(plan.key) ?? connections;
      return {
        instance: plan.key,
        self: plan.key === self,
        connections,
        places: held,
        inUse,
        waiting,
        waitedMs,
        quota: plan.quota,
      };
    })
    .sort((a, b) => Number(b.self) - Number(a.self) || a.instance.localeCompare(b.instance));
  const quota = own?.quota ?? 0;
  const over = (byKey.get(self)?.connections ?? 0) - quota;
  const excess = hungry && (over >= 2 || (over >= 1 && (starving || overBefore >= 2))) ? over : 0;
  return {
    fleet,
    instances: loads.length,
    quota,
    excess,
    over: hungry ? Math.max(0, over) : 0,
    waitingElsewhere,
    short: plans.filter((p) => p.demand > 0).length > maxTotal,
    holdBack: hungry && over >= 0,
  };
}

// The planning of a pool group: many members (one per tenant or database) share one
// budget of connections. This file only plans shares; PlaceTransfers decides with them, and the group carries the decisions out. Every
// function is pure over a snapshot of the members' loads, so each decision can be tested on a
// hand-built state.
//
// Demand is "database time": the time a member's connections are busy, estimated as its mean
// hold time × the connections it needs (those in use and enough for its waiters, smoothed over
// the last few hundred ms when the group measures it). The
// budget is shared in proportion to demand (quotas); a member below its quota is hungry, one above
// it is overfull. Overfull members give connections up, their oldest first, but never one held for
// less than the minimum hold time, so connections do not thrash between members.

/** One member's load, as the group measures it. */
export interface MemberLoad {
  readonly key: string;
  /** Connections the member has: opening, idle and in use. */
  readonly connections: number;
  /** Of those, connections serving at least one caller. */
  readonly inUse: number;
  /** Idle connections the member has held for at least the minimum hold time: the ones that may be taken. */
  readonly stealable: number;
  /** Callers waiting for a connection of this member. */
  readonly waiting: number;
  /** Mean time a lease of this member is held, in ms; 0 before the first one. */
  readonly holdMs: number;
  /** How long the member has held its longest-held connection, in ms; 0 with none. */
  readonly oldestMs: number;
  /**
   * Connections the member needed lately, smoothed (the group samples it). With it, a burst does
   * not make a member hungry at once (it is served by its own connections first), so connections
   * do not thrash between members on every burst. Without it, the need of this instant counts.
   */
  readonly recentNeed?: number;
  /** How long its caller queued longest has waited, ms; 0 with none. Members that wait longer come first. */
  readonly waitedMs?: number;
  /**
   * It calls now and then, and its next call is likely soon: it keeps one connection it holds,
   * as a member in use does, rather than pay a connect for each call (a rare member beside a busy
   * one would otherwise wait for a connect on most of its calls while the busy one waits for none).
   */
  readonly recurring?: boolean;
}

/** What the planner weighs members by. */
export interface PlanSettings {
  /** Connections the whole group may have at once. */
  readonly maxTotal: number;
  /** Callers one connection serves at once (the members' `clientLimit`). */
  readonly clientLimit: number;
  /** The minimum hold time, ms: a member keeps a connection at least this long before it can be taken. */
  readonly minHoldMs: number;
}

export type Hunger = 'hungry' | 'satisfied' | 'overfull';

/** A member's share of the budget and how it stands against it. */
export interface MemberPlan {
  readonly key: string;
  readonly demand: number;
  readonly quota: number;
  readonly hunger: Hunger;
  /** How strongly it stands there: for a hungry member its demand; for an overfull one its extra connections, weighted by the age of its oldest one. */
  readonly score: number;
}

/** A lease held for no measured time still counts: without it, a member with only waiters would have no demand. */
const MIN_HOLD_ESTIMATE_MS = 1;

/** A smoothed need below this is none: a member that stopped is let go within a second. */
const NEED_RESIDUE = 0.05;

/** Connections that serve `inUse` busy ones and `waiting` callers, `clientLimit` to a connection. */
export function connectionsFor(inUse: number, waiting: number, clientLimit: number): number {
  return inUse + Math.ceil(waiting / clientLimit);
}

/**
 * Connections `load` needs: those in use and enough for its waiters; with a smoothed need, that
 * (rounded up), and at least one while callers wait with no connection.
 */
export function needOf(load: MemberLoad, settings: PlanSettings): number {
  if (load.recentNeed === undefined) return connectionsFor(load.inUse, load.waiting, settings.clientLimit);
  const least =
    (load.waiting > 0 && load.connections === 0) || (load.recurring === true && load.connections > 0) ? 1 : 0;
  return Math.max(Math.ceil(load.recentNeed - NEED_RESIDUE), least);
}

/** The member's demand in database time: mean hold time × the connections it needs. */
export function demandOf(load: MemberLoad, settings: PlanSettings): number {
  return Math.max(load.holdMs, MIN_HOLD_ESTIMATE_MS) * needOf(load, settings);
}

/**
 * The budget shared in proportion to demand, never giving a member more than it needs (what one
 * does not need goes to the others), and at least one connection to every member with demand
 * while the budget has one for each. Whole connections: the largest remainders get the rest.
 */
export function quotasOf(loads: readonly MemberLoad[], settings: PlanSettings): Map<string, number> {
  const quotas = new Map<string, number>(loads.map((l) => [l.key, 0]));
  let open = loads.filter((l) => needOf(l, settings) > 0);
  let budget = settings.maxTotal;
  // A member with demand first gets one connection; if the budget is short, those waiting longest
  // first (so every member gets its turn), then the largest demands.
  for (const load of [...open].sort(
    (a, b) => (b.waitedMs ?? 0) - (a.waitedMs ?? 0) || demandOf(b, settings) - demandOf(a, settings),
  )) {
    if (budget === 0) break;
    quotas.set(load.key, 1);
    budget--;
  }
  open = open.filter((l) => quotas.get(l.key)! < needOf(l, settings));
  // Then water-filling: shares in proportion to demand, capped at need, until the budget or the need runs out.
  while (budget > 0 && open.length > 0) {
    const total = open.reduce((sum, l) => sum + demandOf(l, settings), 0);
    const shares = open.map((l) => {
      const room = needOf(l, settings) - quotas.get(l.key)!;
      const exact = Math.min(room, (budget * demandOf(l, settings)) / total);
      return { load: l, whole: Math.floor(exact), rest: exact - Math.floor(exact), room };
    });
    let given = 0;
    for (const s of shares) {
      quotas.set(s.load.key, quotas.get(s.load.key)! + s.whole);
      given += s.whole;
    }
    // What the whole connections left of the shares goes by largest remainder (then demand), in
    // this round: shares of 3.3, 3.3, 2.7 and 2.7 make 3, 3, 3 and 3, where flooring now and
    // sharing the rest again next round would give the rest to the largest demands (4, 4, 2, 2).
    let rest = Math.min(budget - given, Math.round(shares.reduce((sum, s) => sum + s.rest, 0)));
    shares.sort((a, b) => b.rest - a.rest || demandOf(b.load, settings) - demandOf(a.load, settings));
    for (const s of shares) {
      if (rest === 0) break;
      if (s.room - s.whole <= 0) continue;
      quotas.set(s.load.key, quotas.get(s.load.key)! + 1);
      given++;
      rest--;
    }
    budget -= given;
    open = open.filter((l) => quotas.get(l.key)! < needOf(l, settings));
    if (given === 0) break;
  }
  return quotas;
}

/** Every member's quota, hunger and score. */
export function planMembers(loads: readonly MemberLoad[], settings: PlanSettings): MemberPlan[] {
  const quotas = quotasOf(loads, settings);
  return loads.map((load) => {
    const quota = quotas.get(load.key)!;
    const demand = demandOf(load, settings);
    if (load.connections < quota) return { key: load.key, demand, quota, hunger: 'hungry', score: demand };
    if (load.connections > quota) {
      // More extra connections, and an older oldest one, make a better victim.
      const extra = load.connections - quota;
      return {
        key: load.key,
        demand,
        quota,
        hunger: 'overfull',
        score: extra * (1 + load.oldestMs / Math.max(settings.minHoldMs, 1)),
      };
    }
    return { key: load.key, demand, quota, hunger: 'satisfied', score: 0 };
  });
}

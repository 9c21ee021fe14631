import type { PoolHealth, PoolStats } from '../core/index.js';
import type { Hunger } from './group-planner.js';

/** A member in the group's stats. */
export interface PoolGroupMemberStats {
  readonly key: string;
  /** Its share of `maxTotal` now, from its demand. */
  readonly quota: number;
  readonly hunger: Hunger;
  /** Mean hold time the planner weighs the member by, ms. */
  readonly holdMs: number;
  /** How long its connections beyond its recent need stay idle before it gives them back, ms (learned; see `giveBackAfterMs`). */
  readonly giveBackMs: number;
  /** Connections it gave back after bursts. */
  readonly givenBack: number;
  readonly pool: PoolStats;
}

/** What `group.stats()` returns. */
export interface PoolGroupStats {
  readonly name: string;
  readonly maxTotal: number;
  /** Callers one member connection serves at once. */
  readonly clientLimit: number;
  /** Connections of every member, from the start of their create to the end of their close. */
  readonly total: number;
  /** Callers waiting in every member. */
  readonly waiting: number;
  /** Connections that changed member (taken from one to open for another) since the start. */
  readonly transfers: number;
  /** Connections members gave back to the server after a burst, since the start. */
  readonly givenBack: number;
  /** Members closed and forgotten since the start: idle past `memberIdleMs`, or making room for a new key at `maxMembers`. */
  readonly forgotten: number;
  /** Callers served now over what the budget can serve (`maxTotal` × `clientLimit`). */
  readonly utilization: number;
  readonly health: PoolHealth;
  /** The minimum hold in force: the configured floor, or the measured connect time if longer. */
  readonly minHoldMs: number;
  readonly members: PoolGroupMemberStats[];
}

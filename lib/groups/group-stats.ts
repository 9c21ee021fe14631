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

/** A member in a group's summary: what a page shows of it, read in O(1). */
export interface PoolGroupMemberRow {
  readonly key: string;
  /** Its share of `maxTotal` as last planned (at most once per rebalance tick). */
  readonly quota: number;
  readonly hunger: Hunger;
  /** Its connections, opening and closing ones included. */
  readonly connections: number;
  readonly clients: number;
  readonly waiting: number;
  readonly health: PoolHealth;
  /** Mean hold time the planner weighs the member by, ms. */
  readonly holdMs: number;
}

/**
 * What `group.summary(rows)` returns: the group's figures as in `stats()`, the member count, and
 * the members most in trouble (waiting, hungry, busiest; then the most recently used), at most
 * `rows` of them. Its cost grows with the members by a few reads each, not by a pool report each.
 */
export interface PoolGroupSummary extends Omit<PoolGroupStats, 'members'> {
  readonly memberCount: number;
  /** Ready connections of every member, and the callers they serve. */
  readonly ready: number;
  readonly clients: number;
  /** The last error of the most recently used member that has one, credentials hidden. */
  readonly lastError: string | undefined;
  /** Members below their share with callers waiting. */
  readonly hungry: number;
  readonly members: PoolGroupMemberRow[];
}

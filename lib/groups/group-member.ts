import type { ConnectionPool, MemberSide } from '../core/index.js';
import type { GiveBack } from './give-back.js';
import { connectionsFor } from './group-planner.js';
import type { TransferMember } from './place-transfers.js';

/** One member: a pool of one key (tenant, database), and what the group measures of it. */
export interface Member<T> extends TransferMember {
  readonly key: string;
  readonly pool: ConnectionPool<T>;
  readonly side: MemberSide;
  /** Mean hold time of its leases, ms (sampled: connection-busy time over releases). */
  holdMs: number;
  /** `released` at the last sample, and the connection-busy time since. */
  lastReleased: number;
  busyMs: number;
  /** Connections it needed lately (in use, and for its waiters), smoothed over the group's ticks. */
  recentNeed: number;
  /**
   * The same, rising as slowly but falling faster (70 % a tick): what it keeps when it gives a
   * burst back, so a burst's connections go back within about half a second of its end. Quotas
   * follow the slower one: a member whose need dips between its callers keeps its share.
   */
  keptNeed: number;
  /** When it was last asked for a connection. */
  lastUsed: number;
  /** The time between its asks, smoothed over the last few (Infinity before the second). */
  gapMs: number;
  /** How soon it gives a burst's idle connections back, as it learns its rhythm. */
  readonly giveBack: GiveBack;
}

/** How many of its usual gaps a member that calls now and then keeps a place after its last call. */
const RECURRING_GAPS = 3;
/** A member whose calls come further apart than this many minimum holds keeps no place between them. */
const RECURRING_HOLDS = 10;

/**
 * Whether `m` calls often enough that a place is worth keeping for it between calls, and its next
 * call is likely soon. Its usual gap between calls is within ten minimum holds (the minimum hold
 * is at least the slowest connect): a place it lost would cost its next call a connect, and a
 * place kept costs the others at most ten connects' worth of its time. And its last call is
 * within three usual gaps (for gaps drawn at random, a next call 19 times in 20).
 */
export function recurring<T>(m: Member<T>, now: number, minHoldMs: number): boolean {
  return m.gapMs <= RECURRING_HOLDS * minHoldMs && now - m.lastUsed < RECURRING_GAPS * m.gapMs;
}

/**
 * The group's tick, for one member: its connection-busy time and smoothed need, and its hold time
 * by sampling, off the hot path: the busy time since the last sample (connections in use × the
 * time between ticks) over the leases released meanwhile.
 */
export function measureMember<T>(m: Member<T>, intervalMs: number, clientLimit: number): void {
  const inUse = m.side.load(Infinity).inUse;
  m.busyMs += inUse * intervalMs;
  const need = connectionsFor(inUse, m.side.waiting(), clientLimit);
  m.recentNeed = 0.7 * m.recentNeed + 0.3 * need;
  m.keptNeed += (need - m.keptNeed) * (need >= m.keptNeed ? 0.3 : 0.7);
  const released = m.side.counters.released - m.lastReleased;
  if (released > 0 && m.busyMs > 0) {
    const hold = m.busyMs / released;
    m.holdMs = m.holdMs === 0 ? hold : 0.7 * m.holdMs + 0.3 * hold;
    m.busyMs = 0;
    m.lastReleased = m.side.counters.released;
  }
}

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
  /** When it was last asked for a connection. */
  lastUsed: number;
  /** How soon it gives a burst's idle connections back, as it learns its rhythm. */
  readonly giveBack: GiveBack;
}

/**
 * The group's tick, for one member: its connection-busy time and smoothed need, and its hold time
 * by sampling, off the hot path: the busy time since the last sample (connections in use × the
 * time between ticks) over the leases released meanwhile.
 */
export function measureMember<T>(m: Member<T>, intervalMs: number, clientLimit: number): void {
  const inUse = m.side.load(Infinity).inUse;
  m.busyMs += inUse * intervalMs;
  m.recentNeed = 0.7 * m.recentNeed + 0.3 * connectionsFor(inUse, m.side.waiting(), clientLimit);
  const released = m.side.counters.released - m.lastReleased;
  if (released > 0 && m.busyMs > 0) {
    const hold = m.busyMs / released;
    m.holdMs = m.holdMs === 0 ? hold : 0.7 * m.holdMs + 0.3 * hold;
    m.busyMs = 0;
    m.lastReleased = m.side.counters.released;
  }
}

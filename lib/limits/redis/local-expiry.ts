import { EarliestTimer, type Timers } from '../../core/index.js';
import type { Held } from './redis-calls.js';

/** Latest local expiry is this much before the TTL: clock rates and Redis's own TIME may drift. */
const EXPIRY_MARGIN = 0.02;

/** Why a lease is lost when its local expiry passes. */
export const LOCALLY_EXPIRED =
  'no heartbeat confirmed it within its TTL (Redis stalled or was unreachable, or this process was blocked): Redis may have given its slot away';

/**
 * The local expiry of held leases: a holder stops counting on a lease once the call that last
 * confirmed it was sent a TTL ago (less a margin) on this instance's own clock, before Redis could
 * give its slot away, whatever Redis does. One timer, at the earliest expiry.
 */
export class LocalExpiry {
  readonly #timer: EarliestTimer;

  constructor(
    readonly timers: Timers,
    readonly ttlMs: number,
    /** Every held lease. */
    readonly held: ReadonlyMap<string, Held>,
    /** Called for each lease whose expiry passed. */
    readonly lapsed: (held: Held) => void,
  ) {
    this.#timer = new EarliestTimer(timers, () => this.#expire());
  }

  /** The local expiry of a lease confirmed by a call sent at `sentAt`. */
  after(sentAt: number): number {
    return sentAt + this.ttlMs - Math.max(1, this.ttlMs * EXPIRY_MARGIN);
  }

  /** A lease became held (or its expiry moved earlier). */
  watch(held: Held): void {
    this.#timer.atLatest(held.expiresAt);
  }

  /** Expiries moved (a heartbeat confirmed leases): the timer moves to the earliest. */
  rearm(): void {
    let earliest = Infinity;
    for (const h of this.held.values()) if (h.expiresAt < earliest) earliest = h.expiresAt;
    this.#timer.set(earliest);
  }

  stop(): void {
    this.#timer.stop();
  }

  /**
   * Loses now the leases whose expiry passed, whether or not the timer had its turn: after a freeze
   * the heartbeat's timer may run first, and a quarantine would have Redis refresh them.
   */
  expireDue(): void {
    // The timer is set for the earliest expiry: before it, none is due (a heartbeat of many leases pays nothing).
    if (this.#timer.at <= this.timers.now()) this.#expire();
  }

  /** Leases whose confirmation is older than a TTL: Redis may have given their slots away. */
  #expire(): void {
    const now = this.timers.now();
    for (const h of [...this.held.values()]) if (h.expiresAt <= now) this.lapsed(h);
    this.rearm();
  }
}

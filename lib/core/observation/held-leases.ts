import type { PoolLogger } from '../common/index.js';
import { LinkedQueue } from '../waiting/index.js';

/** @internal How the tracker expires a lease held too long. */
export const kExpire = Symbol('expire');

/** What the tracker asks of a held lease when it is held too long. */
export interface HeldLease {
  /** Aborts the lease's signal with `reason`, and lets its admission slot lapse. */
  [kExpire](reason: Error): void;
}

/** One lease being held, in the order leases were checked out. */
export class Hold {
  prev: Hold | null = null;
  next: Hold | null = null;
  queued = false;
  /** Warned of as a possible leak. */
  warned = false;
  /** Past maxHoldMs, its signal aborted. */
  expired = false;

  constructor(
    readonly lease: HeldLease,
    readonly connectionId: number,
    /** When it was checked out. */
    readonly at: number,
    /** Where it was checked out, when leak detection is on. */
    readonly stack: string | undefined,
  ) {}
}

/**
 * The leases a pool has handed out and not had back, oldest first (a linked queue: add and
 * remove are O(1)), kept when `leakDetectionMs` or `maxHoldMs` is set. The house-keeper's sweep
 * warns of leases held past `leakDetectionMs` (once each, with the stack of the code that took
 * them) and expires those held past `maxHoldMs`; the release of a lease warned of says how late
 * it came back.
 */
export class HeldLeases {
  readonly #held = new LinkedQueue<Hold>();

  constructor(
    readonly pool: string,
    /** The pool's counters: `leaks` and `expiredHolds` are counted here. */
    readonly counters: { leaks: number; expiredHolds: number },
    readonly leakDetectionMs: number,
    readonly maxHoldMs: number,
    readonly logger: PoolLogger,
    readonly makeExpiry: (heldMs: number) => Error,
  ) {}

  /** Whether checkouts capture their stack (leak detection is on). */
  get capturesStacks(): boolean {
    return this.leakDetectionMs !== Infinity;
  }

  /** Where the caller is now, while leak detection is on. */
  here(): string | undefined {
    return this.capturesStacks ? new Error('acquired here').stack : undefined;
  }

  /** `stack`: where the caller asked, if it waited (else where it is now). */
  add(lease: HeldLease, connectionId: number, at: number, stack = this.here()): Hold {
    const hold = new Hold(lease, connectionId, at, stack);
    this.#held.push(hold);
    return hold;
  }

  /** The lease is back; `now` says how late, if it was warned of. */
  remove(hold: Hold, now: number): void {
    this.#held.remove(hold);
    if (hold.warned)
      this.logger.warn(
        `pool "${this.pool}": the lease of connection ${hold.connectionId} reported as a possible leak came back after ${Math.round(now - hold.at)} ms`,
      );
  }

  /** Age of the lease held longest, ms; undefined with none. */
  oldestMs(now: number): number | undefined {
    return this.#held.head === null ? undefined : now - this.#held.head.at;
  }

  /** Warns of leases held past leakDetectionMs and expires those past maxHoldMs; oldest first, so it stops at the first young one. */
  sweep(now: number): void {
    const young = Math.min(this.leakDetectionMs, this.maxHoldMs);
    for (let h = this.#held.head; h !== null && now - h.at >= young; h = h.next) {
      const age = now - h.at;
      if (!h.warned && age >= this.leakDetectionMs) {
        h.warned = true;
        this.counters.leaks++;
        const where = (h.stack ?? '').replace(/^Error: acquired here\n/, '');
        this.logger.warn(
          `pool "${this.pool}": a lease of connection ${h.connectionId} has been held for ${Math.round(age)} ms (leakDetectionMs ${this.leakDetectionMs}), a possible leak; acquired:\n${where}`,
        );
      }
      if (!h.expired && age >= this.maxHoldMs) {
        h.expired = true;
        this.counters.expiredHolds++;
        h.lease[kExpire](this.makeExpiry(age));
      }
    }
  }
}

import { randomUUID } from 'node:crypto';
import {
  type Admission,
  type AdmissionRequest,
  type Clock,
  LeaseLostError,
  type PoolLogger,
  type Timers,
} from '../../core/index.js';
import type { LimiterCounters } from '../local/index.js';
import { LocalExpiry, LOCALLY_EXPIRED } from './local-expiry.js';
import type { Held } from './redis-calls.js';
import { keyNameOf, type RedisKeys } from './redis-scripts.js';

/** What the leases ask of their limiter. */
export interface LeasesHost {
  readonly clock: Clock;
  readonly logger: PoolLogger;
  readonly counters: LimiterCounters;
  /** Its holder gave `held` back (lost or not): local counts, Redis, waiters. */
  released(held: Held): void;
}

/**
 * The leases this instance holds on Redis: their ids (fresh per admission), the admissions handed
 * out for them, and their loss. A lease is lost when a heartbeat finds Redis no longer has it, or
 * when its local expiry passes: the call that last confirmed it was sent a TTL ago on this
 * instance's clock. The local expiry is checked by a timer and, so that a process frozen past the
 * TTL (SIGSTOP, a blocked loop) learns it before its own callbacks go on, on every read of a
 * lease's signal and at its release.
 *
 * A lost lease's holder is told to stop, but until it releases the lease its work may still run
 * (a busy connection closes only as its caller leaves). With `countLapsed` (a FleetBudget's places,
 * which are connections), such a lease is `lapsed`, and heartbeats register it again, so that Redis
 * counts it as soon as Redis can hear of it (after a failover, say, where the quarantine then
 * holds new admissions back until it is counted). One expired at the pool's maxHoldMs is not: it
 * lapses at its TTL everywhere.
 */
export class RedisLeases {
  /** Held leases by id; a lost one leaves at once (it still counts locally until released). */
  readonly held = new Map<string, Held>();
  /** With `countLapsed`: lost leases not yet released, which heartbeats register again. */
  readonly lapsed = new Map<string, Held>();
  countLapsed = false;
  /** This instance's part of every lease id. */
  readonly instance = randomUUID().slice(0, 8);
  readonly #expiry: LocalExpiry;
  #next = 1;

  constructor(
    timers: Timers,
    ttlMs: number,
    readonly keys: RedisKeys,
    readonly host: LeasesHost,
  ) {
    this.#expiry = new LocalExpiry(timers, ttlMs, this.held, (h) => this.lose(h.id, LOCALLY_EXPIRED));
  }

  /**
   * A lease with a fresh id, not yet held. `viaRedis`: asked of Redis (false: admitted under the
   * local fallback); `cls`: its priority class, undefined without classes (see redis-scripts).
   */
  create(request: AdmissionRequest, key: string | undefined, viaRedis: boolean, keyLimit: number, cls?: number): Held {
    const id = cls === undefined ? `${this.instance}:${this.#next++}` : `${this.instance}:${this.#next++}^${cls}`;
    const keyName = key === undefined ? undefined : keyNameOf(key);
    return {
      id,
      key,
      keyLimit,
      cls: cls ?? 0,
      classSet: cls === undefined ? undefined : this.keys.classSetPrefix + cls,
      keySet: keyName === undefined ? this.keys.global : this.keys.keySetPrefix + keyName,
      member: keyName === undefined ? id : `${id}|${keyName}`,
      pool: request.pool,
      viaRedis,
      fence: undefined,
      lost: new AbortController(),
      claimed: false,
      expiresAt: Infinity,
    };
  }

  /** The local expiry of a lease confirmed by a call sent at `sentAt`. */
  expiryAfter(sentAt: number): number {
    return this.#expiry.after(sentAt);
  }

  /**
   * Records a held lease (already in the local counts) and makes its admission, counted once
   * {@link claim} says it reached its caller.
   */
  admitted(held: Held): Admission {
    this.held.set(held.id, held);
    this.#expiry.watch(held);
    let released = false;
    const fresh = () => this.#fresh(held);
    return {
      id: held.id,
      fence: held.fence,
      // Read first thing after a freeze, before the expiry's timer had its turn: the local clock decides.
      get signal() {
        fresh();
        return held.lost.signal;
      },
      // Held past the pool's maxHoldMs: no longer refreshed, so it lapses at its TTL everywhere.
      expire: () => {
        if (!released)
          this.lose(held.id, "held past the pool's maxHoldMs; it is no longer refreshed and lapses at its TTL", false);
      },
      release: () => {
        if (released) return;
        released = true;
        // A frozen process can run the work's own timers before the expiry's: still reported.
        fresh();
        this.held.delete(held.id);
        this.lapsed.delete(held.id);
        if (held.claimed) this.host.counters.released++;
        this.host.released(held);
      },
    };
  }

  /** The admission reached its caller: counted as admitted, and as released at its release. */
  claim(admission: Admission): void {
    const held = this.held.get(admission.id) ?? this.lapsed.get(admission.id);
    if (held === undefined) return;
    held.claimed = true;
    this.host.counters.admitted++;
  }

  /** Loses the leases whose local expiry passed (see LocalExpiry.expireDue): before a heartbeat is sent. */
  expireDue(): void {
    this.#expiry.expireDue();
  }

  /** A heartbeat sent at `sentAt` confirmed `leases` (those still held): their expiry moves on. */
  confirmed(leases: Held[], sentAt: number): void {
    const expiresAt = this.#expiry.after(sentAt);
    for (const h of leases) {
      if (!this.held.has(h.id)) continue; // released, or lapsed: registered again each time
      h.viaRedis = true;
      h.expiresAt = expiresAt;
    }
    this.#expiry.rearm();
  }

  /**
   * The lease is lost: out of the held ones, counted, logged, and its signal aborted. `register`:
   * registered again by heartbeats until its holder releases it (see `lapsed`).
   */
  lose(id: string, why: string, register = true): void {
    const held = this.held.get(id);
    if (held === undefined) return;
    this.held.delete(id); // it still counts locally until its holder releases it
    if (register && this.countLapsed) {
      held.viaRedis = false;
      this.lapsed.set(id, held);
    }
    this.host.counters.lost++;
    const error = new LeaseLostError(held.pool, id, why);
    this.host.logger.warn(error.message);
    held.lost.abort(error);
  }

  /** The limiter closes: no more expiry, and every held lease's work told to stop. */
  close(): void {
    this.#expiry.stop();
    for (const held of this.held.values()) {
      held.lost.abort(new LeaseLostError(held.pool, held.id, 'the limiter closed and gave its slot back'));
    }
  }

  /** Loses `held` now if its local expiry passed: a freeze may have outlived its TTL. */
  #fresh(held: Held): void {
    if (this.held.get(held.id) === held && this.host.clock.now() >= held.expiresAt) this.lose(held.id, LOCALLY_EXPIRED);
  }
}

import type { Admission } from './admission.js';
import { kExpire, type Hold } from './held-leases.js';
import type { SharedConnection } from './shared-connection.js';

/** @internal The pool's side of a lease: a release. */
export const kCheckin = Symbol('checkin');

/** @internal The pool's side of a lease: a release of a connection its user failed. */
export const kCheckinFailed = Symbol('checkinFailed');

/** @internal Ties the limiter's admission to a lease, released with it. */
export const kAdmitted = Symbol('admitted');

/** @internal Ties a lease to its place among the held leases (leak detection, maxHoldMs). */
export const kHeld = Symbol('held');

/** @internal */
export interface LeaseOwner<T> {
  /** `since`: when the lease began, when its hold is timed (metrics on); `hold`: its place among the held leases, when tracked. */
  [kCheckin](conn: SharedConnection<T>, since: number | undefined, hold: Hold | undefined): void;
  [kCheckinFailed](conn: SharedConnection<T>, failure: unknown, since: number | undefined, hold: Hold | undefined): void;
}

const neverAborted = new AbortController().signal;

/**
 * One caller's claim on a connection, from `acquire()` to `release()` (or `fail()`).
 * Release is idempotent: a second call does nothing. Supports `using` / `await using`.
 */
export class Lease<T> {
  #owner: LeaseOwner<T>;
  #conn: SharedConnection<T>;
  #done = false;
  #admission: Admission | undefined;
  readonly #since: number | undefined;
  #hold: Hold | undefined;
  /** Aborted past maxHoldMs (made only when the pool has one). */
  #expiry: AbortController | undefined;
  /** The admission's signal and the expiry together, once both exist and were asked for. */
  #both: AbortSignal | undefined;

  /** @internal Leases come from `pool.acquire()`; `since` when the pool times holds. */
  constructor(owner: LeaseOwner<T>, conn: SharedConnection<T>, since?: number) {
    this.#owner = owner;
    this.#conn = conn;
    this.#since = since;
  }

  /** The pooled connection. Do not keep it past `release()`. */
  get connection(): T {
    return this.#conn.value as T;
  }

  /** Id of the connection, as in `pool.stats().connections`. */
  get connectionId(): number {
    return this.#conn.id;
  }

  /**
   * Aborted when the work should stop: the pool's admission limiter lost this lease's slot (a
   * Redis lease whose TTL lapsed, `LeaseLostError`), or the lease was held past the pool's
   * `maxHoldMs` (`LeaseHeldTooLongError`). Never aborted without a limiter or `maxHoldMs`.
   */
  get signal(): AbortSignal {
    const admitted = this.#admission?.signal;
    const expiry = this.#expiry?.signal;
    if (expiry === undefined) return admitted ?? neverAborted;
    if (admitted === undefined) return expiry;
    return (this.#both ??= AbortSignal.any([expiry, admitted]));
  }

  /** @internal */
  [kAdmitted](admission: Admission): void {
    this.#admission = admission;
  }

  /** @internal Tracks the lease among the held ones; `expiring`: it may be expired (maxHoldMs). */
  [kHeld](hold: Hold, expiring: boolean): void {
    this.#hold = hold;
    if (expiring) this.#expiry = new AbortController();
  }

  /** @internal Held past maxHoldMs: the signal aborts, the admission slot is let lapse. */
  [kExpire](reason: Error): void {
    if (this.#done) return;
    this.#expiry?.abort(reason);
    this.#admission?.expire?.(reason.message);
  }

  /** Whether `release()` or `fail()` was called. */
  get released(): boolean {
    return this.#done;
  }

  /**
   * Whether the lease still holds an open connection: false once released, failed, or force-closed
   * by `pool.close()` after its grace period.
   */
  get live(): boolean {
    const state = this.#conn.state;
    return !this.#done && state !== 'closing' && state !== 'closed';
  }

  /** Gives the connection back. Calling it again does nothing. */
  release(): void {
    if (this.#done) return;
    this.#done = true;
    this.#owner[kCheckin](this.#conn, this.#since, this.#hold);
    this.#admission?.release();
  }

  /** Gives the connection back and retires it: it takes no new clients and closes once idle. */
  fail(err?: unknown): void {
    if (this.#done) return;
    this.#done = true;
    this.#owner[kCheckinFailed](this.#conn, err, this.#since, this.#hold);
    this.#admission?.release();
  }

  [Symbol.dispose](): void {
    this.release();
  }

  [Symbol.asyncDispose](): Promise<void> {
    this.release();
    return Promise.resolve();
  }
}

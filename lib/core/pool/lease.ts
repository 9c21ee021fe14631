import type { Admission, CallResult, HandleLending } from '../contracts/index.js';
import { kExpire, type Hold } from '../observation/index.js';
import { LeaseHandle, Lender, type SharedConnection } from '../connections/index.js';

/** @internal The pool's side of a lease: a release. */
export const kCheckin = Symbol('checkin');

/** @internal A release after the caller's code threw (not fatally): the connector's reset is told. */
export const kReleaseThrown = Symbol('releaseThrown');

/** @internal The pool's side of a lease: a release of a connection its user failed. */
export const kCheckinFailed = Symbol('checkinFailed');

/** @internal The connection is to be retired when the lease ends (a unit of work inside its scope found it broken). */
export const kRetireAtEnd = Symbol('retireAtEnd');

/** @internal `lease[kRaw]`: the connection itself, never its handle (the pool's and a driver face's own use). */
export const kRaw = Symbol('raw');

/** @internal Ties the limiter's admission to a lease, released with it. */
export const kAdmitted = Symbol('admitted');
/** @internal Tells the admission how the call under the lease ended (see Admission.ended). */
export const kEnded = Symbol('ended');

/**
 * @internal What a pool that tracks its leases keeps on one (leak detection, maxHoldMs): one
 * object, made only then, so a plain or merely timed lease stays small.
 */
export class LeaseWatch {
  /** Its place among the held leases, when they are kept. */
  hold: Hold | undefined = undefined;
  /** Aborted past maxHoldMs (made only when the pool has one). */
  expiry: AbortController | undefined = undefined;
  /** The admission's signal and the expiry together, once both exist and were asked for. */
  both: AbortSignal | undefined = undefined;
}

/** @internal */
export interface LeaseOwner<T> {
  /** The pool's name. */
  readonly name: string;
  /** How each lease lends its holder a handle of its own (the connector's `lendsHandles`); undefined: it lends the connection. */
  readonly lending: HandleLending | undefined;
  /**
   * `watch`: what the pool keeps on the lease, when it tracks it; `since`: when the lease began,
   * when its hold is timed (NaN: not timed); `thrown`: the caller's code threw.
   */
  [kCheckin](conn: SharedConnection<T>, watch: LeaseWatch | undefined, since: number, thrown: boolean): void;
  [kCheckinFailed](conn: SharedConnection<T>, failure: unknown, watch: LeaseWatch | undefined, since: number): void;
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
  /** Set by {@link kRetireAtEnd}: the release retires the connection with this reason. */
  #retireAtEnd: unknown = undefined;
  #admission: Admission | undefined;
  readonly #watch: LeaseWatch | undefined;
  /** When it began, when its hold is timed; NaN otherwise. */
  readonly #since: number;
  /** The holder's handle on the connection, made on first read when the pool lends handles. */
  #handle: LeaseHandle<T & object> | undefined = undefined;

  /** @internal Leases come from `pool.acquire()`; `watch` when the pool tracks them, `since` when it times them. */
  constructor(owner: LeaseOwner<T>, conn: SharedConnection<T>, watch?: LeaseWatch, since = NaN) {
    this.#owner = owner;
    this.#conn = conn;
    this.#watch = watch;
    this.#since = since;
  }

  /**
   * The pooled connection. Do not keep it past `release()`: with a connector that lends handles
   * (the ready-made ones do), this is the lease's own handle on it, which refuses work once the
   * lease has ended (`LeaseEndedError`).
   */
  get connection(): T {
    const value = this.#conn.value as T;
    const lending = this.#owner.lending;
    if (lending === undefined || typeof value !== 'object' || value === null) return value;
    if (this.#handle === undefined) {
      const conn = this.#conn;
      const lender = (conn.lender ??= new Lender(this.#owner.name, lending));
      this.#handle = new LeaseHandle(value, this, lender);
    }
    return this.#handle.proxy as T;
  }

  /** @internal The connection itself, whatever the pool lends. */
  get [kRaw](): T {
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
    const watch = this.#watch;
    const expiry = watch?.expiry?.signal;
    if (expiry === undefined) return admitted ?? neverAborted;
    if (admitted === undefined) return expiry;
    return (watch!.both ??= AbortSignal.any([expiry, admitted]));
  }

  /**
   * The admission's fencing token, when the pool's limiter gives one (the Redis limiter does): it
   * grows with every admission across all instances. Pass it with each write to a store that
   * refuses tokens lower than the highest it has seen, and a holder frozen past its lease (whose
   * slot went to another) cannot overwrite the newer holder's work. Undefined otherwise.
   */
  get fence(): number | undefined {
    return this.#admission?.fence;
  }

  /** @internal */
  [kAdmitted](admission: Admission): void {
    this.#admission = admission;
  }

  /** @internal The call under this lease ended; its limiter may learn from it. A limiter's error never reaches the caller. */
  [kEnded](result: CallResult): void {
    const admission = this.#admission;
    if (admission?.ended === undefined || this.#done) return;
    try {
      admission.ended(result);
    } catch {
      // The limiter's own bug: the call's result stands.
    }
  }

  /** @internal Held past maxHoldMs: the signal aborts, the admission slot is let lapse. */
  [kExpire](reason: Error): void {
    if (this.#done) return;
    this.#watch?.expiry?.abort(reason);
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

  /** @internal The release retires the connection (see {@link kRetireAtEnd}). */
  [kRetireAtEnd](reason: unknown): void {
    this.#retireAtEnd ??= reason ?? new Error('retired by its scope');
  }

  /** Gives the connection back. Calling it again does nothing. */
  release(): void {
    if (this.#done) return;
    if (this.#retireAtEnd !== undefined) return this.fail(this.#retireAtEnd);
    this.#done = true;
    this.#handle?.end(this.#conn.value as T & object);
    this.#owner[kCheckin](this.#conn, this.#watch, this.#since, false);
    this.#admission?.release();
  }

  /** @internal `release()` after the caller's code threw an error that does not break the connection. */
  [kReleaseThrown](): void {
    if (this.#done) return;
    if (this.#retireAtEnd !== undefined) return this.fail(this.#retireAtEnd);
    this.#done = true;
    this.#handle?.end(this.#conn.value as T & object);
    this.#owner[kCheckin](this.#conn, this.#watch, this.#since, true);
    this.#admission?.release();
  }

  /** Gives the connection back and retires it: it takes no new clients and closes once idle. */
  fail(err?: unknown): void {
    if (this.#done) return;
    this.#done = true;
    this.#handle?.end(this.#conn.value as T & object);
    this.#owner[kCheckinFailed](this.#conn, err, this.#watch, this.#since);
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

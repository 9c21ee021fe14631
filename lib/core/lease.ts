import type { Admission } from './admission.js';
import type { SharedConnection } from './shared-connection.js';

/** @internal The pool's side of a lease. */
export const checkin = Symbol('checkin');

/** @internal Ties the limiter's admission to a lease, released with it. */
export const admitted = Symbol('admitted');

/** @internal */
export interface LeaseOwner<T> {
  [checkin](conn: SharedConnection<T>, failure: unknown, failed: boolean): void;
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

  /** @internal Leases come from `pool.acquire()`. */
  constructor(owner: LeaseOwner<T>, conn: SharedConnection<T>) {
    this.#owner = owner;
    this.#conn = conn;
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
   * Aborted when the pool's admission limiter lost this lease's slot (a Redis lease whose TTL
   * lapsed): the work should stop. Never aborted without a limiter.
   */
  get signal(): AbortSignal {
    return this.#admission?.signal ?? neverAborted;
  }

  /** @internal */
  [admitted](admission: Admission): void {
    this.#admission = admission;
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
    this.#owner[checkin](this.#conn, undefined, false);
    this.#admission?.release();
  }

  /** Gives the connection back and retires it: it takes no new clients and closes once idle. */
  fail(err?: unknown): void {
    if (this.#done) return;
    this.#done = true;
    this.#owner[checkin](this.#conn, err, true);
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

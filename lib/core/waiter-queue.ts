import type { Admission } from './admission.js';

/** The abort listener of a waiter that has a signal. */
export interface AbortHook {
  readonly signal: AbortSignal;
  readonly listener: () => void;
}

/** When a batch of waiters was dated: the waiters of a batch share it (see WaiterDeadlines). */
export interface Stamp {
  readonly at: number;
}

const unsettled = (): void => {};
/** The waiter whose promise is being made: one executor for every waiter, so no closure per caller. */
let forming: Waiter<unknown> | null = null;
function bind(resolve: (lease: unknown) => void, reject: (err: unknown) => void): void {
  forming!.resolve = resolve;
  forming!.reject = reject;
}

/** A caller queued for a connection. Links make removal O(1). */
export class Waiter<L> {
  prev: Waiter<L> | null = null;
  next: Waiter<L> | null = null;
  queued = false;
  /** Set only for callers with a signal, so the common waiter stays small. */
  abort: AbortHook | null = null;
  /** When the waiter was dated; null until the pool stamps it. */
  stamp: Stamp | null = null;
  /** Where the caller asked, while leak detection is on (the stack of a later checkout is the pool's). */
  stack: string | undefined = undefined;
  resolve: (lease: L) => void = unsettled;
  reject: (err: unknown) => void = unsettled;
  /** The admission of a caller a limiter admitted: its lease takes it over; a caller that fails gives it back. */
  admission: Admission | undefined = undefined;

  constructor(readonly timeoutMs: number) {}

  /** Absolute deadline on the pool's clock; `Infinity` until the pool stamps it. */
  get deadline(): number {
    return this.stamp === null ? Infinity : this.stamp.at + this.timeoutMs;
  }

  /** Fails the caller, giving its admission back first. */
  fail(err: unknown): void {
    const admission = this.admission;
    if (admission !== undefined) {
      this.admission = undefined;
      admission.release();
    }
    this.reject(err);
  }

  /** The caller's promise: `resolve` and `reject` settle it. Call once. */
  promise(): Promise<L> {
    forming = this as Waiter<unknown>;
    const promise = new Promise<L>(bind as (resolve: (lease: L) => void, reject: (err: unknown) => void) => void);
    forming = null;
    return promise;
  }
}

/** A node of a {@link LinkedQueue}: the links live on the node, so nothing is allocated per entry. */
export interface QueueNode<N> {
  prev: N | null;
  next: N | null;
  queued: boolean;
}

/** FIFO whose push, and remove (of the head or any other), are O(1): the pool's waiters, the leases it has out. */
export class LinkedQueue<N extends QueueNode<N>> {
  #head: N | null = null;
  #tail: N | null = null;
  #length = 0;

  get length(): number {
    return this.#length;
  }

  get head(): N | null {
    return this.#head;
  }

  push(w: N): void {
    w.queued = true;
    w.prev = this.#tail;
    w.next = null;
    if (this.#tail === null) this.#head = w;
    else this.#tail.next = w;
    this.#tail = w;
    this.#length++;
  }

  /** Takes `w` out; a no-op if it is not queued. */
  remove(w: N): void {
    if (!w.queued) return;
    w.queued = false;
    if (w.prev === null) this.#head = w.next;
    else w.prev.next = w.next;
    if (w.next === null) this.#tail = w.prev;
    else w.next.prev = w.prev;
    w.prev = w.next = null;
    this.#length--;
  }
}

/** The callers waiting for a connection, first come first served. */
export class WaiterQueue<L> extends LinkedQueue<Waiter<L>> {}

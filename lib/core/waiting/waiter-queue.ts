import type { Admission } from '../contracts/index.js';

/** What few waiters have, kept off the common waiter: its abort listener, where its caller asked. */
export interface WaiterExtras {
  /** The caller's signal and the listener on it, while it waits (null once removed). */
  abort: { readonly signal: AbortSignal; readonly listener: () => void } | null;
  /** Where the caller asked, while leak detection is on (the stack of a later checkout is the pool's). */
  readonly stack: string | undefined;
}

/** When a batch of waiters was dated: the waiters of a batch share it (see WaiterDeadlines). */
export class Stamp {
  /** Infinity until the batch is dated (a waiter served before then waited less than a turn). */
  at = Infinity;
}

const unsettled = (): void => {};

/**
 * What a failed waiter's promise is resolved with: a thenable that rejects it with `err` once
 * adopted. Unlike `Promise.reject(err)` it makes nothing that could go unhandled when the promise
 * was settled already (then it is never adopted, and nothing happens, as with a second `reject`).
 */
function rejection(err: unknown): PromiseLike<never> {
  return {
    then: (_: unknown, reject?: (reason: unknown) => unknown) => reject?.(err),
  } as unknown as PromiseLike<never>;
}
/**
 * A caller queued for a connection. It carries no links: its queue keeps it in a ring of slots.
 * It is all that a waiting caller holds beyond its promise, and a deep queue's cost is the young
 * generation's collector copying what waiters hold, so it keeps the least: the promise's resolving
 * function only (a failure resolves it with a thenable that rejects), and what few waiters have apart.
 */
export class Waiter<L> {
  queued = false;
  /** The batch it was queued with, which dates it; null until it is queued. */
  stamp: Stamp | null = null;
  /** Settles the caller's promise: with its lease, or with a rejection ({@link fail}). */
  resolve: (value: L | PromiseLike<never>) => void = unsettled;
  /** The admission of a caller a limiter admitted: its lease takes it over; a caller that fails gives it back. */
  admission: Admission | undefined = undefined;
  /** Only for a caller with a signal, or while leak detection is on (each field costs every waiter). */
  extras: WaiterExtras | null = null;

  constructor(readonly timeoutMs: number) {}

  /** Absolute deadline on the pool's clock; `Infinity` until its batch is dated. */
  get deadline(): number {
    return this.stamp === null ? Infinity : this.stamp.at + this.timeoutMs;
  }

  /** When its batch was dated; undefined until then. */
  get since(): number | undefined {
    const at = this.stamp?.at;
    return at === Infinity ? undefined : at;
  }

  /** Fails the caller, giving its admission back first; on a waiter already settled it does nothing. */
  fail(err: unknown): void {
    const admission = this.admission;
    if (admission !== undefined) {
      this.admission = undefined;
      admission.release();
    }
    this.resolve(rejection(err));
  }

  /**
   * The caller's promise: `resolve` (and `fail`) settle it. Call once. (An executor written here,
   * a closure per caller, is faster than one executor shared by all waiters and handed the
   * waiter through a module variable.)
   */
  promise(): Promise<L> {
    return new Promise<L>((resolve) => {
      this.resolve = resolve;
    });
  }
}

/**
 * The callers waiting for a connection, first come first served, in a ring of slots (as a bare
 * semaphore's array): push and taking the head are O(1), and so is taking a waiter out from
 * anywhere else: it is only marked, and the head passes over it when it gets there (the ring is
 * compacted once marked slots outnumber waiting ones, so they cannot pile up).
 */
export class WaiterQueue<L> {
  #slots: (Waiter<L> | undefined)[] = new Array<Waiter<L> | undefined>(16).fill(undefined);
  /** The slot of the oldest entry, waiting or marked. */
  #first = 0;
  /** Slots in use, marked ones included. */
  #used = 0;
  /** Waiters still queued. */
  #length = 0;

  get length(): number {
    return this.#length;
  }

  /** Slots in use, those of waiters taken out but not yet passed over included. */
  get slotsInUse(): number {
    return this.#used;
  }

  /** The caller waiting longest, or null. */
  get head(): Waiter<L> | null {
    if (this.#length === 0) return null;
    const slots = this.#slots;
    const mask = slots.length - 1;
    let w = slots[this.#first]!;
    while (!w.queued) {
      slots[this.#first] = undefined;
      this.#first = (this.#first + 1) & mask;
      this.#used--;
      w = slots[this.#first]!;
    }
    return w;
  }

  push(w: Waiter<L>): void {
    if (this.#used === this.#slots.length) this.#resize(this.#slots.length * 2);
    w.queued = true;
    this.#slots[(this.#first + this.#used) & (this.#slots.length - 1)] = w;
    this.#used++;
    this.#length++;
  }

  /** The head, out of the queue; null when none waits. */
  shift(): Waiter<L> | null {
    const w = this.head;
    if (w === null) return null;
    w.queued = false;
    this.#slots[this.#first] = undefined;
    this.#first = (this.#first + 1) & (this.#slots.length - 1);
    this.#used--;
    if (--this.#length === 0 && this.#used > 0) this.#clear();
    return w;
  }

  /** Takes `w` out, wherever it is; a no-op if it is not queued. */
  remove(w: Waiter<L>): void {
    if (!w.queued) return;
    w.queued = false;
    this.#length--;
    const marked = this.#used - this.#length;
    if (this.#length === 0) this.#clear();
    else if (marked > 32 && marked > this.#length) this.#resize(this.#slots.length);
  }

  /** Calls `fn` on each waiter, in queue order. `fn` must not change the queue. */
  each(fn: (w: Waiter<L>) => void): void {
    const slots = this.#slots;
    const mask = slots.length - 1;
    for (let i = 0; i < this.#used; i++) {
      const w = slots[(this.#first + i) & mask]!;
      if (w.queued) fn(w);
    }
  }

  /** Calls `fn` on each waiter, in queue order, until it returns false. `fn` must not change the queue. */
  eachUntil(fn: (w: Waiter<L>) => boolean): void {
    if (this.head === null) return; // passes over the marked slots in front, once
    const slots = this.#slots;
    const mask = slots.length - 1;
    for (let i = 0; i < this.#used; i++) {
      const w = slots[(this.#first + i) & mask]!;
      if (w.queued && !fn(w)) return;
    }
  }

  /** The waiters, in queue order. */
  toArray(): Waiter<L>[] {
    const all: Waiter<L>[] = [];
    this.each((w) => all.push(w));
    return all;
  }

  /** No waiter is left: the slots of those taken out are let go (only the slots in use are touched). */
  #clear(): void {
    const mask = this.#slots.length - 1;
    for (let i = 0; i < this.#used; i++) this.#slots[(this.#first + i) & mask] = undefined;
    this.#first = 0;
    this.#used = 0;
  }

  /** Moves the waiting entries, in order, to the start of a ring of `size` slots (a power of two), dropping marked ones. */
  #resize(size: number): void {
    const waiting = this.toArray();
    const slots = new Array<Waiter<L> | undefined>(Math.max(size, 16)).fill(undefined);
    for (let i = 0; i < waiting.length; i++) slots[i] = waiting[i];
    this.#slots = slots;
    this.#first = 0;
    this.#used = waiting.length;
  }
}

/** A node of a {@link LinkedQueue}: the links live on the node, so nothing is allocated per entry. */
export interface QueueNode<N> {
  prev: N | null;
  next: N | null;
  queued: boolean;
}

/** FIFO whose push, and remove (of the head or any other), are O(1), with links on its nodes: the leases a pool has out, a group's waiting keys. */
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

import {
  type AdmissionRequest,
  type Clock,
  hookAbort,
  type TimerHandle,
  Timers,
  Waiter,
  WaiterQueue,
} from '../../core/index.js';

/** A caller waiting for a slot until its deadline. */
export interface SlotWaiter<V> {
  readonly request: AdmissionRequest;
  resolve(value: V): void;
}

/** A waiter of the engine's queue (O(1) removal anywhere), with its request and timer. */
class Entry<V> extends Waiter<V> implements SlotWaiter<V> {
  timer: TimerHandle | undefined = undefined;
  unhook: (() => void) | undefined = undefined;

  constructor(readonly request: AdmissionRequest) {
    super(request.timeoutMs);
  }
}

/** Callers waiting for a slot, first come first served; each leaves at its deadline or abort. */
export class SlotWaiters<V> {
  readonly #queue = new WaiterQueue<V>();
  /** Any wait from 0 to Infinity, whatever the clock's own timers can hold. */
  readonly #timers: Timers;

  constructor(clock: Clock) {
    this.#timers = new Timers(clock);
  }

  get length(): number {
    return this.#queue.length;
  }

  /** Waits until a slot is handed over (`resolve`), the request's deadline passes (rejects with `onTimeout()`), or its signal aborts. */
  wait(request: AdmissionRequest, onTimeout: () => Error): Promise<V> {
    const { timeoutMs, signal } = request;
    // An abort before the wait began fires no event: refuse now rather than at the deadline.
    if (signal?.aborted) return Promise.reject(signal.reason);
    const entry = new Entry<V>(request);
    const promise = entry.promise();
    // Whoever settles the entry (a slot, the deadline, an abort: resolve() or fail()) takes it out of the queue first.
    const resolve = entry.resolve;
    entry.resolve = (value) => {
      this.#leave(entry);
      resolve(value);
    };
    entry.timer = this.#timers.set(() => entry.fail(onTimeout()), timeoutMs);
    // Often the pool's close signal, shared by every waiter: hooked once, however many wait.
    if (signal !== undefined) entry.unhook = hookAbort(signal, () => entry.fail(signal.reason));
    this.#queue.push(entry);
    return promise;
  }

  /**
   * Hands slots over in arrival order: `grant` says what a waiter gets, `undefined` to pass over it
   * (its key is full) or `false` once no slot is left for anyone. It costs the waiters granted and
   * passed over, not a copy of the queue: a release in front of thousands of waiters serves one.
   */
  serve(grant: (w: SlotWaiter<V>) => V | undefined | false): void {
    let granted: [Entry<V>, V][] | undefined;
    // Granted first, settled after: settling takes a waiter out of the queue being read.
    this.#queue.eachUntil((w) => {
      const value = grant(w as Entry<V>);
      if (value === false) return false;
      if (value !== undefined) (granted ??= []).push([w as Entry<V>, value]);
      return true;
    });
    if (granted !== undefined) for (const [entry, value] of granted) entry.resolve(value);
  }

  /** The waiters in arrival order (a copy: serving one removes it). */
  snapshot(): SlotWaiter<V>[] {
    return this.#queue.toArray() as Entry<V>[];
  }

  /** Whether `waiter` is still waiting (not served, timed out or aborted). */
  has(waiter: SlotWaiter<V>): boolean {
    return (waiter as Entry<V>).queued;
  }

  /** Rejects every waiter. */
  rejectAll(err: Error): void {
    for (const entry of this.snapshot()) (entry as Entry<V>).fail(err);
  }

  #leave(entry: Entry<V>): void {
    this.#queue.remove(entry);
    this.#timers.clear(entry.timer);
    entry.unhook?.();
  }
}

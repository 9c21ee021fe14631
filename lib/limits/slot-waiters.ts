import { Timers, type AdmissionRequest, type Clock, type TimerHandle } from '../core/index.js';

/** A caller waiting for a slot until its deadline. */
export interface SlotWaiter<V> {
  readonly request: AdmissionRequest;
  resolve(value: V): void;
}

interface Entry<V> extends SlotWaiter<V> {
  reject(err: unknown): void;
  timer: TimerHandle | undefined;
  unhook: (() => void) | undefined;
}

/** Callers waiting for a slot, first come first served; each leaves at its deadline or abort. */
export class SlotWaiters<V> {
  readonly #entries: Entry<V>[] = [];
  /** Any wait from 0 to Infinity, whatever the clock's own timers can hold. */
  readonly #timers: Timers;

  constructor(clock: Clock) {
    this.#timers = new Timers(clock);
  }

  get length(): number {
    return this.#entries.length;
  }

  /** Waits until a slot is handed over (`resolve`), the request's deadline passes (rejects with `onTimeout()`), or its signal aborts. */
  wait(request: AdmissionRequest, onTimeout: () => Error): Promise<V> {
    const { timeoutMs, signal } = request;
    // An abort before the wait began fires no event: refuse now rather than at the deadline.
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<V>((resolve, reject) => {
      const entry: Entry<V> = {
        request,
        timer: undefined,
        unhook: undefined,
        resolve: (value) => {
          this.#leave(entry);
          resolve(value);
        },
        reject: (err) => {
          this.#leave(entry);
          reject(err);
        },
      };
      entry.timer = this.#timers.set(() => entry.reject(onTimeout()), timeoutMs);
      if (signal !== undefined) {
        const onAbort = () => entry.reject(signal.reason);
        signal.addEventListener('abort', onAbort, { once: true });
        entry.unhook = () => signal.removeEventListener('abort', onAbort);
      }
      this.#entries.push(entry);
    });
  }

  /** The waiters in arrival order (a copy: serving one removes it). */
  snapshot(): SlotWaiter<V>[] {
    return [...this.#entries];
  }

  /** Whether `waiter` is still waiting (not served, timed out or aborted). */
  has(waiter: SlotWaiter<V>): boolean {
    return this.#entries.includes(waiter as Entry<V>);
  }

  /** Rejects every waiter. */
  rejectAll(err: Error): void {
    for (const entry of [...this.#entries]) entry.reject(err);
  }

  #leave(entry: Entry<V>): void {
    const i = this.#entries.indexOf(entry);
    if (i >= 0) this.#entries.splice(i, 1);
    this.#timers.clear(entry.timer);
    entry.unhook?.();
  }
}

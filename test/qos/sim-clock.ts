import type { Clock, TimerHandle } from '../../lib/core/index.js';

interface Timer {
  readonly at: number;
  readonly seq: number;
  fn: (() => void) | undefined;
}

/** Lets every pending promise callback run: the microtask queue drains before a macrotask. */
const drain = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Virtual time for the QoS simulation: timers in a binary heap (a run fires tens of thousands),
 * fired in time order with every promise settled between two of them, so a simulated second
 * costs what the code under test costs and nothing of the wall clock.
 */
export class SimClock implements Clock {
  #now = 0;
  #seq = 0;
  readonly #heap: Timer[] = [];
  /** Timers fired so far. */
  fired = 0;

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const timer: Timer = { at: this.#now + Math.max(0, ms), seq: this.#seq++, fn };
    this.#push(timer);
    return timer;
  }

  clearTimeout(handle: TimerHandle): void {
    // Removed lazily: a cleared timer stays in the heap with no function.
    if (handle !== undefined && handle !== null) (handle as Timer).fn = undefined;
  }

  /** A promise that settles after `ms` of virtual time. */
  sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => this.setTimeout(resolve, ms));
  }

  /** Fires every timer due by `until`, in order, and leaves the clock at `until`. */
  async runUntil(until: number): Promise<void> {
    await drain();
    for (;;) {
      const next = this.#heap[0];
      if (next === undefined || next.at > until) break;
      this.#pop();
      if (next.fn === undefined) continue;
      this.#now = next.at;
      const fn = next.fn;
      next.fn = undefined;
      this.fired++;
      fn();
      await drain();
    }
    this.#now = Math.max(this.#now, until);
  }

  #before(a: Timer, b: Timer): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  #push(timer: Timer): void {
    const heap = this.#heap;
    let i = heap.push(timer) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  #pop(): void {
    const heap = this.#heap;
    const last = heap.pop()!;
    if (heap.length === 0) return;
    heap[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let best = i;
      if (l < heap.length && this.#before(heap[l]!, heap[best]!)) best = l;
      if (r < heap.length && this.#before(heap[r]!, heap[best]!)) best = r;
      if (best === i) return;
      [heap[i], heap[best]] = [heap[best]!, heap[i]!];
      i = best;
    }
  }
}

import type { Clock, TimerHandle } from '../../lib/index.js';

interface Timer {
  id: number;
  at: number;
  fn: () => void;
}

/** Lets pending promise callbacks run (several microtask hops and a macrotask). */
export async function flush(rounds = 3): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** A clock whose time moves only when the test says so. Timers fire in time order. */
export class VirtualClock implements Clock {
  #now = 0;
  #nextId = 1;
  #timers = new Map<number, Timer>();
  /** The timers by (at, id), earliest first; a cleared timer stays until it comes to the top. */
  #order = new TimerHeap();

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = this.#nextId++;
    const timer = { id, at: this.#now + Math.max(0, ms), fn };
    this.#timers.set(id, timer);
    this.#order.push(timer);
    return id;
  }

  clearTimeout(handle: TimerHandle): void {
    this.#timers.delete(handle as number);
    // Cleared timers wait in the heap for their turn; rebuild it before they outnumber the live ones.
    if (this.#order.size > 2 * this.#timers.size + 64) this.#order = TimerHeap.of(this.#timers.values());
  }

  /** Timers not yet fired. */
  get pending(): number {
    return this.#timers.size;
  }

  /** Keep-alive holds not yet let go (see `Clock.keepAlive`). */
  holds = 0;

  keepAlive(): () => void {
    this.holds++;
    let done = false;
    return () => {
      if (done) throw new Error('a keep-alive hold was let go twice');
      done = true;
      this.holds--;
    };
  }

  /** Moves time forward by `ms`, firing due timers in order and letting promises settle between them. */
  async advance(ms: number): Promise<void> {
    const end = this.#now + ms;
    await flush();
    for (let next = this.#due(end); next !== undefined; next = this.#due(end)) {
      next.fn();
      await flush();
    }
    this.#now = end;
    await flush();
  }

  /**
   * Moves time forward by `ms` and fires the due timers now, in order, with nothing else running
   * before or between them: for a test that needs a timer to fire at an exact point of its own code.
   */
  advanceNow(ms: number): void {
    const end = this.#now + ms;
    for (let next = this.#due(end); next !== undefined; next = this.#due(end)) next.fn();
    this.#now = end;
  }

  /** The next timer due by `end`, taken out, with the time moved to it. */
  #due(end: number): Timer | undefined {
    let next = this.#order.peek();
    while (next !== undefined && this.#timers.get(next.id) !== next) {
      this.#order.pop();
      next = this.#order.peek();
    }
    if (next === undefined || next.at > end) return undefined;
    this.#order.pop();
    this.#timers.delete(next.id);
    this.#now = Math.max(this.#now, next.at);
    return next;
  }
}

/** A binary min-heap of timers by due time, then by the order they were set. */
class TimerHeap {
  #items: Timer[] = [];

  static of(timers: Iterable<Timer>): TimerHeap {
    const heap = new TimerHeap();
    for (const timer of timers) heap.push(timer);
    return heap;
  }

  get size(): number {
    return this.#items.length;
  }

  peek(): Timer | undefined {
    return this.#items[0];
  }

  push(timer: Timer): void {
    const items = this.#items;
    let i = items.push(timer) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!earlier(items[i], items[parent])) break;
      [items[i], items[parent]] = [items[parent], items[i]];
      i = parent;
    }
  }

  pop(): void {
    const items = this.#items;
    const last = items.pop();
    if (last === undefined || items.length === 0) return;
    items[0] = last;
    for (let i = 0; ;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let least = i;
      if (left < items.length && earlier(items[left], items[least])) least = left;
      if (right < items.length && earlier(items[right], items[least])) least = right;
      if (least === i) return;
      [items[i], items[least]] = [items[least], items[i]];
      i = least;
    }
  }
}

function earlier(a: Timer, b: Timer): boolean {
  return a.at < b.at || (a.at === b.at && a.id < b.id);
}

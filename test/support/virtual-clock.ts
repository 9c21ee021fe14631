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

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = this.#nextId++;
    this.#timers.set(id, { id, at: this.#now + Math.max(0, ms), fn });
    return id;
  }

  clearTimeout(handle: TimerHandle): void {
    this.#timers.delete(handle as number);
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
    for (;;) {
      let next: Timer | undefined;
      for (const t of this.#timers.values())
        if (t.at <= end && (next === undefined || t.at < next.at || (t.at === next.at && t.id < next.id))) next = t;
      if (next === undefined) break;
      this.#timers.delete(next.id);
      this.#now = Math.max(this.#now, next.at);
      next.fn();
      await flush();
    }
    this.#now = end;
    await flush();
  }
}

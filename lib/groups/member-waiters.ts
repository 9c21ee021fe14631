import {
  CapacityExceededError,
  LinkedQueue,
  ProcessHold,
  type QueueNode,
  type TimerHandle,
  type Timers,
} from '../core/index.js';

/** A call for a key that has no member, waiting for a member place. */
class KeyWaiter implements QueueNode<KeyWaiter> {
  prev: KeyWaiter | null = null;
  next: KeyWaiter | null = null;
  queued = false;
  timer: TimerHandle | undefined = undefined;
  abort: (() => void) | undefined = undefined;

  constructor(
    readonly key: string,
    readonly since: number,
    readonly deadline: number,
    readonly signal: AbortSignal | undefined,
    /** Goes on with the time left, at once: the member has its caller before anything else runs. */
    readonly go: (remainingMs: number) => void,
    readonly reject: (err: unknown) => void,
  ) {}
}

/**
 * Calls for new keys while the group has its `maxMembers` members, each with callers: first
 * come, first served, each until its deadline (then `CapacityExceededError`, reason `members`) or
 * its signal. `serve()` lets through, in order, those whose key has a member now and those it can
 * make a member for; each gets what is left of its deadline, which then covers its acquire.
 */
export class MemberWaiters {
  readonly #queue = new LinkedQueue<KeyWaiter>();
  /** A call waiting keeps the process alive, as a pool's waiters do. */
  readonly #holds: ProcessHold;

  constructor(
    readonly timers: Timers,
    readonly group: string,
    readonly maxMembers: number,
    /** Most calls waiting at once; past it, a new key is refused at once. */
    readonly maxWaiting: number,
    /** The Retry-After of a refusal. */
    readonly retryAfterMs: number,
  ) {
    this.#holds = new ProcessHold(timers);
  }

  get length(): number {
    return this.#queue.length;
  }

  /**
   * Waits for a member place for `key`, then runs `go` with the time left of `timeoutMs`, at once
   * (in the same turn as the place was found, so that the new member has its caller before another
   * new key could take its place); settles as `go`'s promise does.
   */
  wait<R>(
    key: string,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    go: (remainingMs: number) => Promise<R>,
  ): Promise<R> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#queue.length >= this.maxWaiting) return Promise.reject(this.#refusal());
    const now = this.timers.now();
    return new Promise<R>((resolve, reject) => {
      const w = new KeyWaiter(key, now, now + timeoutMs, signal, (ms) => resolve(go(ms)), reject);
      this.#queue.push(w);
      this.#holds.hold();
      if (timeoutMs !== Infinity) w.timer = this.timers.set(() => this.#leave(w, this.#refusal(timeoutMs)), timeoutMs);
      if (signal !== undefined) {
        w.abort = () => this.#leave(w, signal.reason);
        signal.addEventListener('abort', w.abort, { once: true });
      }
    });
  }

  /**
   * Lets waiters through in arrival order: one whose key `has` a member now, or one `admit` makes
   * a member for. A waiter whose key can get no member yet keeps its place, and no later new key
   * passes it.
   */
  serve(has: (key: string) => boolean, admit: (key: string) => boolean): void {
    let blocked = false;
    for (let w = this.#queue.head; w !== null;) {
      const next = w.next;
      if (has(w.key) || (!blocked && admit(w.key))) this.#leave(w, undefined);
      else blocked = true;
      w = next;
    }
  }

  /** Every waiter fails with `error()` (the group closes). */
  close(error: () => unknown): void {
    for (let w = this.#queue.head; w !== null; w = this.#queue.head) this.#leave(w, error());
  }

  /** Takes `w` out: it goes on with the time it has left, or fails with `error`. */
  #leave(w: KeyWaiter, error: unknown): void {
    if (!w.queued) return;
    this.#queue.remove(w);
    this.#holds.unhold();
    this.timers.clear(w.timer);
    if (w.abort !== undefined) w.signal!.removeEventListener('abort', w.abort);
    if (error !== undefined) w.reject(error);
    else w.go(Math.max(1, w.deadline - this.timers.now()));
  }

  #refusal(waitedMs?: number): CapacityExceededError {
    return new CapacityExceededError(
      this.group,
      this.maxMembers,
      this.retryAfterMs,
      'members',
      undefined,
      waitedMs === undefined ? { waiting: this.#queue.length } : { waitedMs },
    );
  }
}

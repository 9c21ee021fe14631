import type { ResolvedLimits } from './limits-options.js';
import {
  type AbortHook,
  type AdmissionRequest,
  CapacityExceededError,
  type Clock,
  type ResolvedWaiting,
  hookAbort,
  QueueWatch,
  type StandingState,
  type TimerHandle,
  Timers,
  turnDates,
  unhookAbort,
  Waiter,
  WaiterQueue,
} from '../../core/index.js';

/** A caller waiting for a slot until its deadline. */
export interface SlotWaiter {
  readonly request: AdmissionRequest;
  /** The limit of its key (Infinity without one), as it was when it began to wait. */
  readonly keyLimit: number;
}

/**
 * A waiter of the engine's queue (O(1) removal anywhere), with its request and timer. Settled
 * through its waiters, which take it out of the queue first; it is its own abort hook. It holds no
 * closure but its timer's: thousands wait under overload, and what they hold is what the young
 * generation's collector copies, stalling every call in flight while it does.
 */
class Entry<V> extends Waiter<V> implements SlotWaiter, AbortHook {
  timer: TimerHandle | undefined = undefined;
  /** When it joined the queue (the turn's date). */
  joined = 0;

  constructor(
    readonly request: AdmissionRequest,
    readonly waiters: SlotWaiters<V>,
    /** The error its deadline rejects it with. */
    readonly refuse: (request: AdmissionRequest, keyLimit: number) => Error,
    readonly keyLimit: number,
  ) {
    super(request.timeoutMs);
  }

  override fail(err: unknown): void {
    this.waiters.leave(this);
    super.fail(err);
  }

  aborted(reason: unknown): void {
    this.fail(reason);
  }

  expire(): void {
    this.fail(this.refuse(this.request, this.keyLimit));
  }
}

/** Callers waiting for a slot, first come first served; each leaves at its deadline or abort. */
export class SlotWaiters<V> {
  readonly #queue = new WaiterQueue<V>();
  /** Any wait from 0 to Infinity, whatever the clock's own timers can hold. */
  readonly #timers: Timers;
  /** How fast the queue is served and, with controlled waiting, whether it stands (newcomers refused at once). */
  readonly #watch: QueueWatch;

  /** `slots`: the slots its waiters wait for, now (with controlled waiting, the target is the mean hold of one). */
  constructor(clock: Clock, waiting?: ResolvedWaiting, slots: () => number = () => NaN) {
    this.#timers = new Timers(clock);
    this.#watch = new QueueWatch(turnDates(this.#timers), waiting, slots);
  }

  /**
   * With controlled waiting, the refusal of a newcomer the standing queue would not serve within
   * its target (counted as shed); undefined when it may wait. `limits`: what the refusal says.
   */
  shed(request: AdmissionRequest, limits: ResolvedLimits): CapacityExceededError | undefined {
    const figures = this.#watch.refusal(this.#queue.length, this.#headSince());
    if (figures === undefined) return undefined;
    return new CapacityExceededError(request.pool, limits.global, limits.retryAfterMs, 'standing', undefined, figures);
  }

  /** When the longest waiter joined; undefined when none waits. */
  #headSince(): number | undefined {
    const head = this.#queue.head as Entry<V> | null;
    return head === null ? undefined : head.joined;
  }

  /** `standing` of a limiter's stats: present under controlled waiting only. */
  standingReport(): { standing?: StandingState } {
    const standing = this.standingState();
    return standing === undefined ? {} : { standing };
  }

  /** With controlled waiting, the queue's state; undefined without. */
  standingState(): StandingState | undefined {
    return this.#watch.state(this.#headSince());
  }

  get length(): number {
    return this.#queue.length;
  }

  /** Slots handed over per second while the queue has stood; 0 until it has stood a whole measure. */
  get servedPerSec(): number {
    return this.#watch.servedPerSec;
  }

  /**
   * Whether the callers waiting now, served at the rate the queue has been, would keep a newcomer
   * waiting past `timeoutMs`: it would be refused at its deadline, holding memory and a timer
   * until then. Never while the rate is unknown (the queue has not stood, served, for a whole
   * measure since it last emptied).
   */
  outlasts(timeoutMs: number): boolean {
    const perMs = this.#watch.perMs;
    // The newcomer's own slot is the one after every waiter's ahead of it.
    return perMs > 0 && this.#queue.length + 1 > perMs * timeoutMs;
  }

  /**
   * Waits until a slot is handed over ({@link grant}, {@link serve}), the request's deadline
   * passes (rejects with `refuse(request, keyLimit)`), or its signal aborts. `refuse` may be one function
   * for every wait: it is handed the request. `keyLimit`: the limit of the request's key.
   */
  wait(
    request: AdmissionRequest,
    refuse: (request: AdmissionRequest, keyLimit: number) => Error,
    keyLimit = Infinity,
  ): Promise<V> {
    const { timeoutMs, signal } = request;
    // An abort before the wait began fires no event: refuse now rather than at the deadline.
    if (signal?.aborted) return Promise.reject(signal.reason);
    const entry = new Entry<V>(request, this, refuse, keyLimit);
    const promise = entry.promise();
    entry.timer = this.#timers.set(() => entry.expire(), timeoutMs);
    // Often the pool's close signal, shared by every waiter: hooked once, however many wait.
    if (signal !== undefined) hookAbort(signal, entry);
    entry.joined = this.#watch.joinedAt();
    if (this.#queue.length === 0) this.#watch.formed();
    this.#queue.push(entry);
    return promise;
  }

  /** Hands `value` to `waiter` if it still waits; false if it left (timed out or aborted): `value` is still the caller's. */
  grant(waiter: SlotWaiter, value: V): boolean {
    const entry = waiter as Entry<V>;
    if (!entry.queued) return false;
    this.#watch.served(entry.joined);
    this.leave(entry);
    entry.resolve(value);
    return true;
  }

  /**
   * Hands slots over in arrival order: `grant` says what a waiter gets, `undefined` to pass over it
   * (its key is full) or `false` once no slot is left for anyone. It costs the waiters granted and
   * passed over, not a copy of the queue: a release in front of thousands of waiters serves one.
   */
  serve(grant: (w: SlotWaiter) => V | undefined | false): void {
    let granted: [Entry<V>, V][] | undefined;
    // Granted first, settled after: settling takes a waiter out of the queue being read.
    this.#queue.eachUntil((w) => {
      const value = grant(w as Entry<V>);
      if (value === false) return false;
      if (value !== undefined) (granted ??= []).push([w as Entry<V>, value]);
      return true;
    });
    if (granted !== undefined) for (const [entry, value] of granted) this.grant(entry, value);
  }

  /** The waiters in arrival order (a copy: serving one removes it). */
  snapshot(): SlotWaiter[] {
    return this.#queue.toArray() as Entry<V>[];
  }

  /** Whether `waiter` is still waiting (not served, timed out or aborted). */
  has(waiter: SlotWaiter): boolean {
    return (waiter as Entry<V>).queued;
  }

  /** Rejects every waiter. */
  rejectAll(err: Error): void {
    for (const entry of this.snapshot()) (entry as Entry<V>).fail(err);
  }

  /** @internal Takes `entry` out: of the queue, its timer and its signal's hooks. Once settled, a no-op. */
  leave(entry: Entry<V>): void {
    if (!entry.queued) return;
    this.#queue.remove(entry);
    if (this.#queue.length === 0) this.#watch.emptied();
    this.#timers.clear(entry.timer);
    const signal = entry.request.signal;
    if (signal !== undefined) unhookAbort(signal, entry);
  }
}

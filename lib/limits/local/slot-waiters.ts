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
  /** Its priority class (0, the highest, without classes). */
  readonly cls: number;
  /** When it joined the queue (the turn's date, or with classes the clock's). */
  readonly joined: number;
}

/** How a queue of several priority classes picks whom to serve next. */
export interface ClassOrder {
  /** How many classes wait (1: one queue, first come first served). */
  readonly count: number;
  /** See `ResolvedClasses.agingMs`. */
  readonly agingMs: number;
  /** Whether class `cls` holds less than its guaranteed share now: it goes first. */
  underShare(cls: number): boolean;
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
    readonly cls: number,
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

/**
 * Callers waiting for a slot, first come first served; each leaves at its deadline or abort. With
 * priority classes, one queue per class: the next slot goes to a class under its guaranteed share
 * first, else to the class whose first waiter joined earliest once each class's rank (0 the
 * highest) times `agingMs` is added to its date — a higher class first, and no class starved.
 */
export class SlotWaiters<V> {
  /** One queue per class; the first is the only one without classes. */
  readonly #queues: WaiterQueue<V>[];
  readonly #queue: WaiterQueue<V>;
  readonly #order: ClassOrder | undefined;
  #length = 0;
  /** Any wait from 0 to Infinity, whatever the clock's own timers can hold. */
  readonly #timers: Timers;
  /** How fast the queue is served and, with controlled waiting, whether it stands (newcomers refused at once). */
  readonly #watch: QueueWatch;

  /** When each waiter joined, with classes (aging reads it); undefined without. */
  readonly #dates: { now(): number } | undefined;

  /**
   * `slots`: the slots its waiters wait for, now (with controlled waiting, the target is the mean
   * hold of one); `order`: with priority classes, how to pick among them; `starting`: whether the
   * limit still starts slowly (its queue does not stand meanwhile: see StandingQueue).
   */
  constructor(
    clock: Clock,
    waiting?: ResolvedWaiting,
    slots: () => number = () => NaN,
    order?: ClassOrder,
    starting?: () => boolean,
  ) {
    this.#timers = new Timers(clock);
    const dates = turnDates(this.#timers);
    this.#watch = new QueueWatch(dates, waiting, slots, starting);
    this.#order = order !== undefined && order.count > 1 ? order : undefined;
    this.#dates = this.#order === undefined ? undefined : dates;
    this.#queues = Array.from({ length: this.#order?.count ?? 1 }, () => new WaiterQueue<V>());
    this.#queue = this.#queues[0]!;
  }

  /**
   * With controlled waiting, the refusal of a newcomer the standing queue would not serve within
   * its target (counted as shed); undefined when it may wait. `limits`: what the refusal says.
   */
  shed(request: AdmissionRequest, limits: ResolvedLimits, cls = 0): CapacityExceededError | undefined {
    const figures = this.#watch.refusal(this.#ahead(cls), this.#headSince());
    if (figures === undefined) return undefined;
    return new CapacityExceededError(request.pool, limits.global, limits.retryAfterMs, 'standing', undefined, figures);
  }

  /** When the longest waiter joined; undefined when none waits. */
  #headSince(): number | undefined {
    let since: number | undefined;
    for (const queue of this.#queues) {
      const head = queue.head as Entry<V> | null;
      if (head !== null && (since === undefined || head.joined < since)) since = head.joined;
    }
    return since;
  }

  /**
   * The waiters a newcomer of class `cls` is judged behind: all of them, or with classes those
   * of its own class only. The classes above are served first but a class's share is served
   * besides, so counting them too would refuse at once a call its share would serve in time;
   * counting its own class alone can only refuse late (at the deadline), never wrongly early.
   */
  #ahead(cls: number): number {
    return this.#order === undefined ? this.#length : this.#queues[cls]!.length;
  }

  /** Waiters of each class, highest first (one entry without classes). */
  waitingByClass(): number[] {
    return this.#queues.map((q) => q.length);
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
    return this.#length;
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
  outlasts(timeoutMs: number, cls = 0): boolean {
    const perMs = this.#watch.perMs;
    // The newcomer's own slot is the one after every waiter's ahead of it.
    return perMs > 0 && this.#ahead(cls) + 1 > perMs * timeoutMs;
  }

  /**
   * Waits until a slot is handed over ({@link grant}, {@link serve}), the request's deadline
   * passes (rejects with `refuse(request, keyLimit)`), or its signal aborts. `refuse` may be one function
   * for every wait: it is handed the request. `keyLimit`: the limit of the request's key; `cls`:
   * its priority class.
   */
  wait(
    request: AdmissionRequest,
    refuse: (request: AdmissionRequest, keyLimit: number) => Error,
    keyLimit = Infinity,
    cls = 0,
  ): Promise<V> {
    const { timeoutMs, signal } = request;
    // An abort before the wait began fires no event: refuse now rather than at the deadline.
    if (signal?.aborted) return Promise.reject(signal.reason);
    const entry = new Entry<V>(request, this, refuse, keyLimit, cls);
    const promise = entry.promise();
    entry.timer = this.#timers.set(() => entry.expire(), timeoutMs);
    // Often the pool's close signal, shared by every waiter: hooked once, however many wait.
    if (signal !== undefined) hookAbort(signal, entry);
    entry.joined = this.#dates === undefined ? this.#watch.joinedAt() : this.#dates.now();
    if (this.#length++ === 0) this.#watch.formed();
    this.#queues[cls]!.push(entry);
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
    if (this.#order !== undefined) return this.#serveClasses(grant, this.#order);
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

  /** One waiter at a time, from the class {@link #nextClass} picks; a class with none to serve is passed over. */
  #serveClasses(grant: (w: SlotWaiter) => V | undefined | false, order: ClassOrder): void {
    const passed = new Array<boolean>(this.#queues.length).fill(false);
    for (let cls = this.#nextClass(order, passed); cls >= 0; cls = this.#nextClass(order, passed)) {
      let chosen: [Entry<V>, V] | undefined;
      let full = false;
      this.#queues[cls]!.eachUntil((w) => {
        const value = grant(w as Entry<V>);
        if (value === undefined) return true;
        if (value === false) full = true;
        else chosen = [w as Entry<V>, value];
        return false;
      });
      if (chosen !== undefined) this.grant(chosen[0], chosen[1]);
      else passed[cls] = true;
      if (full) return;
    }
  }

  /** The class to serve next (see the class's doc), -1 when none waits but those passed over. */
  #nextClass(order: ClassOrder, passed: readonly boolean[]): number {
    let best = -1;
    let bestUnder = false;
    let bestAt = Infinity;
    for (let cls = 0; cls < this.#queues.length; cls++) {
      const head = this.#queues[cls]!.head as Entry<V> | null;
      if (head === null || passed[cls]) continue;
      const under = order.underShare(cls);
      const at = head.joined + cls * order.agingMs;
      if (best < 0 || (under && !bestUnder) || (under === bestUnder && at < bestAt)) {
        best = cls;
        bestUnder = under;
        bestAt = at;
      }
    }
    return best;
  }

  /**
   * The waiters in the order {@link serve} would pick them if each took a slot (a copy: serving
   * one removes it): in arrival order without classes.
   */
  inTurn(): SlotWaiter[] {
    const order = this.#order;
    if (order === undefined) return this.#queue.toArray() as Entry<V>[];
    const rank = (w: SlotWaiter) => w.joined + w.cls * order.agingMs;
    const under = order.underShare.bind(order);
    // Stable: a class's waiters keep their arrival order.
    return this.snapshot().sort((a, b) => Number(under(b.cls)) - Number(under(a.cls)) || rank(a) - rank(b));
  }

  /** The waiters, class by class, each in arrival order (a copy: serving one removes it). */
  snapshot(): SlotWaiter[] {
    return this.#queues.flatMap((q) => q.toArray() as Entry<V>[]);
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
    this.#queues[entry.cls]!.remove(entry);
    if (--this.#length === 0) this.#watch.emptied();
    this.#timers.clear(entry.timer);
    const signal = entry.request.signal;
    if (signal !== undefined) unhookAbort(signal, entry);
  }
}

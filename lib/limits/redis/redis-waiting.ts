import {
  CapacityExceededError,
  KeyLimitError,
  PoolClosedError,
  type Admission,
  type AdmissionRequest,
  type Clock,
  type StandingState,
  type TimerHandle,
} from '../../core/index.js';
import { subscriberOf, type Client } from './redis-client.js';
import { type ClassOrder, type ResolvedLimits, SlotWaiters } from '../local/index.js';

/** What the waiting asks of its Redis limiter. */
export interface WaitingHost {
  /** One attempt at an admission: the admission, or the error that refused it. */
  attempt(request: AdmissionRequest): Promise<Admission | Error>;
  /** The main connection, once started. */
  redis(): Client | undefined;
  /** An adaptive limit shared through Redis: whether it still starts slowly (its waiters' queue does not stand meanwhile). */
  readonly shared: { readonly starting: boolean } | undefined;
  closed(): boolean;
  /** An admission of class `cls` (made by `attempt`, not counted yet) was handed to its waiter: counted as admitted. */
  claimed(admission: Admission, cls: number): void;
  /** A waiter refused (shed, or at its deadline) with `err`: counted in the limiter's counters. */
  counted(err: Error): void;
}

/**
 * Callers of a Redis limiter with `wait`, waiting for a slot until their deadline: tried again in
 * arrival order whenever any instance releases (pub/sub on the namespace's channel), and by a
 * poll every `pollMs` or so as the backstop. At its deadline a waiter gets the latest refusal.
 */
export class RedisWaiting {
  readonly #waiters: SlotWaiters<Admission>;
  /** The latest refusal of each waiting request: what it gets at its deadline. */
  readonly #refusals = new WeakMap<AdmissionRequest, Error>();
  #subscriber: Client | undefined;
  #pollTimer: TimerHandle | undefined;
  #serving = false;

  constructor(
    readonly host: WaitingHost,
    readonly clock: Clock,
    readonly channel: string,
    readonly pollMs: number,
    /** The limiter's limits: how its callers wait (`waiting`), and what its refusals say. */
    readonly limits?: ResolvedLimits,
    /** The slots its waiters wait for: those this instance holds. */
    slots?: () => number,
    /** With priority classes, how to pick among them. */
    order?: ClassOrder,
  ) {
    this.#waiters = new SlotWaiters(clock, limits?.waiting, slots, order, () => this.host.shared?.starting === true);
  }

  /** Waiters by class (one count without classes). */
  waitingByClass(): number[] {
    return this.#waiters.waitingByClass();
  }

  /** With priority classes, which have callers waiting here: '1' or '0' per class, as the scripts take it. */
  mask(): string {
    return this.#waiters
      .waitingByClass()
      .map((n) => (n > 0 ? '1' : '0'))
      .join('');
  }

  /** `standing` of the limiter's stats, under controlled waiting. */
  standingReport(): { standing?: StandingState } {
    return this.#waiters.standingReport();
  }

  get length(): number {
    return this.#waiters.length;
  }

  /** The connection it listens on, if it made one. */
  get subscriber(): Client | undefined {
    return this.#subscriber;
  }

  /**
   * `request` was refused with `refusal`: it waits for a slot until its deadline; or, refused by
   * the global limit while the queue stands (controlled waiting), it is refused at once.
   */
  wait(request: AdmissionRequest, refusal: Error, cls = 0): Promise<Admission> {
    const limits = this.limits;
    if (limits !== undefined && refusal instanceof CapacityExceededError && refusal.reason === 'limit') {
      const shed = this.#waiters.shed(request, limits, cls);
      if (shed !== undefined) {
        this.host.counted(shed);
        return Promise.reject(shed);
      }
    }
    this.#listen();
    this.#refusals.set(request, refusal);
    const refuse = (r: AdmissionRequest) => {
      const err = this.#refusals.get(r) ?? refusal;
      this.host.counted(err);
      return err;
    };
    const waiting = this.#waiters.wait(request, refuse, Infinity, cls);
    this.#schedulePoll();
    return waiting;
  }

  /**
   * Tries the waiters in turn (arrival order, or the classes' order); a global refusal of a class
   * passes over its other waiters, and stops the round once every class waiting was refused (a
   * class under its guarantee may be admitted where the class above was refused).
   */
  async serve(): Promise<void> {
    if (this.#serving || this.host.closed()) return;
    this.#serving = true;
    const refused = new Set<number>();
    const classes = this.#waiters.waitingByClass().filter((n) => n > 0).length;
    try {
      for (const w of this.#waiters.inTurn()) {
        // Closed meanwhile: no admission call may start after the limiter's close has waited for those under way.
        if (this.host.closed()) break;
        if (refused.has(w.cls) || !this.#waiters.has(w)) continue; // its class was refused, or it left meanwhile
        const outcome = await this.host.attempt(w.request);
        if (!(outcome instanceof Error)) {
          // The waiter may have timed out during the call: then nobody holds the lease, and it goes
          // back uncounted (neither admitted nor released).
          if (this.#waiters.grant(w, outcome)) this.host.claimed(outcome, w.cls);
          else outcome.release();
          continue;
        }
        this.#refusals.set(w.request, outcome);
        if (outcome instanceof KeyLimitError) continue;
        if (refused.add(w.cls).size >= classes) break;
      }
    } finally {
      this.#serving = false;
    }
  }

  /** The limiter closes: every waiter is refused, the poll stops. */
  close(limiter: string): void {
    if (this.#pollTimer !== undefined) this.clock.clearTimeout(this.#pollTimer);
    this.#waiters.rejectAll(new PoolClosedError(limiter));
  }

  /** Wakes waiters on every instance's release (pub/sub); the poll is the backstop. */
  #listen(): void {
    const redis = this.host.redis();
    if (this.#subscriber !== undefined || redis === undefined) return;
    const sub = subscriberOf(redis);
    this.#subscriber = sub;
    sub.on('error', () => {}); // the main connection reports outages
    sub.on('message', () => void this.serve());
    sub.subscribe(this.channel).catch(() => {});
  }

  #schedulePoll(): void {
    if (this.#pollTimer !== undefined || this.host.closed()) return;
    const delay = this.pollMs * (0.5 + Math.random());
    this.#pollTimer = this.clock.setTimeout(() => {
      this.#pollTimer = undefined;
      void this.serve().finally(() => {
        if (this.#waiters.length > 0) this.#schedulePoll();
      });
    }, delay);
  }
}

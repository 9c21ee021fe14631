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
import { type ResolvedLimits, SlotWaiters } from '../local/index.js';

/** What the waiting asks of its Redis limiter. */
export interface WaitingHost {
  /** One attempt at an admission: the admission, or the error that refused it. */
  attempt(request: AdmissionRequest): Promise<Admission | Error>;
  /** The main connection, once started. */
  redis(): Client | undefined;
  closed(): boolean;
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
  ) {
    this.#waiters = new SlotWaiters(clock, limits?.waiting, slots);
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
  wait(request: AdmissionRequest, refusal: Error): Promise<Admission> {
    const limits = this.limits;
    if (limits !== undefined && refusal instanceof CapacityExceededError && refusal.reason === 'limit') {
      const shed = this.#waiters.shed(request, limits);
      if (shed !== undefined) return Promise.reject(shed);
    }
    this.#listen();
    this.#refusals.set(request, refusal);
    const waiting = this.#waiters.wait(request, (r) => this.#refusals.get(r) ?? refusal);
    this.#schedulePoll();
    return waiting;
  }

  /** Tries the waiters in arrival order; stops at the first global refusal. */
  async serve(): Promise<void> {
    if (this.#serving || this.host.closed()) return;
    this.#serving = true;
    try {
      for (const w of this.#waiters.snapshot()) {
        // Closed meanwhile: no admission call may start after the limiter's close has waited for those under way.
        if (this.host.closed()) break;
        const outcome = await this.host.attempt(w.request);
        if (!(outcome instanceof Error)) {
          // The waiter may have timed out during the call: then nobody would hold the lease.
          if (!this.#waiters.grant(w, outcome)) outcome.release();
          continue;
        }
        this.#refusals.set(w.request, outcome);
        if (!(outcome instanceof KeyLimitError)) break;
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

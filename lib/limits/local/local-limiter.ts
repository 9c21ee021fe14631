import {
  CapacityExceededError,
  systemClock,
  utilizationHealth,
  type Admission,
  type AdmissionRequest,
  type CallResult,
} from '../../core/index.js';
import type { CallTimer } from './call-timer.js';
import {
  type ConcurrencyLimiter,
  type LimiterCounters,
  type LimiterStats,
  type LimitOptions,
  type ResolvedLimits,
  resolveLimits,
  waits,
} from './limits-options.js';
import { ClassTally, classOf } from './priority-classes.js';
import { keyLimitOf, keyOf, neverLost, refusalError, withKeyLimits } from './refusals.js';
import { SlotCounts, TOP_KEYS } from './slot-counts.js';
import { SlotWaiters } from './slot-waiters.js';

const kGiveBack = Symbol('giveBack');
/** @internal Moves the global limit (an adaptive limiter's); leases held past a lower one keep their slots. */
export const kSetGlobal = Symbol('setGlobal');
/** @internal Leases held now, without building a report. */
export const kUsed = Symbol('used');

/** @internal Makes every admission tell how its call ended (an adaptive limiter's). */
export const kLearner = Symbol('learner');

/** @internal What learns from each call's end: when calls start, and the lesson. */
export interface Learner {
  readonly timer: CallTimer;
  /** `timed`: `startedAt` was read for this call (else it is the timer's last reading before it). */
  learn(result: CallResult, startedAt: number, timed: boolean, inflight: number, fence: number | undefined): void;
  /** Whether the limit still starts slowly: its waiters' queue does not stand meanwhile (see LimitAlgorithm). */
  readonly starting: boolean;
}

/** A slot of a {@link LocalLimiter}: one small object per admission, no closure. */
class LocalAdmission implements Admission {
  #limiter: LocalLimiter | undefined;

  constructor(
    limiter: LocalLimiter,
    readonly key: string | undefined,
    readonly number: number,
    readonly cls: number,
  ) {
    this.#limiter = limiter;
  }

  get id(): string {
    return `local:${this.number}`;
  }

  get signal(): AbortSignal {
    return neverLost;
  }

  release(): void {
    const limiter = this.#limiter;
    if (limiter === undefined) return;
    this.#limiter = undefined;
    limiter[kGiveBack](this.key, this.cls);
  }
}

/**
 * A slot that learns: when and at what load it began, and whom to tell how its call ended. Still
 * one object, and a class of its own rather than a subclass of LocalAdmission: measured, the
 * derived class cost an adaptive limit about a tenth of the warm acquire and release.
 */
class LearningAdmission implements Admission {
  #limiter: LocalLimiter | undefined;
  #learner: Learner | undefined;

  constructor(
    limiter: LocalLimiter,
    readonly key: string | undefined,
    readonly number: number,
    readonly cls: number,
    learner: Learner,
    readonly startedAt: number,
    readonly timed: boolean,
    readonly inflight: number,
  ) {
    this.#limiter = limiter;
    this.#learner = learner;
  }

  get id(): string {
    return `local:${this.number}`;
  }

  get signal(): AbortSignal {
    return neverLost;
  }

  release(): void {
    const limiter = this.#limiter;
    this.#limiter = undefined;
    limiter?.[kGiveBack](this.key, this.cls);
  }

  ended(result: CallResult): void {
    const learner = this.#learner;
    if (learner === undefined) return;
    this.#learner = undefined;
    learner.learn(result, this.startedAt, this.timed, this.inflight, undefined);
  }
}

/** Admission limits in this process: the default, and the fallback of `RedisLimiter`. */
export class LocalLimiter implements ConcurrencyLimiter {
  #limits: ResolvedLimits;
  readonly #counts = new SlotCounts();
  /** Slots held, calls admitted and refused, by priority class. */
  readonly #tally: ClassTally;
  readonly #waiters: SlotWaiters<Admission>;
  readonly #counters: LimiterCounters = { admitted: 0, released: 0, refusedGlobal: 0, refusedKey: 0, lost: 0 };
  /** @internal Set by an adaptive limiter: its admissions learn. */
  [kLearner]: Learner | undefined;
  /** What a wait refused by each limit rejects with at its deadline: one function for every waiter. */
  readonly #refuseGlobal = (request: AdmissionRequest) =>
    this.#counted(refusalError('global', request, this.#limits, NaN));
  readonly #refuseKey = (request: AdmissionRequest, keyLimit: number) =>
    this.#counted(refusalError('key', request, this.#limits, keyLimit));

  /** `waitingMode`: `waiting.mode` when the options do not say (an adaptive limiter's is `controlled`). */
  constructor(options: LimitOptions = {}, waitingMode: 'controlled' | 'fifo' = 'fifo') {
    this.#limits = resolveLimits(options, [], waitingMode);
    const { classes } = this.#limits;
    const tally = (this.#tally = new ClassTally(classes, this.#counters));
    const order = {
      count: classes.names.length,
      agingMs: classes.agingMs,
      // A class's guarantee is its share of the limit, rounded down: what it leaves is ordered by aging.
      underShare: (cls: number) => tally.underShare(cls, this.#limits.global),
    };
    // While its queue stands, every slot is held: the target is their mean hold.
    const [slots, starting] = [() => this.#counts.used, () => this[kLearner]?.starting === true];
    this.#waiters = new SlotWaiters(options.clock ?? systemClock, this.#limits.waiting, slots, order, starting);
  }

  /** The limits in force. */
  get limits(): ResolvedLimits {
    return this.#limits;
  }

  /** @internal */
  get [kUsed](): number {
    return this.#counts.used;
  }

  /** @internal */
  [kSetGlobal](global: number): void {
    if (global === this.#limits.global) return;
    const higher = global > this.#limits.global;
    this.#limits = { ...this.#limits, global };
    if (higher && this.#waiters.length > 0) this.#serveWaiters();
  }

  /** Its waits end by the request's deadline and signal (see `AdmissionLimiter`). */
  readonly settlesByDeadline = true;

  /** A slot now, if both limits have room and the key is valid; `admit()` says why not. */
  tryAdmit(request: AdmissionRequest): Admission | undefined {
    let key: string | undefined;
    let keyLimit: number;
    let cls: number;
    try {
      key = keyOf(request, this.#limits);
      keyLimit = keyLimitOf(key, this.#limits);
      cls = classOf(request, this.#limits.classes, this.#limits.name);
    } catch {
      return undefined;
    }
    return this.#counts.take(key, this.#limits.global, keyLimit) === null ? this.#admitted(key, cls) : undefined;
  }

  admit(request: AdmissionRequest): Promise<Admission> {
    let key: string | undefined;
    let keyLimit: number;
    let cls: number;
    try {
      key = keyOf(request, this.#limits);
      keyLimit = keyLimitOf(key, this.#limits);
      cls = classOf(request, this.#limits.classes, this.#limits.name);
    } catch (err) {
      return Promise.reject(err);
    }
    const refusal = this.#counts.take(key, this.#limits.global, keyLimit);
    if (refusal === null) return Promise.resolve(this.#admitted(key, cls));
    if (!waits(this.#limits, refusal, request.timeoutMs))
      return this.#refused(cls, refusalError(refusal, request, this.#limits, keyLimit));
    if (refusal === 'global') {
      // A standing queue, under controlled waiting, takes no newcomer it would keep past the target.
      const shed = this.#waiters.shed(request, this.#limits, cls);
      if (shed !== undefined) return this.#refused(cls, shed);
      // A wait the queue ahead would outlast ends in the same refusal at its deadline: given now.
      if (this.#waiters.outlasts(request.timeoutMs, cls)) return this.#refused(cls, this.#backlog(request));
    }
    const refuse = refusal === 'global' ? this.#refuseGlobal : this.#refuseKey;
    return this.#tally.counting(this.#waiters.wait(request, refuse, keyLimit, cls), cls);
  }

  /** A waiter's refusal at its deadline, counted. */
  #counted(err: Error): Error {
    this.#tally.counted(err);
    return err;
  }

  /** A refusal given at once, counted against the call's class. */
  #refused(cls: number, err: Error): Promise<never> {
    this.#tally.refused(cls, err);
    return Promise.reject(err);
  }

  stats(): LimiterStats {
    const { global, perKey } = this.#limits;
    const utilization = global === Infinity ? 0 : this.#counts.used / global;
    return {
      mode: 'local',
      used: this.#counts.used,
      limit: global,
      perKey,
      utilization,
      health: utilizationHealth(utilization),
      held: this.#counts.used,
      waiting: this.#waiters.length,
      counters: { ...this.#counters },
      topKeys: withKeyLimits(this.#counts.top(TOP_KEYS), this.#limits),
      ...this.#waiters.standingReport(),
      ...this.#tally.report(this.#waiters.waitingByClass()),
    };
  }

  async start(): Promise<void> {}

  #backlog(request: AdmissionRequest): CapacityExceededError {
    const { global, retryAfterMs } = this.#limits;
    return new CapacityExceededError(request.pool, global, retryAfterMs, 'backlog', undefined, {
      waiting: this.#waiters.length,
      servedPerSec: this.#waiters.servedPerSec,
      deadlineMs: request.timeoutMs,
    });
  }

  async close(): Promise<void> {}

  #admitted(key: string | undefined, cls: number): Admission {
    this.#tally.took(cls);
    const learner = this[kLearner];
    if (learner === undefined) return new LocalAdmission(this, key, ++this.#counters.admitted, cls);
    const timed = learner.timer.admit();
    return new LearningAdmission(
      this,
      key,
      ++this.#counters.admitted,
      cls,
      learner,
      learner.timer.last,
      timed,
      this.#counts.used,
    );
  }

  /** @internal Called once by each {@link LocalAdmission}'s release. */
  [kGiveBack](key: string | undefined, cls: number): void {
    this.#counts.give(key);
    this.#tally.gave(cls);
    this.#counters.released++;
    if (this.#waiters.length > 0) this.#serveWaiters();
  }

  /** First come, first served: a waiter whose key is full does not block the others. */
  #serveWaiters(): void {
    this.#waiters.serve((w) => {
      const key = w.request.key ?? undefined; // checked by admit(); null: no key on purpose
      const refusal = this.#counts.take(key, this.#limits.global, w.keyLimit);
      return refusal === 'global' ? false : refusal === null ? this.#admitted(key, w.cls) : undefined;
    });
  }
}

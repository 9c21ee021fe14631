import {
  type Admission,
  type AdmissionRequest,
  type CallResult,
  CapacityExceededError,
  type Clock,
  events,
  is,
  type LimitChange,
  OptionReader,
  type PoolLogger,
  scrubbingLogger,
  systemClock,
} from '../../core/index.js';
import {
  CallTimer,
  type ConcurrencyLimiter,
  kLearner,
  kSetGlobal,
  kUsed,
  type Learner,
  type LimiterStats,
  type LimitOptions,
  LocalLimiter,
  WAIT_RULE,
} from '../local/index.js';
import { limitAlgorithm, type AdaptiveAlgorithmOptions, type LimitAlgorithm } from './limit-algorithms.js';
import {
  kInstances,
  kProbe,
  kReport,
  kShare,
  kThroughRedis,
  RedisLimiter,
  type RedisLimitOptions,
} from '../redis/index.js';
import { SharedLimit } from './shared-limit.js';
import { classifyCall, isOverload, type CallVerdict } from './call-verdict.js';
import { ProbeAdmission, TrackedAdmission } from './adaptive-admissions.js';

/** Options of {@link AdaptiveLimiter}. */
export interface AdaptiveLimiterOptions extends Omit<LimitOptions, 'global' | 'wait'> {
  /**
   * A caller over the global limit waits for a slot within its deadline (the acquire's timeout),
   * as a pool's own queue does: a limit that starts low, or that was just cut, then delays
   * callers rather than refusing them. A key over its own limit is answered at once (429).
   * `false`: refused at once (fail fast, a 503 with Retry-After); `true`: a key's callers wait
   * too. Default `'global'`.
   */
  wait?: boolean | 'global';
  /**
   * The algorithm and its bounds. Default `{ algorithm: 'vegas', min: 1, max: 1000, initial: 10 }`:
   * it cuts on overload (429, 503, a timeout) and pauses for a Retry-After as every algorithm
   * does, and also keeps the queue at the backend short, so it stops before a backend slows
   * down, not only once it refuses (see docs/limits.md for the simulation behind the choice).
   */
  adaptive?: AdaptiveAlgorithmOptions;
  /** Tells overload from success from an error that says nothing about capacity. Default {@link classifyCall}. */
  classify?: (result: CallResult) => CallVerdict;
  /**
   * The longest pause one overload may ask for, ms: a `Retry-After` (or a `classify` verdict's
   * `retryAfterMs`) past it pauses for this long. An upstream that is wrong or hostile for one
   * answer must not stop the service for an hour. Default 30 000; 0: never pause.
   */
  maxPauseMs?: number;
  /**
   * While paused, one call every this many ms goes through as a probe: its success ends the pause
   * at once, an overload pauses again (for its own Retry-After, capped). Default 1 000; Infinity:
   * no probes, the pause runs its course. With `redis`, the pause is the fleet's: each instance
   * sends its own probes through it, and the first that succeeds ends it in Redis; every other
   * instance ends its own with its next probe.
   */
  pauseProbeMs?: number;
  /**
   * Share one limit with every instance through Redis (the options of `RedisLimiter`'s `redis`):
   * the fleet finds one limit for the backend, not one per instance. Default: this process only.
   */
  redis?: RedisLimitOptions;
}

const CHANGES = 20;

/** The algorithm an adaptive limiter uses unless told otherwise (the simulation in test/qos gates it). */
export const DEFAULT_ADAPTIVE: AdaptiveAlgorithmOptions = { algorithm: 'vegas' };

/**
 * A global admission limit that finds itself: it learns from how calls end (`pool.use()` and
 * `@UsePooled` tell it) and moves between bounds with its algorithm (Vegas by default: it grows
 * while the backend's latency shows no queue, and cuts when a queue builds or on overload, such
 * as a 429 or a timeout). A `Retry-After` from the
 * upstream pauses admissions for that long. The per-key limit works as in `LocalLimiter`.
 * With `redis`, one limit is shared by every instance (see `SharedLimit`): each reports what its
 * calls found with the Redis calls it makes anyway, and the limit moves once, in Redis; the
 * per-key limits, the outage fallback and the restart protection are `RedisLimiter`'s.
 */
export class AdaptiveLimiter implements ConcurrencyLimiter {
  /** In this process: the limit is the algorithm's. */
  readonly #local: LocalLimiter | undefined;
  /** Shared through Redis: the limit is `#shared`'s. */
  readonly #redis: RedisLimiter | undefined;
  readonly #shared: SharedLimit | undefined;
  readonly #algorithm: LimitAlgorithm;
  readonly #classify: (result: CallResult) => CallVerdict;
  readonly #clock: Clock;
  readonly #logger: PoolLogger | undefined;
  readonly #name: string;
  readonly #changes: LimitChange[] = [];
  #pausedUntil = -Infinity;
  readonly #maxPauseMs: number;
  readonly #probeEveryMs: number;
  /** When the last probe went through, and whether it is still out. */
  #probedAt = -Infinity;
  #probing = false;
  #overloads = 0;
  #successes = 0;
  #ignored = 0;
  #classifierFailed = false;
  /** What each admission tells how its call ended, and the timer of in-process calls. */
  readonly #learner: Learner;

  constructor(options: AdaptiveLimiterOptions = {}) {
    const { adaptive = DEFAULT_ADAPTIVE, classify, redis, maxPauseMs, pauseProbeMs, wait: waits, ...limits } = options;
    const name = limits.name ?? 'limits';
    const read = new OptionReader({ subject: 'limiter', name, path: 'limits.' }, {
      classify,
      maxPauseMs,
      pauseProbeMs,
      wait: waits,
    } as Record<string, unknown>);
    read.get('classify', is.function);
    this.#maxPauseMs = read.get(
      'maxPauseMs',
      is.noted(is.finiteAtLeast(0), 'a pause must end: 0 never pauses'),
      30_000,
    );
    this.#probeEveryMs = read.get('pauseProbeMs', is.noted(is.above(0), 'Infinity: no probes'), 1_000);
    if ((limits as LimitOptions).global !== undefined)
      read.fail(
        'global',
        'is what the adaptive limit sets: bound it with adaptive.min, adaptive.max and adaptive.initial instead',
      );
    const wait = read.get('wait', WAIT_RULE, 'global');
    const algorithm = (this.#algorithm = limitAlgorithm(adaptive, {
      subject: 'limiter',
      name,
      path: 'limits.adaptive.',
    }));
    const perKey = (limits as LimitOptions).perKey;
    if (typeof perKey === 'number' && perKey > this.#algorithm.max)
      read.fail(
        'perKey',
        `(${perKey}) must not exceed limits.adaptive.max (${this.#algorithm.max}): no key could ever use more than the limit can reach`,
      );
    // Checked against the highest the limit may reach (a perKey above the first limit is fine), then set to the first.
    this.#clock = limits.clock ?? systemClock;
    this.#learner = {
      timer: new CallTimer(this.#clock),
      learn: (result, startedAt, timed, inflight, fence) => this.#learn(result, startedAt, timed, inflight, fence),
      get starting() {
        return algorithm.starting;
      },
    };
    if (redis === undefined) {
      this.#local = new LocalLimiter({ ...limits, wait, global: this.#algorithm.max }, 'controlled');
      this.#local[kSetGlobal](this.#algorithm.limit);
      // Its admissions learn by themselves: no wrapper, no promise of this limiter's own.
      this.#local[kLearner] = this.#learner;
    } else {
      this.#redis = new RedisLimiter({ ...limits, wait, global: this.#algorithm.max, redis }, 'controlled');
      this.#shared = new SharedLimit(this.#algorithm, this.#clock, this.#redis.commandTimeoutMs, (from, to) =>
        this.#moved(from, to, to < from ? 'overload' : 'success'),
      );
      this.#redis[kShare](this.#shared, (ms) => this.#pause(ms, this.#clock.now()));
    }
    this.#classify = classify ?? classifyCall;
    this.#logger = limits.logger === undefined ? undefined : scrubbingLogger(limits.logger);
    this.#name = name;
  }

  /** The limit now. */
  get limit(): number {
    return this.#shared === undefined ? this.#algorithm.limit : this.#shared.limit;
  }

  /** In this process, its waits end by the request's deadline and signal (see `AdmissionLimiter`); through Redis, the pool holds them. */
  get settlesByDeadline(): boolean {
    return this.#local !== undefined;
  }

  /** A slot now, in this process (shared through Redis, there is none without a call: undefined). */
  tryAdmit(request: AdmissionRequest): Admission | undefined {
    if (this.#local === undefined || this.#paused() > 0) return undefined;
    return this.#local.tryAdmit(request);
  }

  admit(request: AdmissionRequest): Promise<Admission> {
    const paused = this.#paused();
    if (paused > 0)
      return this.#mayProbe()
        ? this.#probe(request)
        : Promise.reject(new CapacityExceededError(request.pool, this.limit, paused, 'paused'));
    if (this.#local !== undefined) return this.#local.admit(request);
    return this.#redis!.admit(request).then((admission) => this.#tracked(admission));
  }

  stats(): LimiterStats {
    return {
      ...(this.#local ?? this.#redis!).stats(),
      adaptive: {
        algorithm: this.#algorithm.name,
        shared: this.#shared !== undefined,
        limit: this.limit,
        min: this.#algorithm.min,
        max: this.#algorithm.max,
        pausedMs: this.#paused(),
        overloads: this.#overloads,
        successes: this.#successes,
        ignored: this.#ignored,
        timedOneIn: this.#shared === undefined ? this.#learner.timer.every : 1,
        changes: [...this.#changes],
      },
    };
  }

  async start(): Promise<void> {
    await this.#redis?.start();
  }

  async close(): Promise<void> {
    await this.#redis?.close();
  }

  /** Pauses admissions for `ms` from `now`, at most `maxPauseMs`; a longer pause already running stays. */
  #pause(ms: number, now: number): number {
    const pause = Math.min(ms, this.#maxPauseMs);
    if (pause <= 0) return 0;
    // A new pause waits pauseProbeMs before its first probe: the upstream just said it is full.
    if (this.#pausedUntil <= now) this.#probedAt = now;
    this.#pausedUntil = Math.max(this.#pausedUntil, now + pause);
    return pause;
  }

  /** Whether a probe may go through the pause now: none is out, and the last went `pauseProbeMs` ago. */
  #mayProbe(): boolean {
    if (this.#probing || this.#probeEveryMs === Infinity) return false;
    return this.#clock.now() - this.#probedAt >= this.#probeEveryMs;
  }

  /** One call through the pause (through the fleet's, shared in Redis): how it ends decides whether the pause goes on. */
  #probe(request: AdmissionRequest): Promise<Admission> {
    this.#probing = true;
    this.#probedAt = this.#clock.now();
    const admitted =
      this.#local !== undefined
        ? this.#local.admit(request)
        : this.#redis![kProbe](request).then((admission) => this.#tracked(admission));
    return admitted.then(
      (admission) => new ProbeAdmission(admission, (result) => this.#probed(result)),
      (err: unknown) => {
        this.#probing = false;
        throw err;
      },
    );
  }

  /** A probe ended: a success ends the pause; an overload has paused again in #learn; anything else lets the next probe try. */
  #probed(result: CallResult | undefined): void {
    this.#probing = false;
    if (result === undefined) return; // released without a word (a lease by hand): says nothing
    let verdict: unknown;
    try {
      verdict = this.#classify(result);
    } catch {
      return; // counted as ignored by #learn
    }
    if (verdict !== 'success') return;
    this.#pausedUntil = -Infinity;
    // The fleet's pause ends with the next call; the other instances end theirs with their own probes.
    this.#shared?.resume();
    this.#redis?.[kReport]();
  }

  /** Ms left of the pause an upstream asked for; 0 with none (and no clock read when none was asked). */
  #paused(): number {
    if (this.#pausedUntil === -Infinity) return 0;
    const left = this.#pausedUntil - this.#clock.now();
    if (left > 0) return left;
    this.#pausedUntil = -Infinity;
    return 0;
  }

  /** A Redis admission, timed from now (a round trip dwarfs the clock read), that learns from the call's end. */
  #tracked(admission: Admission): Admission {
    return new TrackedAdmission(admission, this.#learner, this.#clock.now(), this.#redis![kUsed]);
  }

  /** A call ended. `timed`: `startedAt` was read for it; else it is an earlier reading, and only an overload reads the clock. */
  #learn(result: CallResult, startedAt: number, timed: boolean, inflight: number, fence: number | undefined): void {
    let verdict: CallVerdict;
    try {
      verdict = this.#classify(result);
    } catch (err) {
      this.#ignored++;
      if (!this.#classifierFailed) {
        this.#classifierFailed = true;
        this.#logger?.error(
          `limiter: its classify() threw (${err instanceof Error ? err.message : String(err)}); such calls are not counted`,
          err,
        );
      }
      return;
    }
    const overload = isOverload(verdict);
    if (!overload) {
      if (verdict !== 'success') {
        this.#ignored++;
        return;
      }
      this.#successes++;
      // Most calls of a dense stream: counted, and (AIMD) a step, with no sample to make. A limit shared through Redis times every call.
      if (!timed) {
        this.#follow(this.#algorithm.limit, this.#algorithm.untimedSuccess(inflight), 'success');
        return;
      }
    }
    const now = timed || overload ? this.#learner.timer.read() : startedAt;
    let pause: number | undefined;
    if (overload) {
      this.#overloads++;
      const asked = (verdict as Extract<CallVerdict, object>).retryAfterMs;
      // Capped however it was asked for (a classify() may return 10^15): see maxPauseMs.
      if (typeof asked === 'number' && asked > 0 && !Number.isNaN(asked)) pause = this.#pause(asked, now) || undefined;
    }
    const sample = {
      startedAt,
      durationMs: now - startedAt,
      inflight,
      outcome: overload ? 'overload' : 'success',
    } as const;
    const shared = this.#shared;
    if (shared !== undefined) {
      if (overload) {
        shared.overload(sample, fence, pause);
        this.#redis![kReport](); // the fleet should hear of it now, not with this instance's next admission
      }
      // Growth only from calls admitted through Redis while it answers: a fault never raises the limit.
      else if (fence !== undefined && this.#redis![kThroughRedis])
        shared.success(sample, this.#redis![kInstances], fence);
      return;
    }
    const from = this.#algorithm.limit;
    this.#follow(from, this.#algorithm.sample(sample), overload ? 'overload' : 'success');
  }

  /** The in-process limit after a call: set, if the algorithm moved it. */
  #follow(from: number, to: number, reason: LimitChange['reason']): void {
    if (to === from) return;
    this.#local![kSetGlobal](to);
    this.#moved(from, to, reason);
  }

  /** The limit moved: recorded, and told on the diagnostics channel. */
  #moved(from: number, to: number, reason: LimitChange['reason']): void {
    this.#changes.push({ at: this.#clock.now(), from, to, reason });
    if (events.limiterLimit.hasSubscribers) events.limiterLimit.publish({ limiter: this.#name, from, to, reason });
    if (this.#changes.length > CHANGES) this.#changes.shift();
  }
}

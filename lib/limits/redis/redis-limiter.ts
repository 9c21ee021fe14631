import {
  type Admission,
  type AdmissionRequest,
  CapacityExceededError,
  type Clock,
  consoleLogger,
  KeyLimitError,
  PoolClosedError,
  PoolConfigError,
  type PoolLogger,
  scrubbingLogger,
  systemClock,
  Timers,
  utilizationHealth,
} from '../../core/index.js';
import {
  ClassTally,
  classOrError,
  type ConcurrencyLimiter,
  keyLimitOrError,
  keyOf,
  kUsed,
  type LimiterCounters,
  type LimiterMode,
  type LimiterStats,
  type LimitOptions,
  refusalError,
  type ResolvedLimits,
  resolveLimits,
  SlotCounts,
  TOP_KEYS,
  waits,
  withKeyLimits,
} from '../local/index.js';
import { notStarted, type RedisLimitOptions, type RedisSettings, resolveRedis } from './redis-settings.js';
import { connectRedis, describeRedisError, hangUp, whereOf, withTimeout, type Client } from './redis-client.js';
import { RedisCalls, type LimitShare } from './redis-calls.js';
import { RedisKeys } from './redis-scripts.js';
import { RedisLeases } from './redis-leases.js';
import { kCountLapsed, kDemand, kInstances, kProbe, kReport, kShare, kThroughRedis } from './limiter-symbols.js';
import { fallbackShare, RedisAvailability } from './redis-availability.js';
import { claimNamespace } from './namespace-registry.js';
import { RedisWaiting } from './redis-waiting.js';
import { RedisHeartbeat } from './redis-heartbeat.js';
import { RedisDemand } from './redis-demand.js';

/** Options of a {@link RedisLimiter}: the limits, and how to reach Redis. */
export interface RedisLimiterOptions extends LimitOptions {
  redis: RedisLimitOptions;
}

/** Why an admission is refused whose answer came after its TTL twice in a row. */
const LATE =
  'two answers in a row came after the lease TTL had passed here: this event loop is blocked for longer than leaseTtlMs';

type Outcome = Admission | Error;

/**
 * Admission limits shared by every instance through Redis (ioredis). Each admission is one atomic
 * Lua call and each release one transaction, shared by those asked for together; held leases
 * carry a TTL that the heartbeat refreshes, so a crashed instance's slots come back within a TTL. After a Redis restart or failover,
 * admissions pause for one TTL while live holders re-register. When Redis is unreachable,
 * commands fail fast and, after `fallbackAfterMs`, the limiter falls back to this instance's
 * share of the limits (or refuses, with `fallback: 'fail-closed'`), returning to Redis by itself.
 */
export class RedisLimiter implements ConcurrencyLimiter {
  readonly limits: ResolvedLimits;
  readonly #settings: RedisSettings;
  readonly #keys: RedisKeys;
  readonly #availability: RedisAvailability;
  readonly #calls: RedisCalls;
  readonly #connection: RedisLimitOptions;
  readonly #clock: Clock;
  readonly #timers: Timers;
  readonly #logger: PoolLogger;

  #redis: Client | undefined;
  /** The leases this instance holds: ids, admissions, local expiry, loss. */
  readonly #leases: RedisLeases;
  /** Every lease this process holds, however admitted: the fallback limits count these. */
  readonly #local = new SlotCounts();
  /** Of those, by priority class; and calls admitted and refused, by class. */
  readonly #tally: ClassTally;
  /** Callers waiting for a slot (with `wait`). */
  readonly #waiting: RedisWaiting;
  readonly #counters: LimiterCounters = { admitted: 0, released: 0, refusedGlobal: 0, refusedKey: 0, lost: 0 };

  /** Refreshes the leases held, and learns what Redis counts. */
  readonly #heartbeat: RedisHeartbeat;
  #closed = false;
  #hungUp = false; // at close's end; releases go until then (a lease granted as it closed too)
  /** Gives back this limiter's claim on its namespace, once started. */
  #unclaim: (() => void) | undefined;
  /** An adaptive limit shared through Redis, in place of `limits.global`; and who hears of its pauses. */
  #shared: LimitShare | undefined;
  #onPause: ((ms: number) => void) | undefined;
  #demand: RedisDemand | undefined;

  /** `waitingMode`: `waiting.mode` unless the options say (an adaptive limiter's is `controlled`). */
  constructor(options: RedisLimiterOptions, waitingMode: 'controlled' | 'fifo' = 'fifo') {
    this.limits = resolveLimits(options, ['redis'], waitingMode);
    this.#connection = options.redis;
    this.#settings = resolveRedis(this.limits.name, options.redis);
    this.#keys = new RedisKeys(this.#settings.namespace);
    this.#clock = options.clock ?? systemClock;
    this.#availability = new RedisAvailability(this.#settings, this.#clock);
    this.#timers = new Timers(this.#clock);
    this.#logger = scrubbingLogger(options.logger ?? consoleLogger);
    const tally = (this.#tally = new ClassTally(this.limits.classes, this.#counters));
    this.#leases = new RedisLeases(this.#timers, this.#settings.ttlMs, this.#keys, {
      clock: this.#clock,
      logger: this.#logger,
      counters: this.#counters,
      released: (held) => {
        this.#local.give(held.key);
        tally.gave(held.cls);
        if (this.#redis !== undefined && this.#availability.reachable && !this.#hungUp) this.#calls.releaseSoon(held);
        if (this.#waiting.length > 0) void this.#waiting.serve();
      },
    });
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- a getter below reads a private field
    const self = this;
    /** The limiter as its waiting callers, its Redis calls and its heartbeat see it. */
    const inside = {
      name: this.limits.name,
      logger: this.#logger,
      instance: this.#leases.instance,
      counted: (err: Error) => void tally.counted(err),
      claimed: (admission: Admission, cls: number) => this.#claimed(admission, cls),
      waitingMask: () => this.#waiting.mask(),
      redis: () => this.#redis,
      closed: () => this.#closed,
      up: () => this.#up(),
      down: (err: unknown) => this.#down(err),
      // null: no key on purpose; the key was checked by #admit().
      attempt: (request: AdmissionRequest) =>
        this.#try(request, request.key ?? undefined, classOrError(request, this.limits) as number | undefined),
      used: (n: number, granted?: number) => this.#heartbeat.counted(n, granted),
      quiet: (ms: number) => (this.#availability.quietUntil = this.#clock.now() + ms),
      get shared() {
        return self.#shared;
      },
      paused: (ms: number) => this.#onPause?.(ms),
      beaten: () => {
        this.#noteMode();
        if (this.#waiting.length > 0) void this.#waiting.serve();
      },
    };
    // Its waiters wait for the slots this instance holds: the target is their mean hold.
    const [channel, slots] = [this.#keys.channel, () => this.#local.used];
    const { agingMs, names } = this.limits.classes;
    // A class under its guarantee here goes first; Redis holds the fleet to the guarantees (see redis-scripts).
    const order = { count: names.length, agingMs, underShare: (c: number) => tally.underShare(c, this.#global()) };
    this.#waiting = new RedisWaiting(inside, this.#clock, channel, this.#settings.pollMs, this.limits, slots, order);
    this.#calls = new RedisCalls(inside, this.#keys, this.#settings, this.limits);
    const [s, leases] = [this.#settings, this.#leases];
    this.#heartbeat = new RedisHeartbeat(inside, this.#clock, s.heartbeatMs, leases, this.#calls, this.#availability);
  }

  /** Connects; if Redis is not reachable the limiter starts as unreachable (see `fallbackAfterMs`) and keeps trying. */
  async start(): Promise<void> {
    if (this.#redis !== undefined) return;
    this.#unclaim = claimNamespace(whereOf(this.#connection), this.#settings.namespace, this.limits);
    const { commandTimeoutMs: timeout, heartbeatMs } = this.#settings;
    const redis = (this.#redis = await connectRedis(this.limits.name, this.#connection, timeout, heartbeatMs));
    redis.on('error', (err: Error) => this.#down(err));
    // A new connection may reach another server (a failover): learn its run_id again.
    redis.on('close', () => this.#calls.reconnected());
    redis.on('ready', () => {
      this.#calls.reconnected();
      void this.#heartbeat.beat();
    });
    try {
      await withTimeout(redis.connect(), timeout * 2, 'connect');
      await this.#heartbeat.beat();
    } catch (err) {
      this.#down(err);
    }
    this.#heartbeat.schedule();
  }

  /** @internal */
  [kShare](shared: LimitShare, onPause: (ms: number) => void): void {
    this.#shared = shared;
    this.#onPause = onPause;
  }

  /** @internal Leases held against the global limit: across instances through Redis, this process's in a fallback. */
  get [kUsed](): number {
    return this.#availability.reachable ? this.#heartbeat.used : this.#local.used;
  }

  /** @internal */
  get [kThroughRedis](): boolean {
    return this.#availability.mode() === 'redis';
  }

  /** How long a call to Redis may take before it counts as failed. */
  get commandTimeoutMs(): number {
    return this.#settings.commandTimeoutMs;
  }

  /** @internal */
  [kReport](): void {
    this.#heartbeat.report();
  }

  /** @internal */
  get [kInstances](): number {
    return this.#heartbeat.instances;
  }

  /** @internal A FleetBudget's places: a lapsed lease counts in Redis until released (see RedisLeases). */
  [kCountLapsed](): void {
    this.#leases.countLapsed = true;
  }

  /** @internal */
  get [kDemand](): RedisDemand {
    const timeoutMs = this.#settings.commandTimeoutMs;
    return (this.#demand ??= new RedisDemand(() => this.#redis, this.#keys, this.#leases.instance, timeoutMs));
  }

  /** The global limit now: the shared adaptive one's, or the fixed one. */
  #global(): number {
    return this.#shared === undefined ? this.limits.global : this.#shared.limit;
  }

  /** The limits now, as refusals tell them. */
  #limitsNow(): ResolvedLimits {
    return this.#shared === undefined ? this.limits : { ...this.limits, global: this.#shared.limit };
  }

  admit(request: AdmissionRequest): Promise<Admission> {
    if (this.#closed) return Promise.reject(new PoolClosedError(request.pool));
    if (this.#redis === undefined) return Promise.reject(notStarted(this.limits.name));
    return this.#admit(request);
  }

  stats(): LimiterStats {
    const mode = this.#noteMode();
    const used = mode === 'fallback' ? this.#local.used : this.#heartbeat.used;
    const limit = this.#global();
    const utilization = limit === Infinity ? 0 : used / limit;
    return {
      mode,
      used,
      limit,
      perKey: this.limits.perKey,
      utilization,
      health: utilizationHealth(utilization),
      held: this.#local.used,
      waiting: this.#waiting.length,
      counters: { ...this.#counters },
      topKeys: withKeyLimits(this.#local.top(TOP_KEYS), this.limits),
      ...this.#waiting.standingReport(),
      ...this.#tally.report(this.#waiting.waitingByClass()),
      ...(this.#availability.lastCause === undefined
        ? {}
        : { lastError: describeRedisError(this.#availability.lastCause) }),
    };
  }

  /**
   * Stops the heartbeat, refuses waiters, aborts the signal of every held lease (their slots are
   * about to be given back, so their work must stop), gives them back and disconnects.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#heartbeat.stop();
    this.#waiting.close(this.limits.name);
    this.#leases.close();
    const redis = this.#redis;
    if (redis !== undefined && this.#availability.reachable) {
      await this.#calls.idle(); // admissions under way: what they are granted goes back too, not at its TTL
      const { held, lapsed } = this.#leases;
      const all = [...held.values(), ...lapsed.values(), ...this.#calls.takeQueued(), ...this.#calls.phantoms.values()];
      await this.#calls.release(redis, all, true);
    }
    this.#hungUp = true;
    await Promise.all([this.#waiting.subscriber, redis].map((r) => (r === undefined ? undefined : hangUp(r))));
    this.#unclaim?.();
  }

  /** @internal One admission through an adaptive limit's pause, to find whether it may end; refused as any admission otherwise. */
  async [kProbe](request: AdmissionRequest): Promise<Admission> {
    if (this.#closed) throw new PoolClosedError(request.pool);
    const cls = classOrError(request, this.limits);
    if (cls instanceof PoolConfigError) throw cls;
    const outcome = await this.#try(request, keyOf(request, this.limits), cls, false, true);
    if (!(outcome instanceof Error)) return this.#claimed(outcome, cls ?? 0);
    this.#tally.refused(cls ?? 0, outcome);
    throw outcome;
  }

  // ---- admission ------------------------------------------------------------------------------

  async #admit(request: AdmissionRequest): Promise<Admission> {
    const asked = classOrError(request, this.limits);
    if (asked instanceof PoolConfigError) throw asked; // a class the limiter does not have
    const [outcome, cls] = [await this.#try(request, keyOf(request, this.limits), asked), asked ?? 0];
    if (!(outcome instanceof Error)) return this.#claimed(outcome, cls);
    if (outcome instanceof PoolConfigError) throw outcome; // its perKey function failed
    if (!waits(this.limits, outcome instanceof KeyLimitError ? 'key' : 'global', request.timeoutMs)) {
      this.#tally.refused(cls, outcome);
      throw outcome;
    }
    return this.#tally.counting(this.#waiting.wait(request, outcome, cls), cls);
  }

  /** Counts an admission of class `cls` as it reaches its caller (not one granted to a waiter that had left). */
  #claimed(admission: Admission, cls: number): Admission {
    this.#leases.claim(admission);
    this.#tally.claimed(cls);
    return admission;
  }

  /**
   * One attempt of class `cls` (undefined without classes): an admission, not counted yet (see
   * {@link #claimed}), or the error that refused it. `retried`: the attempt follows one whose answer
   * came too late to hold on to.
   */
  async #try(
    request: AdmissionRequest,
    key: string | undefined,
    cls?: number,
    retried = false,
    probe = false,
  ): Promise<Outcome> {
    if (this.#closed) return new PoolClosedError(request.pool); // a retry, or a waiter served as the limiter closed
    const keyLimit = keyLimitOrError(key, this.limits);
    if (typeof keyLimit !== 'number') return keyLimit;
    if (this.#availability.reachable) {
      const held = this.#leases.create(request, key, true, keyLimit, cls);
      const sentAt = this.#clock.now();
      const reply = await this.#calls.admit(held, probe);
      if (!('error' in reply)) {
        const { status, quietMs } = reply;
        if (status > 0) {
          held.fence = status;
          held.expiresAt = this.#leases.expiryAfter(sentAt);
          if (this.#clock.now() < held.expiresAt) {
            this.#local.take(key, Infinity, Infinity); // the local counts include every lease held here
            this.#tally.took(held.cls, false);
            return this.#leases.admitted(held);
          }
          // The answer came after the lease's TTL had passed here (this event loop was blocked):
          // Redis may already have given the slot to someone else. Give it back and ask again, once.
          this.#calls.forget(held); // released before the next admission call (see RedisCalls)
          if (!retried) return this.#try(request, key, cls, true, probe);
          return new CapacityExceededError(
            request.pool,
            this.#global(),
            this.limits.retryAfterMs,
            'unavailable',
            new Error(LATE),
          );
        }
        if (status === -3) return new CapacityExceededError(request.pool, this.#global(), quietMs, 'quarantine');
        if (status === -4) return new CapacityExceededError(request.pool, this.#global(), reply.pausedMs, 'paused');
        return refusalError(status === -2 ? 'key' : 'global', request, this.#limitsNow(), keyLimit); // -5: held for other classes
      }
      // Timed out here, a sent call may still run when Redis resumes: a lease nobody holds.
      if (reply.sent) this.#calls.forget(held);
    }
    return this.#tryWhileDown(request, key, keyLimit, cls);
  }

  #tryWhileDown(request: AdmissionRequest, key: string | undefined, keyLimit: number, cls?: number): Outcome {
    if (this.#availability.mode() !== 'fallback') {
      return this.#availability.refusal(request.pool, this.#global(), this.limits.retryAfterMs);
    }
    const instances = this.#settings.instances ?? this.#heartbeat.instances;
    const global = fallbackShare(this.#global(), instances, this.#heartbeat);
    const perKey = fallbackShare(keyLimit, instances);
    const refusal = this.#local.take(key, global, perKey);
    if (refusal !== null) return refusalError(refusal, request, this.#limitsNow(), perKey);
    this.#tally.took(cls ?? 0, false);
    return this.#leases.admitted(this.#leases.create(request, key, false, keyLimit, cls));
  }

  // ---- Redis health ---------------------------------------------------------------------------

  #noteMode(): LimiterMode {
    return this.#availability.noteMode(this.limits.name);
  }

  #down(err: unknown): void {
    const warning = this.#availability.down(err, this.limits.name, this.#closed);
    if (warning !== undefined) this.#logger.warn(warning);
    this.#noteMode();
  }

  #up(): void {
    if (!this.#availability.up()) return;
    this.#logger.warn(`limiter "${this.limits.name}": Redis is reachable again; limits are shared again`);
    void this.#heartbeat.beat(); // registers what was admitted meanwhile
  }
}

import { randomUUID } from 'node:crypto';
import {
  CapacityExceededError,
  consoleLogger,
  KeyLimitError,
  LeaseLostError,
  PoolClosedError,
  PoolConfigError,
  systemClock,
  Timers,
  utilizationHealth,
  type Admission,
  type AdmissionRequest,
  type Clock,
  type PoolLogger,
  type TimerHandle,
} from '../core/index.js';
import type { ConcurrencyLimiter, LimiterCounters, LimiterStats } from './concurrency-limiter.js';
import { resolveLimits, type LimitOptions, type RedisLimitOptions, type ResolvedLimits } from './limits-options.js';
import { bounded, connectRedis, describeRedisError, hangUp, subscriberOf, whereOf, withTimeout, type Client } from './redis-client.js';
import { acquireScript, heartbeatScript, keyNameOf, RedisKeys } from './redis-scripts.js';
import { resolveRedis, type RedisSettings } from './redis-settings.js';
import { RedisAvailability } from './redis-availability.js';
import { claimNamespace } from './namespace-registry.js';
import { keyOf, refusalError } from './refusals.js';
import { SlotCounts } from './slot-counts.js';
import { SlotWaiters } from './slot-waiters.js';

/** Options of a {@link RedisLimiter}: the limits, and how to reach Redis. */
export interface RedisLimiterOptions extends LimitOptions {
  redis: RedisLimitOptions;
}

/** A lease this process holds. */
interface Held {
  readonly id: string;
  readonly key: string | undefined;
  /** The key's sorted set, or the global set when there is no key. */
  readonly keySet: string;
  /** Its member in the sets: the id, then after a '|' its key set's name less the prefix (see redis-scripts). */
  readonly member: string;
  readonly pool: string;
  /** Admitted by Redis (false: admitted under the local fallback, to be registered when Redis is back). */
  viaRedis: boolean;
  readonly lost: AbortController;
  /**
   * On this instance's clock, the last moment Redis surely still has the lease: when the call that
   * last confirmed it was sent, plus the TTL, less a margin. Redis counts the TTL from when it ran
   * that call, which is later. `Infinity` for a lease Redis never had (admitted under the fallback).
   */
  expiresAt: number;
}

/** Why an admission is refused whose answer came after its TTL twice in a row. */
const LATE = 'two answers in a row came after the lease TTL had passed here: this event loop is blocked for longer than leaseTtlMs';

/** Latest local expiry is this much before the TTL: clock rates and Redis's own TIME may drift. */
const EXPIRY_MARGIN = 0.02;

/** Admissions per call at most: a call holds Redis a few µs per admission. */
const ADMIT_BATCH = 200;

/** Leases per release call at most. */
const RELEASE_BATCH = 500;

/** Leases per heartbeat call: a call holds Redis 3 to 6 µs per lease, so none blocks it for long. */
const HEARTBEAT_BATCH = 100;

type Outcome = Admission | Error;

/** What the admission call said of one admission, or that it failed (`sent`: it may still run in Redis). */
type AcquireReply = { status: number; quietMs: number } | { error: unknown; sent: boolean };

/** An admission waiting for its call. */
interface ToAdmit {
  readonly held: Held;
  readonly settle: (reply: AcquireReply) => void;
}

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
  readonly #connection: RedisLimitOptions;
  readonly #clock: Clock;
  readonly #timers: Timers;
  readonly #logger: PoolLogger;
  readonly #instance = randomUUID().slice(0, 8);
  #nextLease = 1;

  #redis: Client | undefined;
  #subscriber: Client | undefined;
  readonly #held = new Map<string, Held>();
  /** Every lease this process holds, however admitted: the fallback limits count these. */
  readonly #local = new SlotCounts();
  readonly #waiters: SlotWaiters<Admission>;
  /** The latest refusal of each waiting request: what it gets at its deadline. */
  readonly #refusals = new WeakMap<AdmissionRequest, Error>();
  readonly #counters: LimiterCounters = { admitted: 0, released: 0, refusedGlobal: 0, refusedKey: 0, lost: 0 };
  /** Admissions whose call timed out: Redis may still run them, so they are released by id once it answers. */
  readonly #phantoms = new Map<string, Held>();
  /** Admissions asked for while an admission call is on its way; `#admitting` while one is. */
  readonly #toAdmit: ToAdmit[] = [];
  /** Releases of this tick, sent together. */
  readonly #toRelease: Held[] = [];
  #admitting = false;
  #expiryTimer: TimerHandle | undefined;
  #expiryAt = Infinity;

  /** Leases in Redis at the last call, and instances that heartbeated within a TTL. */
  #used = 0;
  #instancesSeen = 1;
  #heartbeatTimer: TimerHandle | undefined;
  #pollTimer: TimerHandle | undefined;
  #beat: Promise<void> | undefined;
  #serving = false;
  #closed = false;
  /**
   * The run_id of the server this connection talks to, learned once per connection (not by each
   * script: INFO is in @dangerous, and was most of the scripts' cost); '' when the user may not run INFO.
   */
  #runId: string | undefined;
  /** Gives back this limiter's claim on its namespace, once started. */
  #unclaim: (() => void) | undefined;

  constructor(options: RedisLimiterOptions) {
    this.limits = resolveLimits(options);
    this.#connection = options.redis;
    this.#settings = resolveRedis(this.limits.name, options.redis);
    this.#keys = new RedisKeys(this.#settings.namespace);
    this.#clock = options.clock ?? systemClock;
    this.#availability = new RedisAvailability(this.#settings, this.#clock);
    this.#timers = new Timers(this.#clock);
    this.#logger = options.logger ?? consoleLogger;
    this.#waiters = new SlotWaiters(this.#clock);
  }

  /** Connects; if Redis is not reachable the limiter starts as unreachable (see `fallbackAfterMs`) and keeps trying. */
  async start(): Promise<void> {
    if (this.#redis !== undefined) return;
    this.#unclaim = claimNamespace(whereOf(this.#connection), this.#settings.namespace, this.limits);
    const redis = await connectRedis(this.limits.name, this.#connection, this.#settings.commandTimeoutMs);
    this.#redis = redis;
    redis.on('error', (err: Error) => this.#down(err));
    // A new connection may reach another server (a failover): learn its run_id again.
    redis.on('close', () => (this.#runId = undefined));
    redis.on('ready', () => {
      this.#runId = undefined;
      void this.#heartbeat();
    });
    try {
      await withTimeout(redis.connect(), this.#settings.commandTimeoutMs * 2, 'connect');
      await this.#heartbeat();
    } catch (err) {
      this.#down(err);
    }
    this.#scheduleHeartbeat();
  }

  admit(request: AdmissionRequest): Promise<Admission> {
    if (this.#closed) return Promise.reject(new PoolClosedError(request.pool));
    if (this.#redis === undefined) {
      return Promise.reject(new PoolConfigError(this.limits.name, 'limiter', 'is not started: call start() (PoolModule does) before admitting'));
    }
    return this.#admit(request);
  }

  stats(): LimiterStats {
    const mode = this.#availability.mode();
    const used = mode === 'fallback' ? this.#local.used : this.#used;
    const limit = this.limits.global;
    const utilization = limit === Infinity ? 0 : used / limit;
    return {
      mode,
      used,
      limit,
      perKey: this.limits.perKey,
      utilization,
      health: utilizationHealth(utilization),
      held: this.#local.used,
      waiting: this.#waiters.length,
      counters: { ...this.#counters },
      ...(this.#availability.lastCause === undefined ? {} : { lastError: describeRedisError(this.#availability.lastCause) }),
    };
  }

  /**
   * Stops the heartbeat, refuses waiters, aborts the signal of every held lease (their slots are
   * about to be given back, so their work must stop), gives them back and disconnects.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const t of [this.#heartbeatTimer, this.#pollTimer]) if (t !== undefined) this.#clock.clearTimeout(t);
    this.#timers.clear(this.#expiryTimer);
    this.#waiters.rejectAll(new PoolClosedError(this.limits.name));
    for (const held of this.#held.values()) {
      held.lost.abort(new LeaseLostError(held.pool, held.id, 'the limiter closed and gave its slot back'));
    }
    const redis = this.#redis;
    if (redis !== undefined && this.#availability.reachable) {
      await this.#releaseInRedis(redis, [...this.#held.values(), ...this.#toRelease.splice(0), ...this.#phantoms.values()]);
    }
    await Promise.all([this.#subscriber, redis].map((r) => (r === undefined ? undefined : hangUp(r))));
    this.#unclaim?.();
  }

  /** The server's run_id, once per connection; '' when the user may not run INFO (restarts are then told by the sentinel and the silence). */
  async #learnRun(redis: Client): Promise<string> {
    // A Cluster answers INFO from any node, not the one of the namespace's slot: its restarts and
    // failovers are told by the sentinel and the silence.
    if (redis.isCluster) return (this.#runId = '');
    try {
      const info = await redis.info('server');
      this.#runId = /run_id:(\w+)/.exec(info)?.[1] ?? '';
    } catch (err) {
      if (!/NOPERM/.test(String((err as Error)?.message))) throw err;
      this.#runId = '';
      this.#logger.warn(
        `limiter "${this.limits.name}": the Redis user may not run INFO; restarts and failovers are detected by the lease set's sentinel and by silences longer than a TTL`,
      );
    }
    return this.#runId;
  }

  // ---- admission ------------------------------------------------------------------------------

  async #admit(request: AdmissionRequest): Promise<Admission> {
    const key = keyOf(request, this.limits);
    const outcome = await this.#try(request, key);
    if (!(outcome instanceof Error)) return outcome;
    if (!this.limits.wait || !(request.timeoutMs > 0)) throw outcome;
    this.#listen();
    this.#refusals.set(request, outcome);
    const waiting = this.#waiters.wait(request, () => this.#refusals.get(request) ?? outcome);
    this.#schedulePoll();
    return waiting;
  }

  /**
   * One attempt: an admission, or the error that refused it. `retried`: the attempt follows one
   * whose answer came too late to hold on to.
   */
  async #try(request: AdmissionRequest, key: string | undefined, retried = false): Promise<Outcome> {
    if (this.#availability.reachable) {
      const held = this.#newLease(request, key, true);
      const sentAt = this.#clock.now();
      const reply = await new Promise<AcquireReply>((settle) => {
        this.#toAdmit.push({ held, settle });
        if (!this.#admitting) void this.#sendAdmissions();
      });
      if (!('error' in reply)) {
        const { status, quietMs } = reply;
        if (status === 1) {
          held.expiresAt = this.#expiry(sentAt);
          if (this.#clock.now() < held.expiresAt) {
            this.#local.take(key, Infinity, Infinity); // the local counts include every lease held here
            return this.#admitted(held);
          }
          // The answer came after the lease's TTL had passed here (this event loop was blocked):
          // Redis may already have given the slot to someone else. Give it back and ask again, once.
          this.#forget(held);
          await null; // the release goes out (this tick's microtask) before the new admission
          if (!retried) return this.#try(request, key, true);
          this.#counters.refusedGlobal++;
          return new CapacityExceededError(request.pool, this.limits.global, this.limits.retryAfterMs, 'unavailable', new Error(LATE));
        }
        this.#counters[status === -2 ? 'refusedKey' : 'refusedGlobal']++;
        if (status === -3) return new CapacityExceededError(request.pool, this.limits.global, quietMs, 'quarantine');
        return refusalError(status === -1 ? 'global' : 'key', request, this.limits);
      }
      // Timed out here, a sent call may still run when Redis resumes: a lease nobody holds.
      if (reply.sent) this.#forget(held);
    }
    return this.#tryWhileDown(request, key);
  }

  /**
   * One admission call at a time: what is asked for meanwhile goes together in the next (up to
   * ADMIT_BATCH), in order. A lone admission is sent at once; under load a call serves many, and
   * Redis pays a script's fixed cost once for all of them.
   */
  async #sendAdmissions(): Promise<void> {
    const redis = this.#redis!;
    const { global, perKey } = this.limits;
    this.#admitting = true;
    while (this.#toAdmit.length > 0) {
      const batch = this.#toAdmit.splice(0, ADMIT_BATCH);
      // Releases of this tick go first, on the same connection: a slot given back just before is free for these.
      if (this.#toRelease.length > 0) void this.#releaseInRedis(redis, this.#toRelease.splice(0));
      try {
        const run = this.#runId ?? (await this.#learnRun(redis));
        const reply = (await this.#bounded(acquireScript.run(
          redis,
          [this.#keys.global, this.#keys.meta, ...batch.map((b) => b.held.keySet)],
          [this.#settings.ttlMs, global === Infinity ? -1 : global, perKey === Infinity ? -1 : perKey, this.#settings.protect ? '1' : '0', run, ...batch.map((b) => b.held.member)],
        ))) as number[];
        this.#up();
        const [used, quietMs] = reply as [number, number];
        this.#used = used;
        if (quietMs > 0) this.#availability.quietUntil = this.#clock.now() + quietMs;
        batch.forEach((b, i) => b.settle({ status: reply[i + 2]!, quietMs }));
      } catch (err) {
        this.#down(err);
        for (const b of batch) b.settle({ error: err, sent: true });
        // Those not sent yet would only wait for the same outage.
        for (const b of this.#toAdmit.splice(0)) b.settle({ error: err, sent: false });
      }
    }
    this.#admitting = false;
  }

  #tryWhileDown(request: AdmissionRequest, key: string | undefined): Outcome {
    const mode = this.#availability.mode();
    if (mode !== 'fallback') {
      this.#counters.refusedGlobal++;
      const left = mode === 'unreachable' ? this.#availability.downSince! + this.#settings.fallbackAfterMs - this.#clock.now() : this.limits.retryAfterMs;
      const last = this.#availability.lastCause;
      const cause = last === undefined ? undefined : new Error(describeRedisError(last), { cause: last });
      return new CapacityExceededError(request.pool, this.limits.global, Math.max(1, left), 'unavailable', cause);
    }
    const refusal = this.#local.take(key, this.#share(this.limits.global), this.#share(this.limits.perKey));
    if (refusal !== null) {
      this.#counters[refusal === 'key' ? 'refusedKey' : 'refusedGlobal']++;
      return refusalError(refusal, request, this.limits);
    }
    return this.#admitted(this.#newLease(request, key, false));
  }

  /** A lease with a fresh id, not yet held. */
  #newLease(request: AdmissionRequest, key: string | undefined, viaRedis: boolean): Held {
    const id = `${this.#instance}:${this.#nextLease++}`;
    const keyName = key === undefined ? undefined : keyNameOf(key);
    return {
      id,
      key,
      keySet: keyName === undefined ? this.#keys.global : this.#keys.keySetPrefix + keyName,
      member: keyName === undefined ? id : `${id}|${keyName}`,
      pool: request.pool,
      viaRedis,
      lost: new AbortController(),
      expiresAt: Infinity,
    };
  }

  /** Records a held lease (already in the local counts) and hands out its admission. */
  #admitted(held: Held): Admission {
    this.#held.set(held.id, held);
    this.#counters.admitted++;
    if (held.expiresAt < this.#expiryAt) this.#armExpiry(held.expiresAt);
    let released = false;
    return {
      id: held.id,
      signal: held.lost.signal,
      release: () => {
        if (released) return;
        released = true;
        // A blocked event loop can run the work's own timers before the expiry's: still reported.
        if (this.#held.has(held.id) && this.#clock.now() >= held.expiresAt) this.#lose(held.id, LOCALLY_EXPIRED);
        this.#held.delete(held.id);
        this.#local.give(held.key);
        this.#counters.released++;
        const redis = this.#redis;
        if (redis !== undefined && this.#availability.reachable && !this.#closed) this.#releaseSoon(redis, held);
        if (this.#waiters.length > 0) void this.#serve();
      },
    };
  }

  /**
   * Releases: the leases out of their sets and waiters everywhere told, in one transaction (no
   * script: a script call costs Redis several times the commands it runs). Resolves to the leases left.
   */
  async #release(redis: Client, helds: readonly Held[]): Promise<number> {
    const g = this.#keys.global;
    const tx = redis.multi().zrem(g, ...helds.map((h) => h.member));
    for (const h of helds) if (h.keySet !== g) tx.zrem(h.keySet, h.member);
    const replies = (await this.#bounded(tx.publish(this.#keys.channel, '1').zcard(g).exec()))!; // null only under WATCH
    for (const [err] of replies) if (err) throw err;
    return Math.max(0, Number(replies.at(-1)![1]) - 1); // less the sentinel; expired leases count until a heartbeat removes them
  }

  /** Releases of one tick go in one call. */
  #releaseSoon(redis: Client, held: Held): void {
    this.#toRelease.push(held);
    if (this.#toRelease.length === 1) queueMicrotask(() => void this.#releaseInRedis(redis, this.#toRelease.splice(0)));
  }

  async #releaseInRedis(redis: Client, helds: readonly Held[]): Promise<void> {
    try {
      for (let from = 0; from < helds.length; from += RELEASE_BATCH) {
        const batch = helds.slice(from, from + RELEASE_BATCH);
        this.#used = await this.#release(redis, batch);
        if (this.#phantoms.size > 0) for (const h of batch) this.#phantoms.delete(h.id);
      }
    } catch (err) {
      this.#down(err); // the leases expire by themselves within a TTL
    }
  }

  // ---- waiting --------------------------------------------------------------------------------

  /** Tries the waiters in arrival order; stops at the first global refusal. */
  async #serve(): Promise<void> {
    if (this.#serving || this.#closed) return;
    this.#serving = true;
    try {
      for (const w of this.#waiters.snapshot()) {
        const outcome = await this.#try(w.request, w.request.key);
        if (!(outcome instanceof Error)) {
          // The waiter may have timed out during the call: then nobody would hold the lease.
          if (this.#waiters.has(w)) w.resolve(outcome);
          else outcome.release();
          continue;
        }
        this.#refusals.set(w.request, outcome);
        if (!(outcome instanceof KeyLimitError)) break;
      }
    } finally {
      this.#serving = false;
    }
  }

  /** Wakes waiters on every instance's release (pub/sub); the poll is the backstop. */
  #listen(): void {
    if (this.#subscriber !== undefined || this.#redis === undefined) return;
    const redis = this.#redis;
    const sub = subscriberOf(redis);
    this.#subscriber = sub;
    sub.on('error', () => {}); // the main connection reports outages
    sub.on('message', () => void this.#serve());
    sub.subscribe(this.#keys.channel).catch(() => {});
  }

  #schedulePoll(): void {
    if (this.#pollTimer !== undefined || this.#closed) return;
    const delay = this.#settings.pollMs * (0.5 + Math.random());
    this.#pollTimer = this.#clock.setTimeout(() => {
      this.#pollTimer = undefined;
      void this.#serve().finally(() => {
        if (this.#waiters.length > 0) this.#schedulePoll();
      });
    }, delay);
  }

  /** A call bounded by commandTimeoutMs (see `bounded`). */
  #bounded<V>(call: Promise<V>): Promise<V> {
    return bounded(this.#redis, call, this.#settings.commandTimeoutMs);
  }

  // ---- heartbeat and Redis health -------------------------------------------------------------

  #scheduleHeartbeat(): void {
    if (this.#closed) return;
    this.#heartbeatTimer = this.#clock.setTimeout(() => {
      void this.#heartbeat().finally(() => this.#scheduleHeartbeat());
    }, this.#settings.heartbeatMs);
  }

  /** One heartbeat at a time: a caller during one in flight waits for that one. */
  #heartbeat(): Promise<void> {
    this.#beat ??= this.#beatOnce().finally(() => (this.#beat = undefined));
    return this.#beat;
  }

  /** One call refreshes every held lease, registers fallback ones, and learns which were lost. */
  async #beatOnce(): Promise<void> {
    const redis = this.#redis;
    if (redis === undefined || this.#closed) return;
    const held = [...this.#held.values()];
    const sentAt = this.#clock.now();
    try {
      const run = this.#runId ?? (await this.#learnRun(redis));
      const fixedKeys = [this.#keys.global, this.#keys.meta, this.#keys.instances];
      const fixedArgs = [this.#settings.ttlMs, this.#settings.protect ? '1' : '0', this.#instance, run];
      const prefix = this.#keys.keySetPrefix;
      const calls: Promise<unknown>[] = [];
      for (let from = 0; from === 0 || from < held.length; from += HEARTBEAT_BATCH) {
        const batch = held.slice(from, from + HEARTBEAT_BATCH);
        const modes = batch.map((h) => (h.viaRedis ? 'h' : 'r')).join('');
        const args = [...fixedArgs, from === 0 ? '1' : '0', prefix, modes, ...batch.map((h) => h.member)];
        calls.push(this.#bounded(heartbeatScript.run(redis, fixedKeys, args))); // sent together: one round trip
      }
      const replies = (await Promise.all(calls)) as (number | string)[][];
      this.#up();
      const [used, instances, quietMs] = replies.at(-1)!; // the last call saw every other's writes
      this.#used = Number(used);
      this.#instancesSeen = Math.max(1, Number(instances));
      this.#availability.quietUntil = this.#clock.now() + Number(quietMs);
      for (const lost of replies.flatMap((r) => r.slice(3))) {
        this.#lose(String(lost).split('|')[0]!, 'Redis no longer had it: its TTL lapsed before a heartbeat refreshed it');
      }
      const expiresAt = this.#expiry(sentAt);
      for (const h of held) {
        h.viaRedis = true;
        if (this.#held.has(h.id)) h.expiresAt = expiresAt;
      }
      this.#armExpiry(this.#earliestExpiry());
      if (this.#phantoms.size > 0) void this.#releaseInRedis(redis, [...this.#phantoms.values()]);
    } catch (err) {
      this.#down(err);
    }
    if (this.#waiters.length > 0) void this.#serve();
  }

  /** The local expiry of a lease confirmed by a call sent at `sentAt`. */
  #expiry(sentAt: number): number {
    const ttl = this.#settings.ttlMs;
    return sentAt + ttl - Math.max(1, ttl * EXPIRY_MARGIN);
  }

  #earliestExpiry(): number {
    let earliest = Infinity;
    for (const h of this.#held.values()) if (h.expiresAt < earliest) earliest = h.expiresAt;
    return earliest;
  }

  /** One timer, at the earliest local expiry of a held lease. */
  #armExpiry(at: number): void {
    this.#timers.clear(this.#expiryTimer);
    this.#expiryTimer = undefined;
    this.#expiryAt = at;
    if (at === Infinity || this.#closed) return;
    this.#expiryTimer = this.#timers.set(() => this.#expire(), at - this.#clock.now());
  }

  /** Leases whose confirmation is older than a TTL: Redis may have given their slots away. */
  #expire(): void {
    this.#expiryTimer = undefined;
    const now = this.#clock.now();
    for (const h of [...this.#held.values()]) if (h.expiresAt <= now) this.#lose(h.id, LOCALLY_EXPIRED);
    this.#armExpiry(this.#earliestExpiry());
  }

  #lose(id: string, why: string): void {
    const held = this.#held.get(id);
    if (held === undefined) return;
    this.#held.delete(id); // it still counts locally until its holder releases it
    this.#counters.lost++;
    const error = new LeaseLostError(held.pool, id, why);
    this.#logger.warn(error.message);
    held.lost.abort(error);
  }

  /**
   * A timed-out admission: released by id now, with this tick's releases (queued behind it on the
   * same connection, so Redis runs it after the admission), and after each good heartbeat until
   * a release of it succeeds.
   */
  #forget(held: Held): void {
    this.#phantoms.set(held.id, held);
    this.#releaseSoon(this.#redis!, held);
  }

  #down(err: unknown): void {
    const warning = this.#availability.down(err, this.limits.name, this.#closed);
    if (warning !== undefined) this.#logger.warn(warning);
  }

  #up(): void {
    if (!this.#availability.up()) return;
    this.#logger.warn(`limiter "${this.limits.name}": Redis is reachable again; limits are shared again`);
    void this.#heartbeat(); // registers what was admitted meanwhile
  }

  /** This instance's share of a limit while Redis is unreachable. */
  #share(limit: number): number {
    if (limit === Infinity) return Infinity;
    return Math.max(1, Math.floor(limit / (this.#settings.instances ?? this.#instancesSeen)));
  }
}

const LOCALLY_EXPIRED =
  'no heartbeat confirmed it within its TTL (Redis stalled or was unreachable, or this process was blocked): Redis may have given its slot away';


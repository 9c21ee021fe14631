import { createHash, randomUUID } from 'node:crypto';
import type { Cluster, ClusterOptions, Redis, RedisOptions } from 'ioredis';
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
import { backoffMs } from '../core/backoff.js';
import type { ConcurrencyLimiter, LimiterCounters, LimiterStats } from './concurrency-limiter.js';
import { resolveLimits, type LimitOptions, type RedisLimitOptions, type ResolvedLimits } from './limits-options.js';
import { acquireScript, heartbeatScript } from './redis-scripts.js';
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

/** Longest lease TTL: a crashed instance's slots stay taken this long. */
const MAX_TTL_MS = 86_400_000;

/** Admissions per call at most: a call holds Redis a few µs per admission. */
const ADMIT_BATCH = 200;

/** Leases per release call at most. */
const RELEASE_BATCH = 500;

/** Leases per heartbeat call: a call holds Redis 3 to 6 µs per lease, so none blocks it for long. */
const HEARTBEAT_BATCH = 100;

/** Keys longer than this are hashed (SHA-1) in Redis key names: they are sent on every call and heartbeat. */
const MAX_KEY_LENGTH = 128;

/**
 * The limits of every started limiter in this process, by Redis and namespace: two limiters that
 * would share a namespace with different limits would each enforce their own on one budget.
 */
const namespaces = new Map<string, { name: string; global: number; perKey: number; users: number }>();

/** The Redis settings after defaults. */
interface RedisSettings {
  readonly namespace: string;
  readonly ttlMs: number;
  readonly heartbeatMs: number;
  readonly commandTimeoutMs: number;
  readonly protect: boolean;
  readonly fallback: 'local' | 'fail-closed';
  readonly fallbackAfterMs: number;
  readonly instances: number | undefined;
  readonly pollMs: number;
}

type Outcome = Admission | Error;

/** A connection to Redis: one server (or Sentinel's master), or a Cluster. */
type Client = Redis | Cluster;

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
  #quietUntil = 0;
  /** When Redis became unreachable; undefined while it answers. */
  #downSince: number | undefined;
  #heartbeatTimer: TimerHandle | undefined;
  #pollTimer: TimerHandle | undefined;
  #beat: Promise<void> | undefined;
  #serving = false;
  #closed = false;
  /** Whether Redis ever answered: until then the number of instances sharing the limits is unknown. */
  #everReached = false;
  /**
   * The run_id of the server this connection talks to, learned once per connection (not by each
   * script: INFO is in @dangerous, and was most of the scripts' cost); '' when the user may not run INFO.
   */
  #runId: string | undefined;
  /** Why Redis is unreachable: the first specific error of the outage (`lastError` describes it). */
  #lastCause: unknown;
  /** This limiter's entry in `namespaces`, once started. */
  #registered: string | undefined;

  constructor(options: RedisLimiterOptions) {
    this.limits = resolveLimits(options);
    this.#connection = options.redis;
    this.#settings = resolveRedis(this.limits.name, options.redis);
    this.#clock = options.clock ?? systemClock;
    this.#timers = new Timers(this.#clock);
    this.#logger = options.logger ?? consoleLogger;
    this.#waiters = new SlotWaiters(this.#clock);
  }

  /** Connects; if Redis is not reachable the limiter starts as unreachable (see `fallbackAfterMs`) and keeps trying. */
  async start(): Promise<void> {
    if (this.#redis !== undefined) return;
    this.#register();
    const redis = await this.#connect();
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
    const mode = this.#mode();
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
      ...(this.#lastCause === undefined ? {} : { lastError: describeRedisError(this.#lastCause) }),
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
    if (redis !== undefined && this.#downSince === undefined) {
      await this.#releaseInRedis(redis, [...this.#held.values(), ...this.#toRelease.splice(0), ...this.#phantoms.values()]);
    }
    await Promise.all([this.#subscriber, redis].map((r) => (r === undefined ? undefined : hangUp(r))));
    this.#unregister();
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

  /** Refuses to share a namespace (on the same Redis) with a limiter of other limits. */
  #register(): void {
    const where = whereOf(this.#connection);
    const id = `${where}|${this.#settings.namespace}`;
    const { name, global, perKey } = this.limits;
    const other = namespaces.get(id);
    if (other !== undefined && (other.global !== global || other.perKey !== perKey)) {
      throw new PoolConfigError(
        name,
        'limits.redis.namespace',
        `"${this.#settings.namespace}" is already used on this Redis by limiter "${other.name}" with other limits ` +
          `(global ${other.global}, perKey ${other.perKey}; here ${global}, ${perKey}): they would share one budget. Give each its own namespace, or the same limits`,
      );
    }
    if (other !== undefined) other.users++;
    else namespaces.set(id, { name, global, perKey, users: 1 });
    this.#registered = id;
  }

  #unregister(): void {
    const id = this.#registered;
    if (id === undefined) return;
    this.#registered = undefined;
    const entry = namespaces.get(id);
    if (entry !== undefined && --entry.users === 0) namespaces.delete(id);
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
    if (this.#downSince === undefined) {
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
          [this.#globalSet(), this.#meta(), ...batch.map((b) => b.held.keySet)],
          [this.#settings.ttlMs, global === Infinity ? -1 : global, perKey === Infinity ? -1 : perKey, this.#settings.protect ? '1' : '0', run, ...batch.map((b) => b.held.member)],
        ))) as number[];
        this.#up();
        const [used, quietMs] = reply as [number, number];
        this.#used = used;
        if (quietMs > 0) this.#quietUntil = this.#clock.now() + quietMs;
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
    const mode = this.#mode();
    if (mode !== 'fallback') {
      this.#counters.refusedGlobal++;
      const left = mode === 'unreachable' ? this.#downSince! + this.#settings.fallbackAfterMs - this.#clock.now() : this.limits.retryAfterMs;
      const last = this.#lastCause;
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
      keySet: keyName === undefined ? this.#globalSet() : this.#keySetPrefix() + keyName,
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
        if (redis !== undefined && this.#downSince === undefined && !this.#closed) this.#releaseSoon(redis, held);
        if (this.#waiters.length > 0) void this.#serve();
      },
    };
  }

  /**
   * Releases: the leases out of their sets and waiters everywhere told, in one transaction (no
   * script: a script call costs Redis several times the commands it runs). Resolves to the leases left.
   */
  async #release(redis: Client, helds: readonly Held[]): Promise<number> {
    const g = this.#globalSet();
    const tx = redis.multi().zrem(g, ...helds.map((h) => h.member));
    for (const h of helds) if (h.keySet !== g) tx.zrem(h.keySet, h.member);
    const replies = (await this.#bounded(tx.publish(this.#channel(), '1').zcard(g).exec()))!; // null only under WATCH
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
    const sub = redis.isCluster
      ? (redis as Cluster).duplicate(undefined, { enableOfflineQueue: true, lazyConnect: false })
      : (redis as Redis).duplicate({ enableOfflineQueue: true, lazyConnect: false });
    this.#subscriber = sub;
    sub.on('error', () => {}); // the main connection reports outages
    sub.on('message', () => void this.#serve());
    sub.subscribe(this.#channel()).catch(() => {});
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
      const fixedKeys = [this.#globalSet(), this.#meta(), this.#instancesSet()];
      const fixedArgs = [this.#settings.ttlMs, this.#settings.protect ? '1' : '0', this.#instance, run];
      const prefix = this.#keySetPrefix();
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
      this.#quietUntil = this.#clock.now() + Number(quietMs);
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
    // ioredis follows a specific failure (WRONGPASS, a TLS error) with generic ones: keep the first.
    const generic = /Stream isn't writeable|Connection is closed|enableOfflineQueue/.test(String((err as Error)?.message));
    if (!(generic && this.#downSince !== undefined && this.#lastCause !== undefined)) this.#lastCause = err;
    if (this.#downSince !== undefined || this.#closed) return;
    this.#downSince = this.#clock.now();
    let then = 'and after that too (fail-closed)';
    if (this.#canShare()) then = 'then limited per instance until Redis is back';
    else if (this.#settings.fallback === 'local') {
      then = 'and after that too: it has never reached Redis, so it cannot know how many instances share the limits (set redis.instances to fall back to a share)';
    }
    const why = describeRedisError(this.#lastCause);
    this.#logger.warn(`limiter "${this.limits.name}": Redis is unreachable (${why}); admissions are refused for ${this.#settings.fallbackAfterMs} ms, ${then}`);
  }

  #up(): void {
    this.#everReached = true;
    if (this.#downSince === undefined) return;
    this.#downSince = undefined;
    this.#lastCause = undefined;
    this.#logger.warn(`limiter "${this.limits.name}": Redis is reachable again; limits are shared again`);
    void this.#heartbeat(); // registers what was admitted meanwhile
  }

  #mode(): string {
    const now = this.#clock.now();
    if (this.#downSince === undefined) return now < this.#quietUntil ? 'quarantine' : 'redis';
    if (now - this.#downSince < this.#settings.fallbackAfterMs) return 'unreachable';
    return this.#canShare() ? 'fallback' : 'fail-closed';
  }

  /**
   * Whether limits per instance may stand in for Redis. Never having reached Redis, a limiter
   * cannot know how many instances share the limits: a share computed as if it were alone would
   * let every instance take the whole limit.
   */
  #canShare(): boolean {
    return this.#settings.fallback === 'local' && (this.#everReached || this.#settings.instances !== undefined);
  }

  /** This instance's share of a limit while Redis is unreachable. */
  #share(limit: number): number {
    if (limit === Infinity) return Infinity;
    return Math.max(1, Math.floor(limit / (this.#settings.instances ?? this.#instancesSeen)));
  }

  async #connect(): Promise<Client> {
    const { url, client, options, cluster } = this.#connection;
    const timeout = this.#settings.commandTimeoutMs;
    // Fail fast: no offline queue, no retries per command; reconnect in the background.
    const failFast: RedisOptions = {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: timeout,
      disconnectTimeout: timeout,
      retryStrategy: (attempt: number) => backoffMs(attempt, 100, 1_000),
      // ioredis's ready check runs INFO, which a hardened ACL user may not (it then warns on every
      // connect); a loading server answers LOADING, which counts as unreachable. Behind Sentinel
      // the check also confirms the node's role, so it stays.
      ...((client === undefined ? options : (client as Redis).options)?.sentinels === undefined ? { enableReadyCheck: false } : {}),
    };
    // A Cluster retries a command through redirections and failovers for as long as its own
    // settings allow: short waits here, and each call is bounded by commandTimeoutMs besides.
    const clusterFailFast = (given: ClusterOptions | undefined): ClusterOptions => ({
      ...given,
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRedirections: 4,
      retryDelayOnFailover: 50,
      retryDelayOnClusterDown: 50,
      retryDelayOnTryAgain: 50,
      slotsRefreshTimeout: timeout,
      slotsRefreshInterval: 5_000,
      clusterRetryStrategy: (attempt: number) => backoffMs(attempt, 100, 1_000),
      redisOptions: { ...given?.redisOptions, commandTimeout: timeout, maxRetriesPerRequest: 0, connectTimeout: timeout * 2 },
    });
    if (client?.isCluster) {
      const given = client as Cluster;
      return given.duplicate(undefined, clusterFailFast(given.options));
    }
    if (client !== undefined) return (client as Redis).duplicate(failFast);
    let ioredis: { Redis: typeof Redis; Cluster: typeof Cluster };
    try {
      ioredis = await import('ioredis');
    } catch {
      throw new PoolConfigError(this.limits.name, 'limits.redis', 'needs the ioredis package: npm install ioredis');
    }
    if (cluster !== undefined) return new ioredis.Cluster(cluster.nodes, clusterFailFast(cluster.options));
    return url === undefined ? new ioredis.Redis({ ...options, ...failFast }) : new ioredis.Redis(url, { ...options, ...failFast });
  }

  /**
   * A call bounded by commandTimeoutMs: a Cluster's own retries may outlast its per-command timeout.
   * A Cluster whose call timed out asks for the slots again: a frozen master answers no MOVED, and
   * ioredis would keep sending to it after its replica took over.
   */
  async #bounded<V>(call: Promise<V>): Promise<V> {
    const redis = this.#redis;
    if (!redis?.isCluster) return call;
    try {
      return await withTimeout(call, this.#settings.commandTimeoutMs, 'the command');
    } catch (err) {
      (redis as Cluster).refreshSlotsCache();
      throw err;
    }
  }

  #globalSet(): string {
    return `{${this.#settings.namespace}}:g`;
  }

  #keySetPrefix(): string {
    return `{${this.#settings.namespace}}:k:`;
  }

  #meta(): string {
    return `{${this.#settings.namespace}}:meta`;
  }

  #instancesSet(): string {
    return `{${this.#settings.namespace}}:i`;
  }

  #channel(): string {
    return `{${this.#settings.namespace}}:released`;
  }
}

/** Where a limiter's Redis is, to tell two limiters on one Redis apart. */
function whereOf({ url, client, options, cluster }: RedisLimitOptions): string {
  if (url !== undefined) return url;
  const nodes = cluster?.nodes ?? (client?.isCluster ? (client as unknown as { startupNodes: unknown[] }).startupNodes : undefined);
  if (nodes !== undefined) return `cluster ${JSON.stringify(nodes)}`;
  const o = client === undefined ? options : (client as Redis).options;
  if (o?.sentinels !== undefined) return `sentinel ${o.name ?? ''} ${JSON.stringify(o.sentinels)}/${o.db ?? 0}`;
  return `${o?.host}:${o?.port}/${o?.db ?? 0}`;
}

/** What a Redis error means for the limiter, with what to change; the error's own text kept. */
export function describeRedisError(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  const code = String((err as { code?: unknown })?.code ?? '');
  if (/^NOPERM/.test(text)) {
    return `the Redis user may not run a command the limiter needs (${text}); grant it +@scripting +@transaction +@sortedset +@hash +@pubsub +@connection, or use another user`;
  }
  if (/^READONLY/.test(text)) return `the URL points at a read-only replica (${text}); point it at the primary, or use Sentinel`;
  if (/WRONGPASS|NOAUTH|invalid username-password|AUTH failed/i.test(text)) {
    return `Redis refused the credentials (${text}); check the user and password of the URL or options`;
  }
  if (/^(ERR_TLS|ERR_SSL|CERT_|DEPTH_ZERO|SELF_SIGNED|UNABLE_TO_)/.test(code) || /SSL routines|certificate|TLS/i.test(text)) {
    return `the TLS connection to Redis failed (${code === '' ? text : `${code}: ${text}`}); check rediss:// and the certificates`;
  }
  if (code === 'ECONNRESET') return `Redis closed the connection (${text}); if it takes TLS connections only, use rediss:// (or tls in the options)`;
  if (/^MOVED/.test(text)) return `the URL points at a Redis Cluster node (${text}); pass the cluster as redis.cluster: { nodes: [...] } (or a Cluster client)`;
  if (/Failed to refresh slots cache|None of startup nodes is available/.test(text)) {
    return `no startup node of the Redis Cluster answered (${text}); check redis.cluster.nodes and that the cluster is up`;
  }
  if (/^CLUSTERDOWN|^TRYAGAIN/.test(text)) return `the Redis Cluster cannot serve the namespace's slot (${text})`;
  return text;
}

/** A key's name in Redis: the key itself, or a hash of it when it is long (keys are sent on every call and heartbeat). */
function keyNameOf(key: string): string {
  return key.length > MAX_KEY_LENGTH ? `#${createHash('sha1').update(key).digest('hex')}` : key;
}

const LOCALLY_EXPIRED =
  'no heartbeat confirmed it within its TTL (Redis stalled or was unreachable, or this process was blocked): Redis may have given its slot away';

function resolveRedis(name: string, r: RedisLimitOptions): RedisSettings {
  if (typeof r !== 'object' || r === null) throw new PoolConfigError(name, 'limits.redis', 'must be an object: { url } or { client }');
  const given = (['url', 'client', 'options', 'cluster'] as const).filter((k) => r[k] !== undefined);
  if (given.length !== 1) {
    const got = given.length === 0 ? 'none' : given.join(' and ');
    throw new PoolConfigError(name, 'limits.redis', `needs exactly one of url, client, options or cluster, got ${got}`);
  }
  if (r.cluster !== undefined && !(Array.isArray(r.cluster.nodes) && r.cluster.nodes.length > 0)) {
    throw new PoolConfigError(name, 'limits.redis.cluster.nodes', 'must list at least one startup node, e.g. [{ host: "10.0.0.1", port: 6379 }]');
  }
  if (r.url !== undefined) {
    let protocol = '';
    try {
      protocol = new URL(r.url).protocol;
    } catch {
      // reported below
    }
    if (protocol !== 'redis:' && protocol !== 'rediss:') {
      throw new PoolConfigError(name, 'limits.redis.url', `must be a redis:// or rediss:// URL, got ${JSON.stringify(r.url)}`);
    }
  }
  const ms = (field: keyof RedisLimitOptions, fallback: number, min = 1): number => {
    const v = r[field] ?? fallback;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min) {
      throw new PoolConfigError(name, `limits.redis.${field}`, `must be a finite number of ${min} or more, got ${String(v)}`);
    }
    return v;
  };
  const ttlMs = ms('leaseTtlMs', 5_000, 10);
  if (!Number.isInteger(ttlMs) || ttlMs > MAX_TTL_MS) {
    throw new PoolConfigError(name, 'limits.redis.leaseTtlMs', `must be a whole number of ms from 10 to ${MAX_TTL_MS} (a day), got ${ttlMs}`);
  }
  const heartbeatMs = ms('heartbeatMs', ttlMs / 3);
  if (heartbeatMs >= ttlMs) throw new PoolConfigError(name, 'limits.redis.heartbeatMs', `(${heartbeatMs}) must be below leaseTtlMs (${ttlMs})`);
  const fallback = r.fallback ?? 'local';
  if (fallback !== 'local' && fallback !== 'fail-closed') {
    throw new PoolConfigError(name, 'limits.redis.fallback', `must be 'local' or 'fail-closed', got ${String(fallback)}`);
  }
  const namespace = r.namespace ?? `nsp:${name.replace(/[{}]/g, '_')}`;
  if (typeof namespace !== 'string' || namespace.length === 0 || /[{}]/.test(namespace)) {
    throw new PoolConfigError(name, 'limits.redis.namespace', 'must be a non-empty string without { or }');
  }
  if (r.instances !== undefined && !(Number.isInteger(r.instances) && r.instances >= 1)) {
    throw new PoolConfigError(name, 'limits.redis.instances', `must be a whole number of 1 or more, got ${String(r.instances)}`);
  }
  return {
    namespace,
    ttlMs,
    heartbeatMs,
    commandTimeoutMs: ms('commandTimeoutMs', 1_000),
    protect: r.restartProtection ?? true,
    fallback,
    fallbackAfterMs: ms('fallbackAfterMs', 2_000, 0),
    instances: r.instances,
    pollMs: ms('pollMs', 100),
  };
}

function withTimeout<V>(promise: Promise<V>, ms: number, what: string): Promise<V> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** QUIT when connected (a clean close); otherwise stop reconnecting and drop the socket. */
async function hangUp(redis: Client): Promise<void> {
  if (redis.status === 'ready') {
    try {
      await redis.quit();
      return;
    } catch {
      // fall through
    }
  }
  redis.disconnect();
}

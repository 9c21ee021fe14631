// The Redis limiter's calls on the wire: admissions batched while one call is on its way,
// releases batched per tick (and sent before the next admission), timed-out admissions given
// back by id, heartbeats split into calls sent together, and the server's run_id.
import type { PoolLogger } from '../../core/index.js';
import type { ResolvedLimits } from '../local/index.js';
import { bounded, type Client } from './redis-client.js';
import { acquireScript, heartbeatScript, type RedisKeys } from './redis-scripts.js';
import { classArgs, demandFields, demandLapseMs } from './class-scripts.js';
import type { RedisSettings } from './redis-settings.js';

/** What one call to Redis carries: taken from the pending reports when the call is built. */
export interface LimitReport {
  /** Growth (or, from a latency window, shrink) of the estimate. */
  readonly delta: number;
  /** The highest fencing token among overloads; -1 for an overload of a lease admitted without Redis; 0 for none. */
  readonly cut: number;
  /** Ms of pause an upstream asked for (Retry-After); 0 for none; -1: a probe succeeded, the fleet's pause ends. */
  readonly pauseMs: number;
}

/** A call's part: the spec it sends, the report it carries, when it was sent (this instance's clock). */
export interface Taken {
  readonly spec: string;
  readonly report: LimitReport;
  readonly sentAt: number;
  /** Ms the call asks the fleet to pin the limit for, to probe its latency without a queue (0: none). */
  readonly probeMs: number;
  /** The latency without a queue a probe here measured, ms, that the call reports (0: none). */
  readonly floorMs: number;
}

/** An adaptive limit shared through Redis, as its calls see it (`SharedLimit` is the one). */
export interface LimitShare {
  /** The limit as this instance sees it; whether it still starts slowly (see LimitAlgorithm). */
  readonly limit: number;
  readonly starting: boolean;
  /** The part of the next call: the pending reports (a probe goes alone through a pause). */
  take(probe?: boolean): Taken;
  /**
   * Redis answered a call that carried `taken`: its estimate (x 1000), its clock, the ms left of a
   * probe the fleet runs, and the latency without a queue the fleet's last probe measured (0: none).
   */
  answered(taken: Taken, milli: number, serverNow: number, probingMs: number, floorMs: number): void;
  /** A call that carried `taken` failed: its reports are kept for the next one where they must be. */
  failed(taken: Taken): void;
}

/** A limit as the scripts take it: -1 for none. */
const limitArg = (limit: number): number => (limit === Infinity ? -1 : limit);

/** A lease this process holds. */
export interface Held {
  readonly id: string;
  readonly key: string | undefined;
  /** The limit of its key (Infinity without one). */
  readonly keyLimit: number;
  /** Its priority class (0 without classes), and the class's sorted set (undefined without). */
  readonly cls: number;
  readonly classSet: string | undefined;
  /** The key's sorted set, or the global set when there is no key. */
  readonly keySet: string;
  /** Its member in the sets: the id, then after a '|' its key set's name less the prefix (see redis-scripts). */
  readonly member: string;
  readonly pool: string;
  /** Admitted by Redis (false: admitted under the local fallback, to be registered when Redis is back). */
  viaRedis: boolean;
  /** The fencing token Redis gave it (undefined: admitted under the local fallback). */
  fence: number | undefined;
  readonly lost: AbortController;
  /** It reached its caller: counted as admitted, and as released at its release. */
  claimed: boolean;
  /**
   * On this instance's clock, the last moment Redis surely still has the lease: when the call that
   * last confirmed it was sent, plus the TTL, less a margin. Redis counts the TTL from when it ran
   * that call, which is later. `Infinity` for a lease Redis never had (admitted under the fallback).
   */
  expiresAt: number;
}

/**
 * What the admission call said of one admission (`status`: its fencing token when admitted, else
 * -1 global limit, -2 key limit, -3 quarantine), or that it failed (`sent`: it may still run in Redis).
 */
export type AcquireReply = { status: number; quietMs: number; pausedMs: number } | { error: unknown; sent: boolean };

/** What a heartbeat learned: leases in Redis, live instances, quarantine left, and the members Redis no longer had. */
export interface BeatReply {
  used: number;
  instances: number;
  quietMs: number;
  lost: string[];
}

/** What the calls tell the limiter. */
export interface CallsHost {
  readonly name: string;
  readonly logger: PoolLogger;
  /** This instance's part of every lease id. */
  readonly instance: string;
  /** The connection, once started. */
  redis(): Client | undefined;
  /** A call was answered. */
  up(): void;
  /** A call failed. */
  down(err: unknown): void;
  /**
   * Leases in Redis, as the last call saw them; `granted` of them were admitted by that call and
   * are not held yet.
   */
  used(n: number, granted?: number): void;
  /** Redis told of a quarantine of `ms` more. */
  quiet(ms: number): void;
  /** An adaptive limit shared through Redis: its reports go with the calls, its answers come back. */
  readonly shared: LimitShare | undefined;
  /** Redis told of a pause (an upstream's Retry-After) of `ms` more. */
  paused(ms: number): void;
  /** With priority classes, which have callers waiting here: '1' or '0' per class ('' without classes). */
  waitingMask(): string;
}

/** An admission waiting for its call. */
interface ToAdmit {
  readonly held: Held;
  readonly settle: (reply: AcquireReply) => void;
  /** A probe through an upstream's pause: sent in a call of its own (the call goes through the pause). */
  readonly probe: boolean;
}

/** Admissions per call at most: a call holds Redis a few µs per admission. */
const ADMIT_BATCH = 200;

/** Leases per release call at most. */
const RELEASE_BATCH = 500;

/** Leases per heartbeat call: a call holds Redis 3 to 6 µs per lease, so none blocks it for long. */
const HEARTBEAT_BATCH = 100;

export class RedisCalls {
  /** Admissions whose call timed out: Redis may still run them, so they are released by id once it answers. */
  readonly phantoms = new Map<string, Held>();
  /** Admissions asked for while an admission call is on its way; `#admitting` while one is. */
  readonly #toAdmit: ToAdmit[] = [];
  /** Releases of this tick, sent together. */
  readonly #toRelease: Held[] = [];
  readonly #releasing = new Set<Held>();
  #granted = 0;
  #admitting = false;
  /** The admission calls under way, until the last is answered. */
  #sending: Promise<void> | undefined;
  /**
   * The run_id of the server this connection talks to, learned once per connection (not by each
   * script: INFO is in @dangerous, and was most of the scripts' cost); '' when the user may not run INFO.
   */
  #runId: string | undefined;

  constructor(
    readonly host: CallsHost,
    readonly keys: RedisKeys,
    readonly settings: RedisSettings,
    readonly limits: ResolvedLimits,
  ) {}

  /** The connection changed (closed, or ready again, maybe to another server after a failover). */
  reconnected(): void {
    this.#runId = undefined;
  }

  /** Asks Redis to admit `held`, in the next admission call; a `probe` goes through an adaptive limit's pause, in a call of its own. */
  admit(held: Held, probe = false): Promise<AcquireReply> {
    return new Promise<AcquireReply>((settle) => {
      this.#toAdmit.push({ held, settle, probe });
      if (!this.#admitting) this.#sending = this.#sendAdmissions();
    });
  }

  /** Settles once no admission call is under way: those sent are answered (or timed out). */
  idle(): Promise<void> {
    return this.#sending ?? Promise.resolve();
  }

  /**
   * Releases queued or sent and not yet answered, of leases Redis counts: still in its count
   * until their call is answered. (A forgotten admission may or may not be counted: not here.)
   */
  get releasing(): number {
    return this.#releasing.size;
  }

  /** Leases granted by admission calls since the limiter started, counted as their answers come. */
  get granted(): number {
    return this.#granted;
  }

  /** Releases of one tick go in one call. */
  releaseSoon(held: Held): void {
    const redis = this.host.redis()!;
    if (held.viaRedis && !this.phantoms.has(held.id)) this.#releasing.add(held);
    this.#toRelease.push(held);
    if (this.#toRelease.length === 1) queueMicrotask(() => void this.release(redis, this.#toRelease.splice(0)));
  }

  /**
   * A timed-out admission: released by id now, with this tick's releases (queued behind it on the
   * same connection, so Redis runs it after the admission), and after each good heartbeat until
   * a release of it succeeds.
   */
  forget(held: Held): void {
    this.phantoms.set(held.id, held);
    this.releaseSoon(held);
  }

  /** Releases not sent yet, taken out (to give back at close). */
  takeQueued(): Held[] {
    const queued = this.#toRelease.splice(0);
    for (const h of queued) this.#releasing.delete(h);
    return queued;
  }

  /**
   * Gives `helds` back in calls of RELEASE_BATCH; on failure they expire by themselves within a
   * TTL. `leaving`: the limiter closes, its callers waiting by class are gone too.
   */
  async release(redis: Client, helds: readonly Held[], leaving = false): Promise<void> {
    try {
      for (let from = 0; from === 0 || from < helds.length; from += RELEASE_BATCH) {
        const batch = helds.slice(from, from + RELEASE_BATCH);
        const used = await this.#release(redis, batch, leaving && from === 0);
        for (const h of batch) this.#releasing.delete(h);
        this.host.used(used);
        if (this.phantoms.size > 0) for (const h of batch) this.phantoms.delete(h.id);
      }
    } catch (err) {
      // Redis counts them until their TTL; the count seen before the failure stands meanwhile.
      for (const h of helds) this.#releasing.delete(h);
      this.host.down(err);
    }
  }

  /**
   * Refreshes `helds` (registering those admitted without Redis) in calls of HEARTBEAT_BATCH sent
   * together: one round trip. The first call also registers `instance` and removes expired leases.
   */
  async heartbeat(redis: Client, instance: string, helds: readonly Held[]): Promise<BeatReply> {
    const run = this.#runId ?? (await this.#learnRun(redis));
    const { keys, settings } = this;
    const fixedKeys = [keys.global, keys.meta, keys.instances];
    const fixedArgs = [settings.ttlMs, settings.protect ? '1' : '0', instance, run];
    const calls: Promise<unknown>[] = [];
    const shared = this.host.shared?.take(); // with the first call only
    for (let from = 0; from === 0 || from < helds.length; from += HEARTBEAT_BATCH) {
      const batch = helds.slice(from, from + HEARTBEAT_BATCH);
      const modes = batch.map((h) => (h.viaRedis ? 'h' : 'r')).join('');
      const spec = from === 0 ? (shared?.spec ?? '') : '';
      const args = [
        ...fixedArgs,
        from === 0 ? '1' : '0',
        keys.keySetPrefix,
        modes,
        spec,
        ...classArgs(this.limits, this.keys, this.host.waitingMask(), demandLapseMs(settings.pollMs)),
        ...batch.map((h) => h.member),
      ];
      calls.push(this.#bounded(heartbeatScript.run(redis, fixedKeys, args)));
    }
    let replies: (number | string)[][];
    try {
      replies = (await Promise.all(calls)) as (number | string)[][];
    } catch (err) {
      if (shared !== undefined) this.host.shared!.failed(shared);
      throw err;
    }
    if (shared !== undefined) this.#adapted(shared, replies[0]!, 3);
    const [used, instances, quietMs] = replies.at(-1)!; // the last call saw every other's writes
    return {
      used: Number(used),
      instances: Number(instances),
      quietMs: Number(quietMs),
      lost: replies.flatMap((r) => r.slice(8).map(String)),
    };
  }

  /**
   * One admission call at a time: what is asked for meanwhile goes together in the next (up to
   * ADMIT_BATCH), in order. A lone admission is sent at once; under load a call serves many, and
   * Redis pays a script's fixed cost once for all of them.
   */
  async #sendAdmissions(): Promise<void> {
    const redis = this.host.redis()!;
    const { global, perKey } = this.limits;
    const byKey = Number.isNaN(perKey); // a limit for each key (a perKey function)
    this.#admitting = true;
    while (this.#toAdmit.length > 0) {
      const probe = this.#toAdmit[0]!.probe;
      let size = 1;
      while (!probe && size < Math.min(ADMIT_BATCH, this.#toAdmit.length) && !this.#toAdmit[size]!.probe) size++;
      const batch = this.#toAdmit.splice(0, size);
      // Releases of this tick go first, on the same connection: a slot given back just before is free for these.
      if (this.#toRelease.length > 0) void this.release(redis, this.#toRelease.splice(0));
      const shared = this.host.shared?.take(probe);
      try {
        const run = this.#runId ?? (await this.#learnRun(redis));
        const reply = (await this.#bounded(
          acquireScript.run(
            redis,
            [this.keys.global, this.keys.meta, ...batch.map((b) => b.held.keySet)],
            [
              this.settings.ttlMs,
              global === Infinity ? -1 : global,
              byKey ? 'each' : perKey === Infinity ? -1 : perKey,
              this.settings.protect ? '1' : '0',
              run,
              shared?.spec ?? '',
              ...classArgs(
                this.limits,
                this.keys,
                this.host.waitingMask(),
                demandLapseMs(this.settings.pollMs),
                this.host.instance,
              ),
              ...(byKey
                ? batch.flatMap((b) => [b.held.member, limitArg(b.held.keyLimit)])
                : batch.map((b) => b.held.member)),
            ],
          ),
        )) as number[];
        this.host.up();
        const [used, quietMs] = reply as [number, number];
        let granted = 0;
        for (let i = 0; i < batch.length; i++) if (reply[i + 2]! > 0) granted++;
        this.#granted += granted;
        this.host.used(used, granted);
        if (quietMs > 0) this.host.quiet(quietMs);
        const pausedMs = shared === undefined ? 0 : this.#adapted(shared, reply, batch.length + 2);
        batch.forEach((b, i) => b.settle({ status: reply[i + 2]!, quietMs, pausedMs }));
      } catch (err) {
        if (shared !== undefined) this.host.shared!.failed(shared);
        this.host.down(err);
        for (const b of batch) b.settle({ error: err, sent: true });
        // Those not sent yet would only wait for the same outage.
        for (const b of this.#toAdmit.splice(0)) b.settle({ error: err, sent: false });
      }
    }
    this.#admitting = false;
  }

  /**
   * Releases: the leases out of their sets and waiters everywhere told, in one transaction (no
   * script: a script call costs Redis several times the commands it runs). Resolves to the leases left.
   */
  async #release(redis: Client, helds: readonly Held[], leaving: boolean): Promise<number> {
    const g = this.keys.global;
    const tx = redis.multi();
    if (helds.length > 0) tx.zrem(g, ...helds.map((h) => h.member));
    if (leaving && this.limits.classes.names.length > 0)
      tx.zrem(this.keys.classDemand, ...demandFields(this.limits, this.host.instance));
    for (const h of helds) {
      if (h.keySet !== g) tx.zrem(h.keySet, h.member);
      if (h.classSet !== undefined) tx.zrem(h.classSet, h.member);
    }
    const replies = (await this.#bounded(tx.publish(this.keys.channel, '1').zcard(g).exec()))!; // null only under WATCH
    for (const [err] of replies) if (err) throw err;
    return Math.max(0, Number(replies.at(-1)![1]) - 1); // less the sentinel; expired leases count until a heartbeat removes them
  }

  /**
   * Redis answered a call that carried `taken`: from `reply[at]` on, as both scripts end it, the
   * shared limit's estimate (× 1000), the pause left, the server's time, the probe left and the
   * fleet's floor (× 1000). The pause left, ms.
   */
  #adapted(taken: Taken, reply: readonly (number | string)[], at: number): number {
    const n = (i: number) => Number(reply[at + i]);
    this.host.shared!.answered(taken, n(0), n(2), n(3), n(4) / 1000);
    const pausedMs = n(1);
    if (pausedMs > 0) this.host.paused(pausedMs);
    return pausedMs;
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
      this.host.logger.warn(
        `limiter "${this.host.name}": the Redis user may not run INFO; restarts and failovers are detected by the lease set's sentinel and by silences longer than a TTL`,
      );
    }
    return this.#runId;
  }

  /** A call bounded by commandTimeoutMs (see `bounded`). */
  #bounded<V>(call: Promise<V>): Promise<V> {
    return bounded(this.host.redis(), call, this.settings.commandTimeoutMs);
  }
}

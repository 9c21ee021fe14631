import type { Clock, TimerHandle } from '../../core/index.js';
import type { RedisAvailability } from './redis-availability.js';
import type { RedisCalls } from './redis-calls.js';
import type { Client } from './redis-client.js';
import type { RedisLeases } from './redis-leases.js';

/** The shared limit's reports go out at most this often (ms) when they should not wait for the next call. */
const REPORT_MS = 20;

/** What the heartbeat asks of its limiter. */
export interface HeartbeatHost {
  redis(): Client | undefined;
  closed(): boolean;
  /** A call succeeded: Redis is reachable. */
  up(): void;
  /** A call failed. */
  down(err: unknown): void;
  /** A heartbeat ended, well or not: the mode may have changed, waiters may be served. */
  beaten(): void;
}

/**
 * A Redis limiter's heartbeat: every `heartbeatMs`, one call refreshes every lease this instance
 * holds, registers those admitted while Redis was unreachable, and learns which were lost, how many
 * leases Redis counts and how many instances share them. One heartbeat at a time. A shared adaptive
 * limit's reports ride on it; `report()` sends them early when they should not wait.
 */
export class RedisHeartbeat {
  /** Leases in Redis at the last call. */
  used = 0;
  /** Of those, this instance's (those it held or registered): undefined until Redis first answers. */
  mine: number | undefined;
  /** Instances that heartbeated within a TTL, at least 1. */
  instances = 1;
  #timer: TimerHandle | undefined;
  #reportTimer: TimerHandle | undefined;
  #beat: Promise<void> | undefined;
  #sentAt = -Infinity;
  /** Whether the last heartbeat failed. */
  #failed = false;

  constructor(
    readonly host: HeartbeatHost,
    readonly clock: Clock,
    readonly heartbeatMs: number,
    readonly leases: RedisLeases,
    readonly calls: RedisCalls,
    readonly availability: RedisAvailability,
  ) {}

  /**
   * The next heartbeat in `heartbeatMs`, and each after it, until the limiter closes. After a
   * failed one, four times as often: held leases have two heartbeats of their TTL left, and Redis
   * back after a stall or a failover should confirm them before they lapse.
   */
  schedule(): void {
    if (this.host.closed()) return;
    const delay = this.#failed ? this.heartbeatMs / 4 : this.heartbeatMs;
    this.#timer = this.clock.setTimeout(() => {
      void this.beat().finally(() => this.schedule());
    }, delay);
  }

  /** A heartbeat now; a caller during one in flight waits for that one. */
  beat(): Promise<void> {
    this.#beat ??= this.#beatOnce().finally(() => (this.#beat = undefined));
    return this.#beat;
  }

  /** Sends the shared limit's reports soon (a cut should not wait for the next admission), at most every REPORT_MS. */
  report(): void {
    if (this.#reportTimer !== undefined || this.host.redis() === undefined || this.host.closed()) return;
    const delay = Math.max(0, this.#sentAt + REPORT_MS - this.clock.now());
    this.#reportTimer = this.clock.setTimeout(() => {
      this.#reportTimer = undefined;
      // After the heartbeat on its way, if one is: that one was built before the report.
      void (this.#beat ?? Promise.resolve()).then(() => this.beat());
    }, delay);
  }

  /**
   * Another call (an admission, a release) told how many leases Redis holds, `granted` of them
   * admitted by that call and not held yet. This instance's part of them is what it holds, those
   * granted, and those it gave back whose release Redis has not answered yet (replies come in the
   * order of the calls on the one connection, so this is its part when Redis counted `used`).
   */
  counted(used: number, granted = 0): void {
    this.used = used;
    this.mine = this.leases.held.size + this.leases.lapsed.size + this.calls.releasing + granted;
  }

  /** No heartbeat from now on. */
  stop(): void {
    for (const t of [this.#timer, this.#reportTimer]) if (t !== undefined) this.clock.clearTimeout(t);
  }

  async #beatOnce(): Promise<void> {
    const redis = this.host.redis();
    if (redis === undefined || this.host.closed()) return;
    this.leases.expireDue(); // none past its TTL is sent as held: Redis in a quarantine would keep it
    const held = [...this.leases.held.values(), ...this.leases.lapsed.values()];
    const grantedBefore = this.calls.granted;
    const sentAt = this.clock.now();
    this.#sentAt = sentAt;
    try {
      const { used, instances, quietMs, lost } = await this.calls.heartbeat(redis, this.leases.instance, held);
      this.#failed = false;
      this.host.up();
      this.used = used;
      // Those Redis kept or registered, and those granted by admission calls answered meanwhile:
      // answers come in the order Redis ran the calls, so Redis counted these before this heartbeat.
      this.mine = held.length - lost.length + this.calls.granted - grantedBefore;
      this.instances = Math.max(1, instances);
      this.availability.quietUntil = this.clock.now() + quietMs;
      for (const member of lost)
        this.leases.lose(
          member.split('|')[0]!,
          'Redis no longer had it: its TTL lapsed before a heartbeat refreshed it',
        );
      this.leases.confirmed(held, sentAt);
      if (this.calls.phantoms.size > 0) void this.calls.release(redis, [...this.calls.phantoms.values()]);
    } catch (err) {
      this.#failed = true;
      this.host.down(err);
    }
    this.host.beaten();
  }
}

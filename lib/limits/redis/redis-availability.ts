import { CapacityExceededError, type Clock, events } from '../../core/index.js';
import type { LimiterMode } from '../local/index.js';
import { describeRedisError } from './redis-client.js';
import type { RedisSettings } from './redis-settings.js';

/** A Redis limiter's modes: `local` is the in-process limiter's. */
export type RedisMode = Exclude<LimiterMode, 'local'>;

/**
 * Whether Redis answers, and so what admissions may do: `redis`; `quarantine` after a restart or
 * a stall (Redis tells how long); `unreachable` for `fallbackAfterMs` after Redis stopped
 * answering; then `fallback` (limits per instance) or `fail-closed`.
 */
export class RedisAvailability {
  /** When Redis became unreachable; undefined while it answers. */
  downSince: number | undefined;
  /** End of the quarantine Redis last told of. */
  quietUntil = 0;
  /** Why Redis is unreachable: the first specific error of the outage. */
  lastCause: unknown;
  /** Whether Redis ever answered: until then the number of instances sharing the limits is unknown. */
  #everReached = false;
  #modeSeen: RedisMode | undefined; // as last published (see noteMode)

  constructor(
    readonly settings: RedisSettings,
    readonly clock: Clock,
  ) {}

  get reachable(): boolean {
    return this.downSince === undefined;
  }

  mode(): RedisMode {
    const now = this.clock.now();
    if (this.downSince === undefined) return now < this.quietUntil ? 'quarantine' : 'redis';
    if (now - this.downSince < this.settings.fallbackAfterMs) return 'unreachable';
    return this.canShare() ? 'fallback' : 'fail-closed';
  }

  /**
   * The mode now, published on the limiter channel when it changed since last seen (a mode also
   * changes with time alone: a quarantine ends, an outage outlasts fallbackAfterMs), so the
   * limiter looks at it on every heartbeat, every change of reachability and every stats().
   */
  noteMode(limiter: string): RedisMode {
    const mode = this.mode();
    const from = this.#modeSeen;
    if (mode === from) return mode;
    this.#modeSeen = mode;
    if (from !== undefined && events.limiterMode.hasSubscribers)
      events.limiterMode.publish({ limiter, from, to: mode });
    return mode;
  }

  /** The refusal of an admission while Redis cannot admit and no fallback applies: when to retry, and why. */
  refusal(pool: string, global: number, retryAfterMs: number): CapacityExceededError {
    const left =
      this.mode() === 'unreachable' ? this.downSince! + this.settings.fallbackAfterMs - this.clock.now() : retryAfterMs;
    const last = this.lastCause;
    const cause = last === undefined ? undefined : new Error(describeRedisError(last), { cause: last });
    return new CapacityExceededError(pool, global, Math.max(1, left), 'unavailable', cause);
  }

  /**
   * Whether limits per instance may stand in for Redis. Never having reached Redis, a limiter
   * cannot know how many instances share the limits: a share computed as if it were alone would
   * let every instance take the whole limit.
   */
  canShare(): boolean {
    return this.settings.fallback === 'local' && (this.#everReached || this.settings.instances !== undefined);
  }

  /** A failed call (`closed`: the limiter closed, only the cause is kept). Returns the warning to log when Redis just became unreachable. */
  down(err: unknown, limiter: string, closed: boolean): string | undefined {
    // ioredis follows a specific failure (WRONGPASS, a TLS error) with generic ones: keep the first.
    const generic = /Stream isn't writeable|Connection is closed|enableOfflineQueue/.test(
      String((err as Error)?.message),
    );
    if (!(generic && this.downSince !== undefined && this.lastCause !== undefined)) this.lastCause = err;
    if (this.downSince !== undefined || closed) return undefined;
    this.downSince = this.clock.now();
    let then = 'and after that too (fail-closed)';
    if (this.canShare()) then = 'then limited per instance until Redis is back';
    else if (this.settings.fallback === 'local') {
      then =
        'and after that too: it has never reached Redis, so it cannot know how many instances share the limits (set redis.instances to fall back to a share)';
    }
    const why = describeRedisError(this.lastCause);
    return `limiter "${limiter}": Redis is unreachable (${why}); admissions are refused for ${this.settings.fallbackAfterMs} ms, ${then}`;
  }

  /** A call Redis answered. Returns true when Redis was unreachable until now. */
  up(): boolean {
    this.#everReached = true;
    if (this.downSince === undefined) return false;
    this.downSince = undefined;
    this.lastCause = undefined;
    return true;
  }
}

/**
 * An instance's share of a limit while Redis is unreachable: `floor(limit / instances)`, at least
 * 1. Of the global limit (`seen`), once Redis has answered, never more than the instance held then
 * (`mine` of `used`) and its part of the slots then free: instances that held more than their share
 * when Redis went away then cannot take the fleet past the limit with the others' shares.
 */
export function fallbackShare(
  limit: number,
  instances: number,
  seen?: { readonly used: number; readonly mine: number | undefined },
): number {
  if (limit === Infinity) return Infinity;
  const even = Math.max(1, Math.floor(limit / instances));
  if (seen?.mine === undefined) return even;
  return Math.min(even, seen.mine + Math.floor(Math.max(0, limit - seen.used) / instances));
}

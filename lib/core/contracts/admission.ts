import type { PoolHealth } from './health.js';

/** What a pool asks its limiter for before it checks a connection out. */
export interface AdmissionRequest {
  /** The asking pool, for errors. */
  pool: string;
  /**
   * The admission key (user, tenant). Absent: the limiter's `keyless` setting decides; `null`:
   * no key on purpose, the global limit only.
   */
  key?: string | null;
  /**
   * The priority class of the call, for a limiter with classes (`limits.classes`); absent: the
   * limiter's default class. A limiter without classes ignores it.
   */
  class?: string;
  /** How long the caller may wait for a slot, if the limiter waits at all. */
  timeoutMs: number;
  /** Aborts the wait. */
  signal?: AbortSignal;
}

/** How a call made under an admission ended: the value it returned, or what it threw. */
export type CallResult =
  { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown };

/** One admitted lease of a limiter. */
export interface Admission {
  /** The lease's id, fresh for every admission. */
  readonly id: string;
  /** Gives the slot back. Calling it again does nothing. */
  release(): void;
  /**
   * Aborted, with a reason, when the limiter lost this lease (say its TTL lapsed): stop the work.
   * A shared limiter checks the lease's age on its own clock each time this is read, so a read
   * first thing after the process was frozen tells the truth before any timer has run.
   */
  readonly signal: AbortSignal;
  /**
   * A fencing token, when the limiter gives them (the Redis limiter does): it grows with every
   * admission across every instance, so a store that remembers the highest token it has seen can
   * refuse a write from a holder whose lease lapsed and was given to someone else (a frozen
   * process waking up). Undefined for an in-process limiter and for a lease admitted while Redis
   * was unreachable.
   */
  readonly fence?: number;
  /**
   * Stop keeping the slot alive (its holder is stuck past the pool's `maxHoldMs`): a shared
   * limiter lets it lapse at its TTL, so other instances get it back even if the holder never
   * releases. The holder still calls `release()`. Optional: an in-process slot is held until then.
   */
  expire?(why: string): void;
  /**
   * The call made under this admission ended: `pool.use()` (and so `@UsePooled`) tells its result
   * just before the release. Optional: a limiter that learns from how calls end (the adaptive
   * one) reads it; a lease acquired by hand tells nothing.
   */
  ended?(result: CallResult): void;
}

/** One priority class of a limiter, as its stats show it. */
export interface ClassStats {
  name: string;
  /** The fraction of the global limit it is guaranteed under contention. */
  share: number;
  /** Leases it holds in this process. */
  used: number;
  /** Its callers waiting for a slot. */
  waiting: number;
  /** Its calls admitted, since the limiter started. */
  admitted: number;
  /** Its calls refused: at once (a limit, a standing queue, a backlog) or at their deadline while waiting. */
  refused: number;
}

/** Running totals of a limiter. */
export interface LimiterCounters {
  admitted: number;
  released: number;
  /** Refused by the global limit (or a quarantine, or fail-closed). */
  refusedGlobal: number;
  /** Refused by the per-key limit. */
  refusedKey: number;
  /** Held leases the limiter lost (TTL lapsed, Redis forgot them). */
  lost: number;
}

/** `local`; or for Redis: `redis`, `quarantine` (after a restart or a stall), `unreachable` (within `fallbackAfterMs`), `fallback`, `fail-closed`. */
export type LimiterMode = 'local' | 'redis' | 'quarantine' | 'unreachable' | 'fallback' | 'fail-closed';

/** A limiter's report, as `pool.stats().admission` shows it (and the health indicator reads). */
export interface AdmissionStats {
  mode: LimiterMode;
  /** Leases held against the global limit (across instances, when the limiter is shared). */
  used: number;
  /** The global limit; `Infinity` when there is none. */
  limit: number;
  /** The per-key limit; `Infinity` when there is none, `NaN` when each key has its own (a `perKey` function). */
  perKey: number;
  /** `used / limit`. */
  utilization: number;
  health: PoolHealth;
  /** Leases this process holds. */
  held: number;
  /** Callers waiting for a slot in this process. */
  waiting: number;
  counters: LimiterCounters;
  /** The keys holding the most leases in this process, most first (at most 5): who uses the per-key budget. */
  topKeys?: { key: string; leases: number; limit?: number }[];
  /** With priority classes (`limits.classes`): each class, highest first. */
  classes?: ClassStats[];
  /** Redis limiter: why Redis cannot be reached, with what to change (the first specific error of the outage). */
  lastError?: string;
  /** An adaptive limiter's limit and how it moved (see `AdaptiveLimiter`). */
  adaptive?: AdaptiveStats;
  /** With controlled waiting (`waiting: { mode: 'controlled' }`): whether its queue stands, the target, and what it shed. */
  standing?: StandingState;
}

/** One change of an adaptive limit, as `stats().adaptive.changes` lists them. */
export interface LimitChange {
  /** When, ms on the limiter's clock. */
  readonly at: number;
  readonly from: number;
  readonly to: number;
  readonly reason: 'overload' | 'success';
}

/** An adaptive limiter's state, in `stats().admission.adaptive`. */
export interface AdaptiveStats {
  /** `aimd`, `gradient` or `vegas`. */
  readonly algorithm: string;
  /** Whether one limit is shared by every instance through Redis (false: this process's own). */
  readonly shared: boolean;
  /** The limit now (also `limit` of the report). */
  readonly limit: number;
  readonly min: number;
  readonly max: number;
  /** Ms left of a pause the upstream asked for (Retry-After); 0 with none. */
  readonly pausedMs: number;
  /** Calls that ended in overload, and in success. */
  readonly overloads: number;
  readonly successes: number;
  /** Calls whose end said nothing about capacity, or whose classifier threw. */
  readonly ignored: number;
  /**
   * About one call in this many is timed: 1 unless calls in this process come more often than
   * one every 20 µs, when a random sample of them is (every call still counts as a success or
   * an overload). Always 1 for a limit shared through Redis.
   */
  readonly timedOneIn: number;
  /** The last changes of the limit, oldest first (at most 20). */
  readonly changes: readonly LimitChange[];
}

/**
 * Admits leases before a connection is checked out: a global and a per-key concurrency limit
 * (`LocalLimiter`, `RedisLimiter`). A pool with a limiter counts its utilization in its health.
 */
export interface AdmissionLimiter {
  /**
   * Takes a slot, or rejects with `CapacityExceededError` (global limit) or `KeyLimitError`
   * (per-key limit), at once or after waiting up to `timeoutMs`.
   */
  admit(request: AdmissionRequest): Promise<Admission>;
  /**
   * A slot now if one is free, without waiting and without side effects otherwise (`undefined`:
   * call `admit()`). Optional: a limiter that can answer synchronously (an in-process one) lets
   * the pool skip a round of the event loop and the deadline race that `admit()` gets.
   */
  tryAdmit?(request: AdmissionRequest): Admission | undefined;
  /**
   * Whether `admit()` settles by the request's deadline and its signal by itself, as an
   * in-process limiter's wait does: the pool then races nothing against it. Without it (a Redis
   * round trip hears no signal), the pool holds the deadline and the signal itself, and gives
   * back an admission that answers after either.
   */
  readonly settlesByDeadline?: boolean;
  stats(): AdmissionStats;
}

/** A queue's state as its stats show it. */
export interface StandingState {
  /** Whether the queue stands now: newcomers are refused unless it turns over within the target. */
  readonly standing: boolean;
  /** The target in force, ms (NaN: not known yet, nothing is shed). */
  readonly targetMs: number;
  /** Times the queue was found standing. */
  readonly stood: number;
  /** Newcomers refused at once because it stood. */
  readonly shed: number;
}

/** Why a newcomer may not wait in a standing queue: the figures its refusal says. */
export interface StandingFigures {
  /** Callers waiting already. */
  readonly waiting: number;
  /** How fast they are served. */
  readonly servedPerSec: number;
  /** The wait the queue is held to, ms. */
  readonly targetMs: number;
}

import {
  type AdmissionLimiter,
  type AdmissionStats,
  type Clock,
  is,
  keysOf,
  OptionReader,
  PoolConfigError,
  type PoolLogger,
  type ResolvedWaiting,
  resolveWaiting,
  type Rule,
  shown,
  violation,
  type WaitingOptions,
} from '../../core/index.js';
import { type PriorityClass, type ResolvedClasses, resolveClasses } from './priority-classes.js';

/** Limits every limiter takes. */
export interface LimitOptions {
  /** Most leases at once (across every instance, for a Redis limiter). Default: no limit. */
  global?: number;
  /**
   * Most leases at once per key (user, tenant): one number for every key, or a function that
   * gives each key its own (tiers: `(key) => (premium.has(key) ? 20 : 5)`). The function is
   * called on each admission with the call's key, so it must be cheap and synchronous; it
   * returns a whole number of 1 or more, or Infinity (no limit for that key). Default: no limit.
   */
  perKey?: number | ((key: string) => number);
  /**
   * With a per-key limit, what a call without a key does: `global` (default) counts it against
   * the global limit only; `refuse` fails it with a `PoolConfigError` (a missing key is a bug).
   */
  keyless?: 'global' | 'refuse';
  /**
   * Let a refused caller wait for a slot until its deadline instead of failing at once: `true`
   * whichever limit refused it; `'global'` only when the global limit did (a key over its own
   * limit is answered at once: 429). Default false: fail at once (the caller gets 429/503 and
   * retries); an `AdaptiveLimiter`'s default is `'global'`.
   */
  wait?: boolean | 'global';
  /**
   * How callers waiting for the global limit wait (with `wait`): `{ mode: 'controlled' }` sheds a
   * standing queue — while even the shortest wait has stayed above the target for an interval,
   * a newcomer the queue would not serve within the target is refused at once
   * (`CapacityExceededError`, reason `standing`) — so under sustained overload the callers served
   * wait about the target, not their whole deadline; a burst that drains within the interval is
   * absorbed. Default `{ mode: 'fifo' }` (wait to the deadline); an `AdaptiveLimiter`'s default is
   * `'controlled'`. See docs/limits.md, "Controlled waiting".
   */
  waiting?: WaitingOptions;
  /**
   * Priority classes, highest first, each with the share of the global limit it is guaranteed
   * under contention (a partitioned limit): `[{ name: 'live', share: 0.9 }, { name: 'batch',
   * share: 0.1 }]`. A call names its class (`{ class }` on `use()`/`acquire()`, `class` on
   * `@UsePooled`, the module's `requestClass`). When the global limit is reached, callers wait
   * (`wait` defaults to `'global'`) and each freed slot goes to a class under its share first,
   * then to the highest class, with aging (`agingMs`) so a lower class is never starved. A class
   * may use slots the others leave idle. See docs/limits.md, "Priority classes". In process
   * (`LocalLimiter`, `AdaptiveLimiter`).
   */
  classes?: PriorityClass[];
  /** The class of a call that names none. Default: the last (lowest) class. */
  defaultClass?: string;
  /**
   * Aging between classes: a waiter goes ahead of the waiters of a class r ranks above it that
   * joined more than r × `agingMs` after it. 0: arrival order across classes. Default 1 000.
   */
  agingMs?: number;
  /** `retryAfterMs` of the errors (the HTTP `Retry-After`). Default 1 000. */
  retryAfterMs?: number;
  /** Name in errors and logs. Default `'limits'`. */
  name?: string;
  clock?: Clock;
  logger?: PoolLogger;
}

/** Options after defaults. */
export interface ResolvedLimits {
  readonly name: string;
  readonly global: number;
  /** The per-key limit when it is one number for every key (Infinity: none); NaN when it depends on the key. */
  readonly perKey: number;
  /** A key's own limit, checked: throws a {@link PoolConfigError} when a `perKey` function fails or returns no limit. */
  readonly keyLimit: (key: string) => number;
  readonly keyless: 'global' | 'refuse';
  readonly wait: boolean | 'global';
  readonly classes: ResolvedClasses;
  readonly waiting: ResolvedWaiting;
  readonly retryAfterMs: number;
}

/** Whether a caller refused by `refusal` waits for a slot under `limits` (and has time to). */
export function waits(limits: ResolvedLimits, refusal: 'global' | 'key', timeoutMs: number): boolean {
  return (limits.wait === true || (limits.wait === 'global' && refusal === 'global')) && timeoutMs > 0;
}

/** A per-key limit, as a number. */
const PER_KEY_RULE: Rule = {
  says: 'a whole number of 1 or more, or a function (key) => limit',
  ok: (v) => is.whole(1).ok(v),
};

/** A key's limit, as a `perKey` function must give it. */
const KEY_LIMIT_RULE: Rule = {
  says: 'a whole number of 1 or more, or Infinity',
  ok: (v) => v === Infinity || is.whole(1).ok(v),
};

/** `limitOf`, its answers checked: a function that throws or answers no limit is a configuration error. */
function checkedKeyLimit(limitOf: (key: string) => number, name: string): (key: string) => number {
  const fail = (key: string, problem: string, cause?: unknown) =>
    new PoolConfigError(name, 'limits.perKey', `${problem} for the key ${shown(key)}`, 'limiter', { cause });
  return (key) => {
    let limit: unknown;
    try {
      limit = limitOf(key);
    } catch (err) {
      throw fail(key, `threw (${err instanceof Error ? err.message : shown(err)})`, err);
    }
    if (KEY_LIMIT_RULE.ok(limit)) return limit as number;
    throw fail(key, `must return ${KEY_LIMIT_RULE.says}, but returned ${shown(limit)}`);
  };
}

/** `wait`'s values. */
export const WAIT_RULE: Rule = {
  says: "true, false or 'global'",
  ok: (v) => typeof v === 'boolean' || v === 'global',
};

/** Applies defaults and checks the limits; throws {@link PoolConfigError} naming the field. */
const LIMIT_KEYS = keysOf<LimitOptions>({
  global: true,
  perKey: true,
  keyless: true,
  wait: true,
  waiting: true,
  classes: true,
  defaultClass: true,
  agingMs: true,
  retryAfterMs: true,
  name: true,
  clock: true,
  logger: true,
});

/**
 * `also`: keys a limiter takes besides {@link LimitOptions} (the Redis limiter's `redis`);
 * `waitingMode`: `waiting.mode` when not given.
 */
export function resolveLimits(
  options: LimitOptions,
  also: readonly string[] = [],
  waitingMode: ResolvedWaiting['mode'] = 'fifo',
): ResolvedLimits {
  if (typeof options !== 'object' || options === null) {
    throw new PoolConfigError('limits', 'limits', `must be an object, got ${shown(options)}`, 'limiter');
  }
  const name = options.name ?? 'limits';
  const badName = violation({ subject: 'limiter', name: String(name), path: 'limits.' }, 'name', name, is.text);
  if (badName !== undefined) throw badName;
  const read = new OptionReader({ subject: 'limiter', name, path: 'limits.' }, options).only(
    [...LIMIT_KEYS, ...also],
    "a limiter's options",
  );
  const global = read.get('global', is.whole(1), Infinity);
  const keyLimit = typeof options.perKey === 'function' ? checkedKeyLimit(options.perKey, name) : undefined;
  const perKey = keyLimit === undefined ? read.get('perKey', PER_KEY_RULE, Infinity) : NaN;
  if (perKey !== Infinity && perKey > global) {
    read.fail(
      'perKey',
      `(${perKey}) must not exceed limits.global (${global}): no key could ever use more than the global limit`,
    );
  }
  const classes = resolveClasses(read);
  if (classes.names.length > 0 && global === Infinity)
    read.fail('classes', 'partition limits.global: give a global limit (or adaptive: true), or leave classes out');
  const wait = read.get('wait', WAIT_RULE, classes.names.length > 0 ? 'global' : false);
  if (classes.names.length > 0 && wait === false)
    read.fail('wait', "must be true or 'global' with classes: a class is served first only from a queue");
  return {
    name,
    global,
    perKey,
    keyLimit: keyLimit ?? (() => perKey),
    keyless: read.get('keyless', is.oneOf('global', 'refuse'), 'global'),
    wait,
    classes,
    waiting: resolveWaiting(read, waitingMode),
    retryAfterMs: read.get('retryAfterMs', is.finiteAbove(0), 1_000),
  };
}

export type { LimiterCounters, LimiterMode } from '../../core/index.js';

/** A limiter's report: `pool.stats().admission` and the health indicator show it. */
export type LimiterStats = AdmissionStats;

/**
 * Admission limits shared by one or more pools: a global limit on concurrent leases and a
 * fairness limit per key. `LocalLimiter` counts in process; `RedisLimiter` across instances.
 */
export interface ConcurrencyLimiter extends AdmissionLimiter {
  stats(): LimiterStats;
  /** Connects (Redis) and starts background work. Resolves even when Redis is down (see fallback). */
  start(): Promise<void>;
  /** Stops background work and gives back what it holds. */
  close(): Promise<void>;
}

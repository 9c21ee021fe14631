/**
 * The chaos harness: one seed makes one random schedule of a faulty connector (create throws,
 * hangs, arrives late or after close, resolves nothing or a connection twice; ready false /
 * throws / hangs; close throws / hangs; validate false / throws / slow / hangs; reset on return
 * at once, late, false / throws / rejects / hangs; retire and setClientLimit at any time) and adversarial callers (random holds, timeouts, aborts, fails,
 * double releases, nested uses, tasks that outlive their scope, refresh, warmup, close part-way),
 * runs it against a pool, and checks invariants at every handout and every quiet point.
 *
 * Deterministic per seed on the virtual clock; `real: true` runs the same kind of schedule on
 * real timers (shorter, with slack on deadlines).
 */
import {
  CapacityExceededError,
  ConnectionFailedError,
  ConnectionPool,
  ConnectionsExhaustedError,
  KeyLimitError,
  PoolClosedError,
  PoolContextError,
  QueueFullError,
  SelfDeadlockError,
  systemClock,
  type AcquireOptions,
  type Clock,
  type Connector,
  type CreateContext,
  type Lease,
  type PoolOptions,
  type TimerHandle,
  type UseOptions,
} from '../../lib/core/index.js';
import { AdaptiveLimiter } from '../../lib/limits/adaptive/adaptive-limiter.js';
import { LocalLimiter } from '../../lib/limits/local/local-limiter.js';
import { flush, VirtualClock } from '../support/virtual-clock.js';

/** mulberry32: small, fast, and the same sequence for the same seed everywhere. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A connection of the chaos connector, with what the harness knows of it. */
export class ChaosConn {
  closeCalls = 0;
  validating = false;
  /** The limit the pool must respect (the pool caps what the connector asks for). */
  limit: number;
  /** Limit at the start of the current step: a lowering and a handout in the same step may race. */
  limitAtStep: number;
  holders = 0;
  /** When validate() last began, and whether it ended well with no caller since. */
  validateStart = -1;
  validatedOkAt = -Infinity;
  servedSinceValidated = true;
  /** A caller left state on it that only a reset clears (with a resetting connector). */
  dirty = false;
  /** Its reset() began and has not settled (a hung one never does): nobody may get it meanwhile. */
  resetPending = false;
  /** Step at which the harness saw it retired (ctx.retire, lease.fail, refresh, a failed validation). */
  retiredAt = Infinity;
  constructor(
    readonly id: number,
    readonly ctx: CreateContext,
    clientLimit: number,
  ) {
    this.limit = this.limitAtStep = clientLimit;
  }
}

class ChaosError extends Error {
  constructor(readonly fatal: boolean) {
    super(fatal ? 'connection broke (chaos)' : 'query failed (chaos)');
  }
}

/** The outcome of one seed. */
export interface ChaosResult {
  seed: number;
  violations: string[];
  operations: number;
  connections: number;
}

export interface ChaosOptions {
  /** Real timers instead of the virtual clock. */
  real?: boolean;
  /** Virtual (or real) milliseconds of scheduled activity. */
  durationMs?: number;
  /** Scheduled caller and fault events. */
  events?: number;
  /** A pool option to force (e.g. to study one setting). */
  pool?: Partial<PoolOptions>;
}

/** `CHAOS_DEBUG=1 npm run chaos -- --seed N` traces one seed: the pool's debug lines and the harness's own. */
const TRACING = process.env.CHAOS_DEBUG !== undefined;

/** Counts the pool's own timers and keep-alive holds, whatever clock is underneath. */
class TrackedClock implements Clock {
  readonly live = new Set<TimerHandle>();
  /** When tracing, where each live timer was set. */
  readonly origins = new Map<TimerHandle, string>();
  holds = 0;
  doubleLetGo = false;
  constructor(readonly base: Clock) {}
  now(): number {
    return this.base.now();
  }
  setTimeout(fn: () => void, ms: number): TimerHandle {
    const box: { handle?: TimerHandle } = {};
    box.handle = this.base.setTimeout(() => {
      this.live.delete(box.handle);
      fn();
    }, ms);
    this.live.add(box.handle);
    if (TRACING) this.origins.set(box.handle, `${ms} ms ${new Error().stack!.split('\n').slice(2, 6).join(' <')}`);
    return box.handle;
  }
  clearTimeout(handle: TimerHandle): void {
    this.live.delete(handle);
    this.base.clearTimeout(handle);
  }
  keepAlive(): () => void {
    this.holds++;
    let done = false;
    return () => {
      if (done) this.doubleLetGo = true;
      done = true;
      this.holds--;
    };
  }
}

const pickOf = <V>(rnd: () => number, values: readonly V[]): V => values[Math.floor(rnd() * values.length)]!;

/** Runs one seed; never throws for a violation, returns them. */
export async function runChaos(seed: number, options: ChaosOptions = {}): Promise<ChaosResult> {
  const rnd = random(seed);
  const chance = (p: number) => rnd() < p;
  const between = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
  const real = options.real === true;
  const scale = real ? 0.2 : 1; // real runs are shorter
  const virtual = real ? undefined : new VirtualClock();
  const base: Clock = virtual ?? systemClock;
  const clock = new TrackedClock(base);
  const slack = real ? 150 : 1;
  const violations: string[] = [];
  const trace = (what: string) => {
    if (TRACING) console.log(`t=${Math.round(base.now())} ${what}`);
  };
  const violate = (what: string) => {
    if (violations.length < 10) violations.push(`t=${Math.round(base.now())}: ${what}`);
  };
  /** Harness timers (events, connector delays): on the base clock, never counted as the pool's. */
  const later = (ms: number, fn: () => void) => base.setTimeout(fn, Math.max(0, ms));
  const sleep = (ms: number) => new Promise<void>((resolve) => later(ms, resolve));
  const advance = async (ms: number) => {
    if (virtual) await virtual.advance(ms);
    else {
      await new Promise((resolve) => setTimeout(resolve, ms));
      await flush();
    }
  };

  // ---- the pool's settings: calm seeds and stormy ones ----------------------------------------
  const maxSize = between(1, 6);
  const clientLimit = pickOf(rnd, [1, 1, 2, 3, 8]);
  const storm = rnd(); // how faulty the connector is
  const settings: PoolOptions = {
    name: `chaos-${seed}`,
    clock,
    logger: { warn: trace, error: trace, debug: trace },
    maxSize,
    clientLimit,
    minSize: between(0, Math.min(2, maxSize)),
    maxWaiting: chance(0.7) ? Infinity : between(0, 4),
    strategy: chance(0.5) ? 'spread' : 'pack',
    maxConcurrentCreates: between(1, maxSize),
    growAt: pickOf(rnd, [0.5, 0.8, 1]),
    createTimeoutMs: between(30, 300) * scale,
    acquireTimeoutMs: between(50, 1_500) * scale,
    validateAfterIdleMs: pickOf(rnd, [0, 20, 200, Infinity]),
    validateTimeoutMs: between(20, 120) * scale,
    resetTimeoutMs: between(20, 120) * scale,
    closeTimeoutMs: between(10, 100) * scale,
    maxIdleMs: between(100, 2_000) * scale,
    maxLifetimeMs: chance(0.5) ? Infinity : between(200, 2_000) * scale,
    lifetimeJitter: pickOf(rnd, [0, 0.05]),
    reapIntervalMs: between(20, 200) * scale,
    createBackoffMs: between(5, 50) * scale,
    maxCreateBackoffMs: between(50, 400) * scale,
    blockingPeriod: chance(0.5),
    breakerFailures: between(1, 6),
    breakerAfterMs: pickOf(rnd, [0, 0, between(10, 500) * scale]),
    ...options.pool,
  };
  if (settings.maxCreateBackoffMs! < settings.createBackoffMs!) settings.maxCreateBackoffMs = settings.createBackoffMs;
  const limited = chance(0.3);
  const global = between(1, 8);
  const perKey = limited && chance(0.5) ? Math.min(global, between(1, 3)) : Infinity;
  // A third of the limited pools have an adaptive limit (at most `global`) that learns from how
  // their use() calls end; on the virtual clock many calls come at one instant, so it times a sample.
  const keyed = perKey === Infinity ? {} : { perKey };
  const limiter: LocalLimiter | AdaptiveLimiter | undefined = !limited
    ? undefined
    : chance(1 / 3)
      ? new AdaptiveLimiter({
          adaptive: { algorithm: pickOf(rnd, ['aimd', 'gradient', 'vegas'] as const), max: global, initial: global },
          ...keyed,
          clock: base,
        })
      : new LocalLimiter({ global, ...keyed, wait: chance(0.5), clock: base });
  if (limiter && chance(0.5)) {
    // A limiter deaf to the caller's signal for a while, as a Redis round trip is: its answer may land after close().
    settings.limiter = {
      admit: (request) => {
        const deaf = { ...request, signal: undefined };
        return sleep(between(0, 30) * scale).then(() => limiter.admit(deaf));
      },
      stats: () => limiter.stats(),
    };
  } else if (limiter) settings.limiter = limiter;

  // ---- the faulty connector --------------------------------------------------------------------
  const made: ChaosConn[] = [];

  let creates = 0;
  let validateCalls = 0;
  /** Each validate() call: when it began, and when and how it settled (never: it hangs). */
  const validations: { start: number; settledAfter: number; dead: boolean }[] = [];
  /** reset() calls, and those that answered with a promise. */
  let resetCalls = 0;
  let resetPromises = 0;
  let closeStartedAt = Infinity;
  /** Connector close() calls not settled: each may keep a closeTimeoutMs timer of the pool's. */
  let closesInFlight = 0;
  let lastCreateAt = 0;
  let failuresSeen = 0;
  let lastFailureSeenAt = 0;
  let poolClosed = false;
  const closedWaiters: (() => void)[] = [];
  const maxDelay = 400 * scale;
  const delay = () => between(0, maxDelay);
  const connector: Connector<ChaosConn> = {
    create: (ctx) => {
      creates++;
      lastCreateAt = base.now();
      const make = () => {
        const conn = new ChaosConn(made.length + 1, ctx, clientLimit);
        made.push(conn);
        return conn;
      };
      const r = rnd();
      const p = storm * 0.5; // share of faulty outcomes
      if (r < p * 0.2) return Promise.reject(new Error('connect ECONNREFUSED (chaos)'));
      if (r < p * 0.3) return new Promise(() => {}); // hangs forever, ignores its abort
      if (r < p * 0.45) {
        // ignores the abort: arrives a while after it
        return new Promise((resolve) =>
          ctx.signal.addEventListener('abort', () => later(delay(), () => resolve(make())), { once: true }),
        );
      }
      if (r < p * 0.55)
        return new Promise((resolve) => closedWaiters.push(() => later(delay(), () => resolve(make())))); // after close
      if (r < p * 0.6) return Promise.resolve(undefined as unknown as ChaosConn);
      if (r < p * 0.7) {
        const live = made.filter((c) => c.closeCalls === 0);
        if (live.length > 0) return Promise.resolve(pickOf(rnd, live)); // the same object twice
      }
      if (r < p)
        return new Promise((resolve) =>
          later(between(settings.createTimeoutMs!, 2 * settings.createTimeoutMs!), () => resolve(make())),
        ); // late
      if (chance(0.5)) return Promise.resolve(make());
      return new Promise((resolve) => later(delay() / 4, () => resolve(make())));
    },
    ready: (conn) => {
      if (poolClosed) violate(`ready() called on connection ${conn.id} after close()`);
      const r = rnd();
      const p = storm * 0.3;
      if (r < p * 0.3) return Promise.resolve(false);
      if (r < p * 0.6) return Promise.reject(new Error('handshake failed (chaos)'));
      if (r < p * 0.8) return new Promise(() => {});
      if (chance(0.2)) conn.ctx.setClientLimit(between(0, clientLimit + 1)); // the peer's settings arrive
      return chance(0.5) ? Promise.resolve(true) : sleep(delay() / 8).then(() => true);
    },
    close: (conn) => {
      conn.closeCalls++;
      trace(`close of ${conn.id} (#${conn.closeCalls})`);
      if (conn.closeCalls > 1) violate(`connection ${conn.id} closed ${conn.closeCalls} times`);
      if (conn.holders > 0 && !poolClosed) violate(`connection ${conn.id} closed under ${conn.holders} holders`);
      const r = rnd();
      const p = storm * 0.3;
      if (r < p * 0.3) throw new Error('close failed (chaos)');
      closesInFlight++;
      if (r < p * 0.5) return new Promise<void>(() => {});
      if (r < p) return sleep(delay() / 4).then(() => void closesInFlight--);
      closesInFlight--;
      return undefined;
    },
    validate: (conn) => {
      validateCalls++;
      const now = base.now();
      if (conn.validating) violate(`connection ${conn.id} validated twice at once`);
      if (
        !conn.servedSinceValidated &&
        now - conn.validatedOkAt <
          Math.max(settings.validateAfterIdleMs!, settings.validateAfterIdleMs === 0 ? Infinity : 0)
      ) {
        violate(
          `connection ${conn.id} validated again ${now - conn.validatedOkAt} ms after a good validation, with no caller in between`,
        );
      }
      conn.validating = true;
      conn.validateStart = now;
      if (chance(0.15)) {
        // The peer's settings arrive during the check.
        const asked = between(0, clientLimit + 2);
        conn.limit = Math.max(1, Math.min(clientLimit, asked));
        conn.ctx.setClientLimit(asked);
      }
      const settle = (ok: boolean) => {
        conn.validating = false;
        if (ok) {
          conn.validatedOkAt = base.now();
          conn.servedSinceValidated = false;
        }
        if (!ok) conn.retiredAt = Math.min(conn.retiredAt, step);
        trace(`validate of ${conn.id}: ${ok}`);
        return ok;
      };
      const record = (settledAfter: number, dead: boolean) => validations.push({ start: now, settledAfter, dead });
      const r = rnd();
      const p = storm * 0.4;
      if (r < p * 0.3) return (record(0, true), settle(false));
      if (r < p * 0.5) {
        record(0, true);
        settle(true);
        throw new Error('validate threw (chaos)');
      }
      if (r < p * 0.65) return (record(Infinity, false), new Promise<boolean>(() => {})); // hangs: the pool's validateTimeoutMs must end it
      if (r < p) {
        const after = between(0, 2 * settings.validateTimeoutMs!);
        const ok = chance(0.7);
        record(after, !ok);
        return sleep(after).then(() => settle(ok));
      }
      if (chance(0.5)) return (record(0, false), settle(true));
      record(2, false);
      return sleep(2).then(() => settle(true));
    },
    isFatal: (err) => err instanceof ChaosError && err.fatal,
  };
  // An exclusive pool's connector may clean connections on return; a shared pool's may not.
  const resets = settings.clientLimit === 1 && chance(0.7);
  if (resets) {
    connector.reset = (conn) => {
      resetCalls++;
      if (poolClosed) violate(`reset() called on connection ${conn.id} after close()`);
      if (conn.holders > 0) violate(`reset() called on connection ${conn.id} while ${conn.holders} caller(s) hold it`);
      if (conn.resetPending) violate(`connection ${conn.id} reset twice at once`);
      const unclean = () => void (conn.retiredAt = Math.min(conn.retiredAt, step));
      const clean = () => void (conn.dirty = false);
      const r = rnd();
      const p = storm * 0.3;
      trace(`reset of ${conn.id}`);
      if (r < p * 0.2) return (unclean(), false);
      if (r < p * 0.4) {
        unclean();
        throw new Error('ROLLBACK failed (chaos)');
      }
      if (r >= p && chance(0.7)) return (clean(), chance(0.5) ? true : undefined); // clean, known at once
      resetPromises++;
      conn.resetPending = true;
      if (r < p * 0.6) return new Promise<boolean>(() => {}); // hangs: resetTimeoutMs must end it
      // In time or late, never on the boundary, where which comes first is the clock's choice.
      const timeoutMs = settings.resetTimeoutMs!;
      const late = chance(0.3);
      const after = late
        ? between(timeoutMs + slack, 2 * timeoutMs + slack)
        : between(0, Math.max(0, timeoutMs - slack));
      const fails = r < p;
      return sleep(after).then(() => {
        conn.resetPending = false;
        // Past resetTimeoutMs the pool has retired it already, whatever the answer.
        if (fails || late) unclean();
        else clean();
        if (fails && chance(0.5)) throw new Error('ROLLBACK failed late (chaos)');
        return !fails;
      });
    };
  }

  let pool: ConnectionPool<ChaosConn>;
  try {
    pool = new ConnectionPool(connector, settings);
  } catch (err) {
    return {
      seed,
      violations: [`the pool refused the harness's settings: ${(err as Error).message}`],
      operations: 0,
      connections: 0,
    };
  }

  // ---- what the harness counts, to compare with stats() ------------------------------------
  const counts = { acquired: 0, released: 0, timeouts: 0, aborted: 0, failedFast: 0 };
  interface Pending {
    start: number;
    timeoutMs: number;
  }
  const pending = new Set<Pending>();
  let step = 0;
  let warmups = 0;
  /** use() calls with retries still running: between tries the pool rightly keeps the process alive. */
  let retrying = 0;
  let closing: Promise<void> | undefined;
  let closeSettled = false;
  let closeChecked = false;
  let operations = 0;

  const handout = (conn: ChaosConn, how: string) => {
    if (!(conn instanceof ChaosConn)) return violate(`${how} handed out ${String(conn)}`);
    if (conn.closeCalls > 0) violate(`${how} got connection ${conn.id} after it was closed`);
    if (conn.validating) violate(`${how} got connection ${conn.id} while it was being validated`);
    if (conn.resetPending) violate(`${how} got connection ${conn.id} while its reset ran`);
    if (conn.dirty) violate(`${how} got connection ${conn.id} with its last caller's state on it`);
    if (resets) conn.dirty = true;
    if (conn.retiredAt < step)
      violate(`${how} got connection ${conn.id}, retired at step ${conn.retiredAt} (now ${step})`);
    trace(`${how} got connection ${conn.id}`);
    conn.holders++;
    conn.servedSinceValidated = true;
    const allowed = Math.max(conn.limit, conn.limitAtStep);
    if (conn.holders > allowed) violate(`${how}: connection ${conn.id} has ${conn.holders} callers, limit ${allowed}`);
  };

  /** Classifies the rejection of an acquire (or of use() before its callback ran). */
  const refused = (err: unknown, rec: Pending, reason: unknown, how: string) => {
    const now = base.now();
    if (reason !== undefined && err === reason) counts.aborted++;
    else if (err instanceof ConnectionsExhaustedError) {
      counts.timeouts++;
      if (now < rec.start + rec.timeoutMs - slack)
        violate(`${how} timed out early: after ${now - rec.start} of ${rec.timeoutMs} ms`);
    } else if (err instanceof ConnectionFailedError) counts.failedFast++;
    else if (!(
      err instanceof PoolClosedError ||
      err instanceof QueueFullError ||
      err instanceof SelfDeadlockError ||
      err instanceof CapacityExceededError ||
      err instanceof KeyLimitError
    )) {
      violate(`${how} rejected with an unexpected ${String((err as Error)?.stack ?? err)}`);
    }
  };

  const callOptions = (): { options: AcquireOptions; reason: unknown; rec: Pending } => {
    const timeoutMs = chance(0.1) ? Infinity : pickOf(rnd, [5, 50, 200, 1_000, 3_000]) * scale;
    const options: AcquireOptions = chance(0.3) ? { timeoutMs } : {};
    const effective = options.timeoutMs ?? settings.acquireTimeoutMs!;
    if (perKey !== Infinity) options.key = `k${between(1, 3)}`;
    let reason: unknown;
    const a = rnd();
    if (a < 0.05) {
      reason = new Error('aborted before the call');
      options.signal = AbortSignal.abort(reason);
    } else if (a < 0.15) {
      const controller = new AbortController();
      reason = new Error('aborted while waiting');
      later(between(0, 300) * scale, () => controller.abort(reason));
      options.signal = controller.signal;
    }
    return { options, reason, rec: { start: base.now(), timeoutMs: effective } };
  };

  const hold = () => (chance(0.1) ? between(200, 800) : between(0, 100)) * scale;

  function acquireOp(): void {
    const { options, reason, rec } = callOptions();
    pending.add(rec);
    // No options at all half the time they would be empty: the pool's one-step paths take only those.
    const plain = Object.keys(options).length === 0 && chance(0.5);
    pool.acquire(plain ? undefined : options).then(
      (lease: Lease<ChaosConn>) => {
        pending.delete(rec);
        counts.acquired++;
        const conn = lease.connection;
        handout(conn, `acquire`);
        later(hold(), () => {
          conn.holders--;
          counts.released++;
          if (chance(0.1)) {
            conn.retiredAt = Math.min(conn.retiredAt, step);
            trace(`lease.fail on ${conn.id} (pool id ${lease.connectionId})`);
            lease.fail(new Error('failed by the caller (chaos)'));
          } else lease.release();
          if (chance(0.1)) lease.release(); // a double release changes nothing
        });
      },
      (err: unknown) => {
        pending.delete(rec);
        refused(err, rec, reason, 'acquire');
      },
    );
  }

  /** A use() that took its own lease: live until its callback ends (the lease goes back right after). */
  interface Scope {
    live: boolean;
  }

  /** `enclosing`: the own-lease scopes around the call, innermost last. */
  function useOp(depth = 0, propagation: UseOptions['propagation'] = 'new', enclosing: Scope[] = []): Promise<void> {
    const inScope = enclosing.some((scope) => scope.live);
    const { options, reason, rec } = callOptions();
    const attempts = chance(0.2) ? between(2, 3) : 1;
    const use: UseOptions = { ...options, propagation };
    if (attempts > 1)
      use.retry = { attempts, baseDelayMs: 5 * scale, retryOn: chance(0.3) ? () => chance(0.5) : undefined };
    const reused = inScope && propagation === 'reuse';
    let ran = false;
    if (!reused) pending.add(rec);
    const fn = async (conn: ChaosConn) => {
      if (!ran) pending.delete(rec);
      ran = true;
      const scope: Scope = { live: true };
      const scopes = reused ? enclosing : [...enclosing, scope];
      if (!reused) {
        counts.acquired++;
        handout(conn, depth > 0 ? 'nested use' : 'use');
      }
      try {
        await sleep(hold());
        const r = rnd();
        if (depth < 2 && r < 0.15) await useOp(depth + 1, chance(0.5) ? 'reuse' : 'new', scopes);
        else if (r < 0.25) {
          // A task that outlives this scope: unless an enclosing scope still runs, it has no
          // connection and takes its own lease.
          void sleep(hold() + 1).then(() => {
            const outerLive = scopes.some((s) => s.live);
            try {
              void pool.current;
              if (!outerLive) violate('a task that outlived its use() still reads pool.current');
            } catch (err) {
              if (!(err instanceof PoolContextError)) violate(`pool.current threw ${String(err)}`);
              else if (outerLive && !poolClosed) violate('pool.current threw inside a live enclosing scope');
            }
            return useOp(depth + 1, 'reuse', scopes);
          });
        }
        if (chance(0.1)) throw new ChaosError(chance(0.5));
      } finally {
        scope.live = false;
        if (!reused) {
          conn.holders--;
          counts.released++;
        }
      }
    };
    if (attempts > 1) retrying++;
    return pool.use(fn, use).then(
      () => {
        if (attempts > 1) retrying--;
      },
      (err: unknown) => {
        if (attempts > 1) retrying--;
        if (err instanceof ChaosError) return;
        if (!ran) pending.delete(rec);
        // With retries, a later attempt's acquire may fail: its deadline started later.
        refused(err, attempts > 1 ? { start: -Infinity, timeoutMs: 0 } : rec, reason, 'use');
      },
    );
  }

  const live = () => made.filter((c) => c.closeCalls === 0);
  const events: [number, () => void][] = [
    [30, acquireOp],
    [30, () => void useOp()],
    [
      6,
      () => {
        const c = live();
        if (c.length === 0) return;
        const conn = pickOf(rnd, c);
        conn.retiredAt = Math.min(conn.retiredAt, step);
        trace(`harness retires ${conn.id}`);
        conn.ctx.retire(new Error('retired by the connector (chaos)'));
      },
    ],
    [
      6,
      () => {
        const c = live();
        if (c.length === 0) return;
        const conn = pickOf(rnd, c);
        const asked = between(0, clientLimit + 2);
        conn.limit = Math.max(1, Math.min(clientLimit, asked));
        conn.ctx.setClientLimit(asked);
      },
    ],
    [
      2,
      () => {
        for (const conn of made) conn.retiredAt = Math.min(conn.retiredAt, step);
        pool.refresh();
      },
    ],
    [
      2,
      () => {
        warmups++;
        pool.warmup().then(
          () => warmups--,
          (err: unknown) => {
            warmups--;
            if (!(err instanceof ConnectionFailedError || err instanceof PoolClosedError))
              violate(`warmup rejected with ${String(err)}`);
          },
        );
      },
    ],
  ];
  const weight = events.reduce((sum, [w]) => sum + w, 0);
  const durationMs = (options.durationMs ?? 3_000) * scale;
  const total = options.events ?? 150;
  const closeAt = chance(0.3) ? between(0, durationMs) : durationMs + 1;
  const startClose = () => {
    if (closing) return;
    poolClosed = true;
    closeStartedAt = base.now();
    for (const conn of made) conn.retiredAt = Math.min(conn.retiredAt, step);
    const graceMs = pickOf(rnd, [0, 20, 200, Infinity]) * scale;
    closing = pool.close({ graceMs });
    closing.then(
      () => (closeSettled = true),
      (err: unknown) => violate(`close() rejected with ${String(err)}`),
    );
    for (const resolve of closedWaiters.splice(0)) resolve();
  };
  for (let i = 0; i < total; i++) {
    const at = between(0, durationMs);
    let r = rnd() * weight;
    const event = events.find(([w]) => (r -= w) < 0)![1];
    later(at, () => {
      operations++;
      event();
    });
  }
  later(closeAt, startClose);

  // ---- the invariants at quiet points ------------------------------------------------------------
  const tick = real ? 25 : 10;

  const check = () => {
    step++;
    const now = base.now();
    const s = pool.stats();
    if (s.size > s.maxSize) violate(`size ${s.size} > maxSize ${s.maxSize}`);
    if (s.clients < 0 || s.waiting < 0 || s.opening < 0 || s.ready < 0)
      violate(`a negative count: ${JSON.stringify(s)}`);
    let holders = 0;
    for (const conn of made) {
      holders += conn.holders;
      conn.limitAtStep = conn.limit;
    }
    // A connection being reset still counts its caller's slot.
    const resetting = s.connections.filter((c) => c.resetting).length;
    if (s.clients !== holders + resetting)
      violate(`stats().clients ${s.clients}, the callers hold ${holders}, ${resetting} reset(s) run`);
    if (resetting > made.filter((c) => c.resetPending).length)
      violate(`${resetting} connection(s) resetting, more than the reset() calls pending`);
    for (const key of ['acquired', 'released', 'timeouts', 'aborted', 'failedFast'] as const) {
      if (s.counters[key] !== counts[key])
        violate(`counters.${key} is ${s.counters[key]}, the harness counted ${counts[key]}`);
    }
    if (s.counters.createFailures !== failuresSeen) {
      failuresSeen = s.counters.createFailures;
      lastFailureSeenAt = now;
    }
    // The pool gives up on a validation after validateTimeoutMs, whatever validate() does.
    const validating = s.connections.filter((c) => c.validating).length;
    const young = made.filter(
      (c) => c.validating && now - c.validateStart <= settings.validateTimeoutMs! + slack,
    ).length;
    if (validating > young)
      violate(
        `${validating} connection(s) validating, only ${young} validate() call(s) began within validateTimeoutMs`,
      );
    if (closeSettled && !closeChecked) {
      closeChecked = true;
      const open = made.filter((c) => c.closeCalls === 0);
      if (open.length > 0)
        violate(`close() resolved with connection(s) ${open.map((c) => c.id).join(', ')} not closed`);
      if (clock.live.size > closesInFlight) {
        violate(
          `close() resolved with ${clock.live.size} pool timer(s) left, ${closesInFlight} close() call(s) in flight`,
        );
        for (const h of clock.live) trace(`left: ${clock.origins.get(h)}`);
      }
    }
    // Counters an exact count cannot be kept of (a create timing out as it resolves): their bounds.
    const c = s.counters;
    if (c.opened + c.createFailures + c.createsAbandoned + s.opening !== c.createsStarted) {
      violate(
        `opened ${c.opened} + failed ${c.createFailures} + abandoned ${c.createsAbandoned} + opening ${s.opening} ≠ started ${c.createsStarted}`,
      );
    }
    if (c.retired > c.opened) violate(`retired ${c.retired} > opened ${c.opened}`);
    if (c.validationFailures > validateCalls)
      violate(`validationFailures ${c.validationFailures} > ${validateCalls} validate() calls`);
    if (c.resets !== resetPromises)
      violate(`counters.resets is ${c.resets}, reset() answered ${resetPromises} times with a promise`);
    // A reset that fails on a connection already retired (by its connector, by close()) retires nothing more.
    if (c.resetFailures > resetCalls || c.retiredBy.reset > c.resetFailures) {
      violate(
        `counters.resetFailures ${c.resetFailures}, retiredBy.reset ${c.retiredBy.reset}, ${resetCalls} reset() calls`,
      );
    }
    if (s.ready !== c.opened - c.retired)
      violate(`ready ${s.ready}, but opened ${c.opened} − retired ${c.retired} = ${c.opened - c.retired}`);
    if (s.counters.createsStarted !== creates)
      violate(`counters.createsStarted is ${s.counters.createsStarted}, the connector saw ${creates}`);
    const closes = made.reduce((n, c) => n + c.closeCalls, 0);
    if (s.counters.closed !== closes)
      violate(`counters.closed is ${s.counters.closed}, the connector saw ${closes} close() calls`);
    if (s.waiting > 0) {
      const free = s.connections.find((c) => c.state === 'ready' && !c.validating && c.clients < c.clientLimit);
      if (free)
        violate(`${s.waiting} waiting while connection ${free.id} has room (${free.clients}/${free.clientLimit})`);
      if (!s.closed && s.opening === 0 && s.size < s.maxSize) {
        if (s.failureStreak === 0) violate(`${s.waiting} waiting, room to grow, nothing opening`);
        else if (now - Math.max(lastFailureSeenAt, lastCreateAt) > settings.maxCreateBackoffMs! + 2 * tick) {
          violate(
            `${s.waiting} waiting, room to grow, no create for ${now - lastCreateAt} ms (backoff at most ${settings.maxCreateBackoffMs} ms)`,
          );
        }
      }
    }
    if (s.closed && s.waiting > 0) violate(`${s.waiting} waiting after close()`);
    for (const rec of pending) {
      if (now > rec.start + rec.timeoutMs + slack)
        violate(`an acquire still pending ${now - rec.start} ms after its ${rec.timeoutMs} ms deadline`);
    }
    const busy = pending.size > 0 || warmups > 0 || (closing !== undefined && !closeSettled);
    if (busy && clock.holds === 0)
      violate('an acquire, warmup or close is pending but nothing keeps the process alive');
    if (!busy && retrying === 0 && clock.holds > 0)
      violate(`the pool keeps the process alive while idle (${clock.holds} holds)`);
    if (clock.doubleLetGo) violate('a keep-alive hold was let go twice');
  };

  const problems: unknown[] = [];
  const onProblem = (err: unknown) => problems.push(err);
  process.on('unhandledRejection', onProblem);
  try {
    for (let t = 0; t <= durationMs + tick; t += tick) {
      await advance(tick);
      check();
    }
    startClose();
    // Let close finish: the grace, closeTimeoutMs, late arrivals and hung validations play out.
    for (let i = 0; i < 400 && !closeSettled; i++) {
      await advance(real ? 25 : 50);
      check();
    }
    if (!closeSettled) violate('close() did not settle');
    await advance(real ? 1_000 : 5_000); // late creates arrive and are closed
    check();
    for (const conn of made)
      if (conn.closeCalls !== 1) violate(`connection ${conn.id} was closed ${conn.closeCalls} times in all`);
    if (clock.live.size > 0) violate(`${clock.live.size} pool timer(s) left after close`);
    if (clock.holds > 0) violate(`${clock.holds} keep-alive hold(s) left after close`);
    if (pending.size > 0) violate(`${pending.size} acquire(s) never settled`);
    // validationFailures: every check that found its connection dead, by its answer or by the
    // pool's validateTimeoutMs before close() cut it short; a dead answer after the cut counts too.
    const timeoutMs = settings.validateTimeoutMs!;
    let sure = 0;
    let unsure = 0;
    for (const v of validations) {
      const timedOutAt = v.start + timeoutMs;
      if (v.dead)
        sure++; // by its answer, by the timeout, or late after the cut: counted once
      else if (v.settledAfter < timeoutMs - slack)
        continue; // alive in time
      else if (Math.abs(v.settledAfter - timeoutMs) <= slack || Math.abs(timedOutAt - closeStartedAt) <= slack)
        unsure++;
      else if (timedOutAt < closeStartedAt) sure++; // outran validateTimeoutMs before close() cut it
    }
    const counted = pool.stats().counters.validationFailures;
    if (counted < sure || counted > sure + unsure)
      violate(`counters.validationFailures is ${counted}, the checks found ${sure} dead (${unsure} on a boundary)`);
    if (limiter) {
      const l = limiter.stats();
      if (l.held !== 0 || l.waiting !== 0) violate(`the limiter still holds ${l.held} and has ${l.waiting} waiting`);
    }
  } catch (err) {
    violate(`the harness crashed: ${(err as Error).stack ?? String(err)}`);
  } finally {
    await flush();
    process.off('unhandledRejection', onProblem);
  }
  for (const p of problems) violate(`unhandled rejection: ${(p as Error)?.stack ?? String(p)}`);
  return { seed, violations, operations, connections: made.length };
}

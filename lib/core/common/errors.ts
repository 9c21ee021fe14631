import type { PoolStats, StandingFigures } from '../contracts/index.js';

/** Stable machine-readable codes of every {@link PoolError}. */
export type PoolErrorCode =
  | 'POOL_CONFIG'
  | 'CONNECTIONS_EXHAUSTED'
  | 'CONNECTION_FAILED'
  | 'POOL_CLOSED'
  | 'QUEUE_FULL'
  | 'CAPACITY_EXCEEDED'
  | 'KEY_LIMIT'
  | 'POOL_CONTEXT'
  | 'SELF_DEADLOCK'
  | 'SCOPE_TURN_TIMEOUT'
  | 'POOL_NOT_FOUND'
  | 'LEASE_LOST'
  | 'LEASE_HELD_TOO_LONG'
  | 'LEASE_ENDED';

/** Marks the errors of every copy of this package, so two copies loaded in one process know each other's. */
const kPoolError = Symbol.for('nestjs-shared-pool.PoolError');

/** The code of each error class, for `instanceof` across copies of the package. */
const codes = new WeakMap<object, PoolErrorCode>();

/**
 * Base class of every error the pool raises. `code` is stable; `pool` names the pool.
 *
 * `instanceof` works across two copies of the package in one process (a library bundling its
 * own, a monorepo with two versions), as undici's errors do: an error of the other copy is a
 * `PoolError` here, and a `KeyLimitError` here when its code is `KEY_LIMIT`. The Nest filter
 * (`@Catch(PoolError)`) therefore catches both.
 */
export class PoolError extends Error {
  constructor(
    readonly code: PoolErrorCode,
    readonly pool: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
    Object.defineProperty(this, kPoolError, { value: true });
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    if (Function.prototype[Symbol.hasInstance].call(this, value)) return true;
    if (typeof value !== 'object' || value === null || (value as { [kPoolError]?: boolean })[kPoolError] !== true)
      return false;
    if (this === PoolError) return true;
    const code = codes.get(this);
    return code !== undefined && (value as PoolError).code === code;
  }
}

/** @internal Lets `instanceof` recognise this class's errors from another copy of the package by their code. */
export function brandError(type: abstract new (...args: never[]) => PoolError, code: PoolErrorCode): void {
  codes.set(type, code);
}

/**
 * What a {@link PoolConfigError} is about: a pool (named by its name), a limiter (by its name),
 * the Nest module (`PoolModule.forRoot`, `PoolModule.forRootAsync`), a decorator (`@UsePooled`)
 * a pool group or a fleet budget (by its name).
 */
export type ConfigSubject = 'pool' | 'limiter' | 'module' | 'decorator' | 'group' | 'budget';

/**
 * An option is invalid. Thrown at construction, naming its subject and the field, with what to
 * change. `pool` is the subject's name (a pool's, a limiter's, or the module method's).
 */
export class PoolConfigError extends PoolError {
  constructor(
    name: string,
    readonly field: string,
    /** What is wrong with it, as the message says after the option's name. */
    readonly problem: string,
    readonly subject: ConfigSubject = 'pool',
    /** `cause`: what the option's own code threw, when that is the problem. */
    options?: { cause?: unknown },
  ) {
    const said = {
      pool: `pool "${name}": option "${field}" ${problem}`,
      limiter: `limiter "${name}": option "${field}" ${problem}`,
      group: `pool group "${name}": option "${field}" ${problem}`,
      budget: `budget "${name}": option "${field}" ${problem}`,
      module: `${name}: option "${field}" ${problem}`,
      decorator: `${name}: ${field} ${problem}`,
    }[subject];
    super('POOL_CONFIG', name, said, options);
  }
}

/** Why an acquire ran out of time. */
export type ExhaustedReason = 'all-busy' | 'creates-failing' | 'opening' | 'admission' | 'budget';

/**
 * The acquire deadline passed before a connection was free. `reason` says why; when creates
 * were failing, `cause` is the last {@link ConnectionFailedError}.
 */
export class ConnectionsExhaustedError extends PoolError {
  constructor(
    pool: string,
    readonly reason: ExhaustedReason,
    readonly timeoutMs: number,
    /** The pool when the deadline passed. */
    readonly stats: PoolStats,
    cause?: unknown,
  ) {
    const why = {
      'all-busy': 'every connection was busy; raise maxSize or clientLimit, or hold leases for less time',
      'creates-failing': 'opening a connection kept failing (see cause)',
      opening: 'connections were still opening; raise createTimeoutMs or acquireTimeoutMs, or set minSize to warm up',
      admission: 'the admission limiter did not answer in time (a slow or unreachable Redis?)',
      budget:
        'the budget it shares granted no place for another connection: every place is held by other pools or instances (a pool group, a FleetBudget), or a FleetBudget waits out its first lease TTL after Redis started, restarted or went unheard (see its stats().mode)',
    }[reason];
    super('CONNECTIONS_EXHAUSTED', pool, `pool "${pool}": no connection within ${timeoutMs} ms: ${why}`, { cause });
  }
}

/** The connector's `create` or `ready` failed, timed out, or gave no connection. */
export class ConnectionFailedError extends PoolError {
  constructor(
    pool: string,
    /** What failed, without the pool's name. */
    readonly detail: string,
    cause?: unknown,
  ) {
    super('CONNECTION_FAILED', pool, `pool "${pool}": ${detail}`, { cause });
  }
}

/** The pool is closing or closed; it takes no more acquires. */
export class PoolClosedError extends PoolError {
  constructor(pool: string) {
    super('POOL_CLOSED', pool, `pool "${pool}" is closed`);
  }
}

/** `maxWaiting` callers are already queued. */
/**
 * The pool's queue takes no more callers (HTTP 503). `reason`: `maxWaiting` (that many wait
 * already), or `standing` (controlled waiting: the pool is at its most connections and its queue
 * stands, so the callers ahead, served at the rate they are, would keep this one past the target
 * wait; it is refused at once rather than served late). `retryAfterMs`: when to try again.
 */
export class QueueFullError extends PoolError {
  readonly reason: 'maxWaiting' | 'standing';
  readonly retryAfterMs: number;

  constructor(
    pool: string,
    readonly maxWaiting: number,
    /** With `standing`: how many wait, served how fast, and the target wait. */
    readonly figures?: StandingFigures,
  ) {
    const why =
      figures === undefined
        ? `${maxWaiting} callers are already waiting (maxWaiting)`
        : `every connection is busy and its queue stands (for a whole interval even the shortest wait was over the target of ${Math.round(figures.targetMs)} ms): the ${figures.waiting === 1 ? 'caller' : `${figures.waiting} callers`} already waiting, served at ${Math.round(figures.servedPerSec)} a second, would keep this one past it`;
    super('QUEUE_FULL', pool, `pool "${pool}": ${why}; try again later`);
    this.reason = figures === undefined ? 'maxWaiting' : 'standing';
    // Once the queue ahead has drained, at the rate it is served; a second without figures.
    this.retryAfterMs =
      figures !== undefined && figures.servedPerSec > 0 ? (figures.waiting / figures.servedPerSec) * 1_000 : 1_000;
  }
}

/** Why a global admission was refused. */
export type CapacityReason = 'limit' | 'quarantine' | 'unavailable' | 'members' | 'paused' | 'backlog' | 'standing';

/**
 * The global admission limit is reached (HTTP 503). `reason`: `limit` (every slot is held),
 * `quarantine` (Redis restarted; live holders are re-registering), `unavailable` (Redis is
 * unreachable and the limiter fails closed), `members` (a pool group's member places), `paused`
 * (the upstream answered with a Retry-After: an adaptive limiter admits nothing until then), or
 * `backlog` (every slot is held, and the callers already waiting for one would outlast this call's
 * deadline: it is refused at once rather than at its deadline).
 */
export class CapacityExceededError extends PoolError {
  constructor(
    pool: string,
    readonly limit: number,
    readonly retryAfterMs: number,
    readonly reason: CapacityReason = 'limit',
    /** With `unavailable`: why the limiter's store cannot be reached (its error as `cause`). */
    cause?: unknown,
    /**
     * With `members`: how long the call waited for a member place, or how many calls wait already.
     * With `backlog`: how many calls wait already, served how fast, and the call's deadline.
     * With `standing`: how many calls wait, served how fast, and the target wait.
     */
    figures?: {
      readonly waitedMs?: number;
      readonly waiting?: number;
      readonly servedPerSec?: number;
      readonly deadlineMs?: number;
      readonly targetMs?: number;
    },
  ) {
    const detail = cause instanceof Error ? ` (${cause.message})` : '';
    const wait =
      figures?.waitedMs !== undefined
        ? ` for the whole ${Math.round(figures.waitedMs)} ms this call waited for a place`
        : figures?.waiting !== undefined
          ? `, and ${figures.waiting} calls already wait for a place (maxWaiting)`
          : ' now, so no new one can be made';
    const full = `the global limit of ${limit} concurrent leases is reached`;
    const why = {
      limit: `${full}; retry later`,
      quarantine: `admissions pause for ${Math.ceil(retryAfterMs)} ms more while holders re-register after a Redis restart`,
      unavailable: `Redis is unreachable${detail} and the limiter fails closed; retry later`,
      members: `the group has its ${limit} members (maxMembers), each with callers${wait}; retry later`,
      paused: `the upstream asked for a pause (Retry-After): admissions resume in ${Math.ceil(retryAfterMs)} ms`,
      backlog: `${full}, and the ${figures?.waiting === 1 ? 'call' : `${figures?.waiting} calls`} already waiting for a slot, served at ${Math.round(figures?.servedPerSec ?? 0)} a second, would outlast this call's ${Math.round(figures?.deadlineMs ?? 0)} ms deadline; retry later`,
      standing: `${full}, and its queue stands (for a whole interval even the shortest wait was over the target of ${Math.round(figures?.targetMs ?? 0)} ms): the ${figures?.waiting === 1 ? 'call' : `${figures?.waiting} calls`} already waiting, served at ${Math.round(figures?.servedPerSec ?? 0)} a second, would keep this call past it; retry later`,
    }[reason];
    super('CAPACITY_EXCEEDED', pool, `pool "${pool}": ${why}`, cause === undefined ? undefined : { cause });
  }
}

/** The per-key admission limit is reached for one key (HTTP 429). */
export class KeyLimitError extends PoolError {
  constructor(
    pool: string,
    readonly key: string,
    readonly limit: number,
    readonly retryAfterMs: number,
  ) {
    const leases = `${limit} concurrent lease${limit === 1 ? '' : 's'}`;
    super('KEY_LIMIT', pool, `pool "${pool}": key "${key}" already holds its limit of ${leases}; retry later`);
  }
}

/** `pool.current` was read outside a `use()` scope of that pool. */
export class PoolContextError extends PoolError {
  constructor(pool: string, what = 'pool.current') {
    super(
      'POOL_CONTEXT',
      pool,
      `pool "${pool}": no connection in this scope; read ${what} only inside pool.use() (or code it runs), ` +
        'not from a task that outlived it (such a task takes its own lease with pool.use())',
    );
  }
}

/**
 * A `use()` with `propagation: 'new'` inside a `use()` of the same pool would wait forever: every
 * lease of the pool is the caller's own, nothing is opening and the pool cannot grow.
 */
export class SelfDeadlockError extends PoolError {
  constructor(
    pool: string,
    /** Leases the caller's own enclosing scopes hold. */
    readonly heldByCaller: number,
    maxSize: number,
    clientLimit: number,
  ) {
    super(
      'SELF_DEADLOCK',
      pool,
      `pool "${pool}": a nested acquire would wait for the caller's own ${heldByCaller === 1 ? 'lease' : `${heldByCaller} leases`} ` +
        `(maxSize ${maxSize}, clientLimit ${clientLimit}, every slot held by the enclosing use()); ` +
        "use propagation 'reuse', or raise maxSize or clientLimit",
    );
  }
}

/**
 * A unit of work inside a scope (a nested `use()`, a checkout of the `pg.Pool` face) waited its
 * whole deadline for the scope's connection, which another unit of the same scope held.
 */
export class ScopeTurnTimeoutError extends PoolError {
  constructor(
    pool: string,
    /** What waited: "a nested pool.use()", "a connect() of the pg.Pool face". */
    readonly waiter: string,
    /** The scope it waited in: "@UsePooled('db') on Ledger.transfer", "a pool.use() callback". */
    readonly scope: string,
    readonly waitedMs: number,
  ) {
    super(
      'SCOPE_TURN_TIMEOUT',
      pool,
      `pool "${pool}": ${waiter} inside ${scope} waited ${Math.round(waitedMs)} ms for its turn on the scope's ` +
        'connection, which another unit of work of the same scope held all along (a scope lends its connection ' +
        'to one unit at a time). If that unit awaits this call, it can never end: make the call through the ' +
        "holder's own client or transaction, give concurrent branches their own connections " +
        "(pool.use(fn, { propagation: 'new' })), or run them one after another",
    );
  }
}

/** The admission limiter lost a held lease (its TTL lapsed, or Redis forgot it): stop the work. */
export class LeaseLostError extends PoolError {
  constructor(
    pool: string,
    readonly leaseId: string,
    why: string,
  ) {
    super(
      'LEASE_LOST',
      pool,
      `pool "${pool}": admission lease ${leaseId} was lost (${why}); stop its work, the slot may be given to another caller`,
    );
  }
}

/** Why a lease's signal aborted: it was held past the pool's `maxHoldMs`. */
export class LeaseHeldTooLongError extends PoolError {
  constructor(
    pool: string,
    readonly heldMs: number,
    readonly maxHoldMs: number,
  ) {
    super(
      'LEASE_HELD_TOO_LONG',
      pool,
      `pool "${pool}": a lease held ${Math.round(heldMs)} ms passed maxHoldMs (${maxHoldMs} ms); stop its work and release it (its admission slot is no longer kept alive)`,
    );
  }
}

/**
 * A method of a connection was called through the handle of a lease that has ended (released, or
 * its `use()` / `@UsePooled` scope returned): the connection may be another caller's by now.
 */
export class LeaseEndedError extends PoolError {
  constructor(
    pool: string,
    /** What was tried: `query()`, or a property write (`a write of timeout`). */
    readonly operation: string,
  ) {
    super(
      'LEASE_ENDED',
      pool,
      `pool "${pool}": ${operation} on a connection whose lease has ended (released, or its use() or @UsePooled call returned) did nothing: the connection may be another caller's now; do the work inside the call, or take a lease of its own with pool.use()`,
    );
  }
}

brandError(PoolConfigError, 'POOL_CONFIG');
brandError(ConnectionsExhaustedError, 'CONNECTIONS_EXHAUSTED');
brandError(ConnectionFailedError, 'CONNECTION_FAILED');
brandError(PoolClosedError, 'POOL_CLOSED');
brandError(QueueFullError, 'QUEUE_FULL');
brandError(CapacityExceededError, 'CAPACITY_EXCEEDED');
brandError(KeyLimitError, 'KEY_LIMIT');
brandError(PoolContextError, 'POOL_CONTEXT');
brandError(SelfDeadlockError, 'SELF_DEADLOCK');
brandError(ScopeTurnTimeoutError, 'SCOPE_TURN_TIMEOUT');
brandError(LeaseLostError, 'LEASE_LOST');
brandError(LeaseHeldTooLongError, 'LEASE_HELD_TOO_LONG');
brandError(LeaseEndedError, 'LEASE_ENDED');

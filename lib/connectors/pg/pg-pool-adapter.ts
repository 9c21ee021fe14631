import type { EventEmitter } from 'node:events';
import pg from 'pg';
import {
  ConnectionFailedError,
  ConnectionsExhaustedError,
  type ConnectionPool,
  findScope,
  kEnterUnit,
  kLeaseNow,
  kRaw,
  type Lease,
  PoolError,
  type ScopeUnit,
} from '../../core/index.js';
import { PgCheckout, settledStatus, withTypes } from './pg-checkout.js';
import { connectionSettings } from './pg-connector.js';
import { sessionOf } from './pg-session.js';
import { type FaceHooks, faceOptions, type PgPoolAdapterOptions } from './pg-pool-options.js';

export type { PgPoolAdapterOptions } from './pg-pool-options.js';

/** The part of pg.Pool the adapter builds on: an EventEmitter with pg-pool's plain fields. */
type PoolBase = new (
  config?: pg.PoolConfig,
) => EventEmitter & { options: pg.PoolOptions; ending: boolean; ended: boolean; log: (...m: unknown[]) => void };

type Callback = (err: Error | undefined, ...rest: unknown[]) => void;
type ConnectCallback = (
  err: Error | undefined,
  client: pg.PoolClient | undefined,
  done: (release?: Error | boolean) => void,
) => void;

const ENDED = 'Cannot use a pool after calling end on the pool';

const noop = () => {};

/**
 * A `pg.Pool` over a ConnectionPool of pg clients, behaving as pg.Pool documents (see the
 * differences listed in docs/orms.md). It extends pg's own Pool class, so drivers that check for
 * one (Drizzle's transactions) see a pool; its inherited pool of clients is never used.
 *
 * Outside a scope of the pool, each checkout is a lease of its own. Inside a `use()` or
 * `@UsePooled` scope, a checkout is one unit of work on the scope's connection: one at a time,
 * its transactions savepoints within the scope's (see {@link PgCheckout}).
 */
class PgPoolAdapter extends (pg.Pool as unknown as PoolBase) {
  readonly #pool: ConnectionPool<pg.Client>;
  readonly #closeOnEnd: boolean;
  readonly #hooks: FaceHooks;
  /** Checkouts and queries issued and not yet over: end() waits for them, as pg.Pool's does. */
  #outstanding = 0;
  #idle: (() => void) | undefined = undefined;
  /** The clients it has lent (its 'connect' event is for the first time). */
  readonly #seen = new WeakSet<pg.Client>();
  /** Of each client onConnect and verify ran on: its session resets when they did. */
  readonly #welcomed = new WeakMap<pg.Client, number>();
  /** The clients checked out through it now (an 'error' of any other is an idle client's). */
  readonly #lent = new Set<pg.Client>();

  constructor(pool: ConnectionPool<pg.Client>, closeOnEnd: boolean, hooks: FaceHooks) {
    const o = pool.options;
    super({
      ...connectionSettings(pool),
      max: o.maxSize,
      min: o.minSize,
      idleTimeoutMillis: o.maxIdleMs,
      connectionTimeoutMillis: o.acquireTimeoutMs,
      maxLifetimeSeconds: o.maxLifetimeMs === Infinity ? 0 : o.maxLifetimeMs / 1_000,
      ...(hooks.types === undefined ? {} : { types: hooks.types }),
    });
    this.#pool = pool;
    this.#closeOnEnd = closeOnEnd;
    this.#hooks = hooks;
    if (hooks.log !== undefined) this.log = hooks.log;
  }

  get totalCount(): number {
    return this.#pool.stats().size;
  }

  get idleCount(): number {
    return this.#pool.stats().idle;
  }

  get waitingCount(): number {
    return this.#pool.stats().waiting;
  }

  get expiredCount(): number {
    return this.#pool.stats().draining;
  }

  /**
   * pg-pool's own `connect()` (inherited, so instrumentation that wraps it, such as
   * @opentelemetry/instrumentation-pg's `pg-pool.connect` span and pool metrics, sees the face's
   * checkouts) asks here for each client: the face never keeps clients of pg-pool's, so it always
   * asks. Outside a scope of the pool: a lease of its own; `release()` gives it back (reset on
   * return), `release(err)` retires it, as in pg. Inside: the scope's connection, for one unit of
   * work at a time.
   */
  newClient(pending: { callback: ConnectCallback }): void {
    // Outside the promise chain, as pg calls it: a throw in the callback is the caller's, uncaught.
    const client = this.#checkoutNow();
    if (client !== undefined) return void process.nextTick(pending.callback, undefined, client, client.release);
    this.#checkout().then(
      (client) => process.nextTick(pending.callback, undefined, client, client.release),
      (err: Error) => process.nextTick(pending.callback, err, undefined, noop),
    );
  }

  /**
   * The common checkout without a promise: outside any scope of the pool, a connection ready
   * now, and nothing to run on it first (onConnect, verify); else undefined, and nothing taken.
   */
  #checkoutNow(): pg.PoolClient | undefined {
    const pool = this.#pool;
    if (findScope(pool) !== undefined) return undefined;
    const { onConnect, verify } = this.#hooks;
    if (onConnect !== undefined || verify !== undefined) return undefined;
    const lease = pool[kLeaseNow]();
    return lease === undefined ? undefined : this.#lendLease(lease);
  }

  /** pg-pool asks whether to queue a connect() behind its own clients: it has none, so never. */
  _isFull(): boolean {
    return false;
  }

  async #checkout(): Promise<pg.PoolClient> {
    this.#began();
    try {
      const pool = this.#pool;
      let unit = pool[kEnterUnit]('a connect() of the pg.Pool face');
      if (unit instanceof Promise) unit = await unit;
      if (unit !== undefined) return await this.#unitOf(unit);
      const lease = await pool.acquire().catch((err: unknown) => Promise.reject(driverError(err)));
      await this.#welcome(lease[kRaw]).catch((err: unknown) => {
        lease.fail(err);
        throw err;
      });
      return this.#lendLease(lease);
    } finally {
      this.#over();
    }
  }

  /** A checkout of a lease of its own (outside a scope). */
  #lendLease(lease: Lease<pg.Client>): pg.PoolClient {
    this.log('client checked out');
    return this.#lend(
      lease[kRaw],
      false,
      false,
      'a checkout',
      () => lease.live,
      (failure) => endLease(lease, failure),
    );
  }

  /** The checkout of a unit of work in the caller's scope, once the server has answered what was sent before it. */
  async #unitOf(unit: ScopeUnit): Promise<pg.PoolClient> {
    const client = unit.connection as pg.Client;
    let status: string;
    try {
      await this.#welcome(client);
      status = await settledStatus(client);
    } catch (err) {
      unit.retire(err);
      unit.end();
      throw err;
    }
    return this.#lend(
      client,
      true,
      status !== 'I',
      unit.scope,
      () => unit.lease.live,
      (failure) => {
        if (failure !== undefined) unit.retire(failure);
        unit.end();
      },
    );
  }

  #lend(
    client: pg.Client,
    inScope: boolean,
    nests: boolean,
    scope: string,
    live: () => boolean,
    end: (failure: Error | undefined) => void,
  ): pg.PoolClient {
    // Counted from here until its holder gives it back (the wait for it was counted by its caller).
    this.#began();
    const checkout: PgCheckout = new PgCheckout(client, {
      inScope,
      nests,
      scope,
      live,
      types: this.#hooks.types,
      pool: this.#pool.name,
      end: (failure) => {
        this.log(failure === undefined ? 'client released' : 'client released with an error', failure);
        this.#lent.delete(client);
        this.emit('release', failure, checkout.handle);
        end(failure);
        this.#over();
      },
    });
    if (!this.#seen.has(client)) this.#first(client, checkout.handle);
    this.#lent.add(client);
    this.emit('acquire', checkout.handle);
    return checkout.handle;
  }

  /** A client the face has not lent before (or whose session was reset since) goes through `onConnect` and `verify`, as pg.Pool's new clients do. */
  async #welcome(client: pg.Client): Promise<void> {
    const { onConnect, verify } = this.#hooks;
    if (onConnect === undefined && verify === undefined) return;
    // Run again after a session reset, which undid what they set up (pg.Pool never resets).
    const session = sessionOf(client);
    if (this.#seen.has(client) && this.#welcomed.get(client) === (session?.resets ?? 0)) return;
    if (onConnect !== undefined) await onConnect(client);
    if (verify !== undefined) {
      await new Promise<void>((resolve, reject) => verify(client, (err) => (err ? reject(err) : resolve())));
    }
    // What they set up is the session as it begins: not a change for the reset to undo.
    if (session !== undefined) session.changed = false;
    this.#welcomed.set(client, session?.resets ?? 0);
  }

  /** A client lent for the first time: pg.Pool's 'connect', and its 'error' and 'remove' later on. */
  #first(client: pg.Client, handle: pg.PoolClient): void {
    this.#seen.add(client);
    client.on('error', (err: Error) => {
      // An idle client's error, as pg.Pool emits it; unlike pg.Pool, never one that nobody listens to.
      if (!this.#lent.has(client) && this.listenerCount('error') > 0) this.emit('error', err, client);
    });
    client.once('end', () => this.emit('remove', client));
    this.emit('connect', handle);
  }

  #began(): void {
    this.#outstanding++;
  }

  #over(): void {
    if (--this.#outstanding === 0) this.#idle?.();
  }

  /** One statement: on the scope's connection (one unit of work) inside a scope, else on a connection of its own. */
  query(...args: unknown[]): unknown {
    const last = args[args.length - 1];
    const callback = typeof last === 'function' ? (args.pop() as Callback) : undefined;
    if (typeof args[0] === 'function' || args.length === 0) {
      const err = new Error('Passing a function as the first parameter to pool.query is not supported');
      return answer(callback, Promise.reject(err), setImmediate);
    }
    if (this.ending) return answer(callback, Promise.reject(new Error(ENDED)), process.nextTick);
    return answer(callback, this.#statement(args), process.nextTick);
  }

  async #statement(given: unknown[]): Promise<unknown> {
    const pool = this.#pool;
    this.#began();
    try {
      let unit = pool[kEnterUnit]('a query() of the pg.Pool face');
      if (unit instanceof Promise) unit = await unit;
      if (unit === undefined) {
        const args = withTypes(given, this.#hooks.types);
        const run = (client: pg.Client) => (client.query as (...a: unknown[]) => Promise<unknown>)(...args);
        return await pool.use(run, { propagation: 'none' }).catch((err: unknown) => Promise.reject(driverError(err)));
      }
      const client = await this.#unitOf(unit);
      try {
        return await (client.query as (...a: unknown[]) => Promise<unknown>)(...given);
      } finally {
        client.release();
      }
    } finally {
      this.#over();
    }
  }

  /**
   * Ends the face once what was issued before it is over (as pg.Pool's end() does: checkouts
   * given back, queries answered), then closes the pool unless asked not to. A second call is
   * refused, as pg.Pool refuses it.
   */
  end(callback?: (err?: Error) => void): Promise<void> | void {
    if (this.ending) {
      const err = new Error('Called end on pool more than once');
      if (callback === undefined) return Promise.reject(err);
      return callback(err);
    }
    this.log('ending');
    this.ending = true;
    const over = this.#outstanding === 0 ? Promise.resolve() : new Promise<void>((resolve) => (this.#idle = resolve));
    const ended = over
      .then(() => (this.#closeOnEnd ? this.#pool.close() : undefined))
      .then(() => {
        this.ended = true;
      });
    if (callback === undefined) return ended;
    ended.then(
      () => process.nextTick(callback),
      (err: Error) => process.nextTick(callback, err),
    );
  }
}

/** Gives a lease back as pg's release(err?) asks: retired with an error, else returned clean. */
function endLease(lease: Lease<pg.Client>, failure: Error | undefined): void {
  if (failure === undefined) lease.release();
  else lease.fail(failure);
}

/**
 * What pg.Pool would have given where the pool refused: pg's own timeout error for a deadline
 * that passed (the pool's, with its reason, as its cause), the driver's own error for a
 * connection that could not be made. Admission refusals (limits, a closed pool) stay the pool's.
 */
function driverError(err: unknown): unknown {
  if (err instanceof ConnectionsExhaustedError) {
    return new Error('timeout exceeded when trying to connect', { cause: err });
  }
  if (!(err instanceof ConnectionFailedError)) return err;
  // Not `instanceof Error`: a socket's error may come from another realm (a test sandbox's).
  for (let cause: unknown = err.cause; typeof cause === 'object' && cause !== null; cause = (cause as Error).cause) {
    if (!(cause instanceof PoolError)) return cause;
  }
  return err;
}

/** A promise, or its outcome given to `callback` on a later turn (outside the promise chain, as pg does). */
function answer(
  callback: Callback | undefined,
  result: Promise<unknown>,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- setImmediate and process.nextTick, as they are typed
  later: (fn: (...a: any[]) => void, ...a: unknown[]) => unknown,
): unknown {
  if (callback === undefined) return result;
  result.then(
    (value) => later(callback, undefined, value),
    (err: Error) => later(callback, err),
  );
  return undefined;
}

/**
 * A `pg.Pool` face of a pool of `pg` clients (made with {@link pgConnector}), for the query
 * builders and ORMs that take a `pg.Pool`: Kysely's `PostgresDialect({ pool })`, Drizzle's
 * `drizzle({ client })`, Prisma's `PrismaPg`, TypeORM's `driver`. They keep their API and gain
 * the pool's deadlines, limits, health, metrics and reset on return. Inside a `use()` or
 * `@UsePooled` scope of `pool`, their calls run on the scope's connection, one unit of work at a
 * time, and a transaction they begin inside the scope's is a savepoint of it (docs/orms.md).
 */
export function asPgPool(pool: ConnectionPool<pg.Client>, options: PgPoolAdapterOptions = {}): pg.Pool {
  const { closeOnEnd, hooks } = faceOptions(pool, options);
  return new PgPoolAdapter(pool, closeOnEnd, hooks) as unknown as pg.Pool;
}

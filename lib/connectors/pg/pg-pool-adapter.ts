import type { EventEmitter } from 'node:events';
import pg from 'pg';
import { type ConnectionPool, findScope, is, keysOf, OptionReader, shown } from '../../core/index.js';

/** Options of {@link asPgPool}. */
export interface PgPoolAdapterOptions {
  /** Whether `end()` closes the pool as well (as `pg.Pool.end()` does). Default `true`. */
  closeOnEnd?: boolean;
}

/** The part of pg.Pool the adapter builds on: an EventEmitter with pg-pool's plain fields. */
type PoolBase = new (
  config?: pg.PoolConfig,
) => EventEmitter & { options: pg.PoolOptions; ending: boolean; ended: boolean };

type Callback = (err: Error | undefined, ...rest: unknown[]) => void;

/** What a query may be given: pg's arguments, a callback last. */
type QueryArgs = Parameters<pg.Client['query']>;

/**
 * A `pg.Pool` over a ConnectionPool of pg clients. It extends pg's own Pool class, so drivers that
 * check for one (Drizzle's transactions) see a pool; only what drivers use is served, from the
 * ConnectionPool: connect() with release(), query(), end() and the counts. Its inherited pool of
 * clients is never used.
 */
class PgPoolAdapter extends (pg.Pool as unknown as PoolBase) {
  readonly #pool: ConnectionPool<pg.Client>;
  readonly #closeOnEnd: boolean;

  constructor(pool: ConnectionPool<pg.Client>, closeOnEnd: boolean) {
    super({ max: pool.options.maxSize, min: pool.options.minSize });
    this.#pool = pool;
    this.#closeOnEnd = closeOnEnd;
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
   * A client for a unit of work (a transaction). Inside a `use()` or `@UsePooled` scope of the
   * pool: the scope's own connection, and `release()` leaves it to the scope. Outside: a lease of
   * its own; `release()` gives it back (reset on return), `release(err)` retires it, as in pg.
   */
  connect(
    callback?: (
      err: Error | undefined,
      client: pg.PoolClient | undefined,
      done: (release?: Error | boolean) => void,
    ) => void,
  ): Promise<pg.PoolClient> | void {
    const checkout = this.#checkout();
    if (callback === undefined) return checkout;
    checkout.then(
      (client) => callback(undefined, client, client.release),
      (err: Error) => callback(err, undefined, () => {}),
    );
  }

  async #checkout(): Promise<pg.PoolClient> {
    const scope = findScope(this.#pool);
    if (scope !== undefined) return lend(scope.lease.connection as pg.Client, () => {});
    if (this.ending) throw new Error('Cannot use a pool after calling end on the pool');
    const lease = await this.#pool.acquire();
    return lend(lease.connection, (err) =>
      err === undefined || err === false
        ? lease.release()
        : lease.fail(err === true ? new Error('released with release(true)') : err),
    );
  }

  /** One statement: on the scope's connection inside a scope, else on a connection of its own. */
  query(...args: QueryArgs): unknown {
    const last = args[args.length - 1];
    const callback = typeof last === 'function' ? (args.pop() as Callback) : undefined;
    const scope = findScope(this.#pool);
    const run = (client: pg.Client) => (client.query as (...a: unknown[]) => Promise<unknown>)(...args);
    const result =
      scope !== undefined ? run(scope.lease.connection as pg.Client) : this.#pool.use(run, { propagation: 'none' });
    if (callback === undefined) return result;
    result.then(
      (value) => callback(undefined, value),
      (err: Error) => callback(err),
    );
    return undefined;
  }

  /** Ends the adapter, and closes the pool unless asked not to. */
  end(callback?: () => void): Promise<void> | void {
    this.ending = true;
    const ended = (this.#closeOnEnd ? this.#pool.close() : Promise.resolve()).then(() => {
      this.ended = true;
    });
    if (callback === undefined) return ended;
    void ended.then(callback, callback);
  }
}

/** The client of one checkout, with pg's `release(err?)` for it (a stale release of an earlier checkout does nothing). */
function lend(client: pg.Client, release: (err?: unknown) => void): pg.PoolClient {
  const lent = client as pg.PoolClient;
  let done = false;
  lent.release = (err?: Error | boolean) => {
    if (done) return;
    done = true;
    release(err);
  };
  return lent;
}

/**
 * A `pg.Pool` face of a pool of `pg` clients (made with {@link pgConnector}), for the query builders
 * and ORMs that take a `pg.Pool`: Kysely's `PostgresDialect({ pool })`, Drizzle's
 * `drizzle({ client })`. They keep their API and gain the pool's deadlines, limits, health, metrics
 * and reset on return. Inside a `use()` or `@UsePooled` scope of `pool` every call runs on the
 * scope's connection (one transaction across the service's calls); outside, each on its own.
 */
export function asPgPool(pool: ConnectionPool<pg.Client>, options: PgPoolAdapterOptions = {}): pg.Pool {
  const read = new OptionReader({ subject: 'module', name: 'asPgPool()' }, options).only(
    keysOf<PgPoolAdapterOptions>({ closeOnEnd: true }),
    "asPgPool()'s options",
  );
  if (typeof (pool as Partial<ConnectionPool<pg.Client>>)?.acquire !== 'function' || typeof pool.use !== 'function') {
    read.fail(
      'pool',
      `(the first argument) must be a ConnectionPool of pg clients (new ConnectionPool(pgConnector(url)) or @InjectPool('db')), got ${shown(pool)}`,
    );
  }
  return new PgPoolAdapter(pool, read.get('closeOnEnd', is.boolean, true)) as unknown as pg.Pool;
}
